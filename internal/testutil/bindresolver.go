package testutil

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// BINDResolver is a running BIND 9 (named) recursive resolver of a test. BIND 9.18 sends no
// EDNS Client Subnet to the servers it asks and returns none: a resolver that does not honour
// ECS.
type BINDResolver struct {
	// Addr is the resolver's listener, host:port on loopback.
	Addr string
	p    *process
}

// StartBINDResolver runs Debian's named as a recursive resolver for the test on a free
// 127.0.0.1 port. It resolves zone by forwarding to the server at auth (host:port on loopback)
// and nothing else, and keeps every answer at least minTTL seconds (min-cache-ttl, at most 90;
// 0 for none). It is stopped when the test ends; the test is skipped when named is not
// installed (Debian package bind9; make deps installs it).
func StartBINDResolver(t testing.TB, zone, auth string, minTTL int) *BINDResolver {
	t.Helper()
	bin := Sbin(t, "named", "bind9")
	authHost, authPort, err := net.SplitHostPort(auth)
	if err != nil {
		t.Fatalf("named: authoritative address %q: %v", auth, err)
	}
	dir := t.TempDir()
	port := FreePort(t)
	conf := filepath.Join(dir, "named.conf")
	if err := os.WriteFile(conf, []byte(bindOptions(dir, port, fmt.Sprintf(`query-source address 127.0.0.1;
	recursion yes;
	allow-recursion { 127.0.0.0/8; };
	allow-query { 127.0.0.0/8; };
	min-cache-ttl %d;`, minTTL))+fmt.Sprintf(`zone %q {
	type forward;
	forward only;
	forwarders { %s port %s; };
};
`, dns.Fqdn(zone), authHost, authPort)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &BINDResolver{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	// -g: foreground, logging to stderr; -4: IPv4 only; -n 1: one worker thread.
	r.p = startProcess(t, exec.Command(bin, "-g", "-4", "-n", "1", "-c", conf))
	c := &dns.Client{Net: "udp", Timeout: 200 * time.Millisecond}
	m := new(dns.Msg)
	m.SetQuestion("version.bind.", dns.TypeTXT)
	m.Question[0].Qclass = dns.ClassCHAOS
	r.p.waitFor(t, "named", 15*time.Second, func() bool { _, _, err := c.Exchange(m, r.Addr); return err == nil })
	return r
}

// Logs returns what named wrote so far.
func (r *BINDResolver) Logs() string { return r.p.logs.String() }
