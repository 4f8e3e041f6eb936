package testutil

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Unbound is a running unbound recursive resolver with its EDNS Client Subnet cache
// (subnetcache module), forwarding one zone to an authoritative server on loopback.
type Unbound struct {
	// Addr is the resolver's listener, host:port on loopback.
	Addr    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
}

// StartUnbound runs Debian's unbound for the test on a free 127.0.0.1 port. It resolves zone
// by asking the authoritative server at auth (host:port on loopback) and nothing else, sends
// it the client subnet (the ECS option of the client's query, truncated to /24 or /56), and
// caches answers by the scope the server returns. The resolver is stopped when the test ends.
// The test is skipped when unbound is not installed (Debian package unbound; make deps
// installs it).
func StartUnbound(t testing.TB, zone, auth string) *Unbound {
	t.Helper()
	return StartUnboundWith(t, zone, auth, UnboundOptions{})
}

// UnboundOptions make an unbound misbehave, as resolvers Meridian does not control do.
type UnboundOptions struct {
	// CacheMinTTL is cache-min-ttl: a TTL floor, in seconds (0: none).
	CacheMinTTL int
	// NoECS turns EDNS Client Subnet off: no subnetcache module, no subnet sent to the
	// authoritative server, none in the replies.
	NoECS bool
}

// StartUnboundWith is StartUnbound with o.
func StartUnboundWith(t testing.TB, zone, auth string, o UnboundOptions) *Unbound {
	t.Helper()
	authHost, authPort, err := net.SplitHostPort(auth)
	if err != nil {
		t.Fatalf("unbound: authoritative address %q: %v", auth, err)
	}
	return startUnbound(t, func(dir string, port int, logPath string) string {
		return unboundConfig(dir, port, zone, authHost, authPort, logPath, o)
	})
}

// StartValidator runs Debian's unbound as a validating resolver for the test on a free
// 127.0.0.1 port: it resolves from h's root (root hints) and validates from the root's key
// (trust anchor), with the EDNS Client Subnet cache as StartUnbound's, sending the client
// subnet to the addresses ecs (none: to no server). Its log says why an answer is bogus
// (val-log-level 2).
func StartValidator(t testing.TB, h *Hierarchy, ecs ...string) *Unbound {
	t.Helper()
	return startUnbound(t, func(dir string, port int, logPath string) string {
		hints := filepath.Join(dir, "root.hints")
		if err := os.WriteFile(hints, []byte(h.RootHints()), 0o644); err != nil {
			t.Fatal(err)
		}
		return validatorConfig(dir, port, logPath, hints, h.Anchor, h.TLD, ecs)
	})
}

// startUnbound runs unbound with the configuration config returns for its directory, port
// and log file, retrying on another port when it does not come up.
func startUnbound(t testing.TB, config func(dir string, port int, logPath string) string) *Unbound {
	t.Helper()
	bin, err := exec.LookPath("unbound")
	if err != nil {
		if _, statErr := os.Stat("/usr/sbin/unbound"); statErr != nil {
			t.Skip("unbound is not installed (Debian package unbound)")
		}
		bin = "/usr/sbin/unbound"
	}
	dir := t.TempDir()
	var lastLog string
	for attempt := 0; attempt < 3; attempt++ {
		port := FreePort(t)
		u := &Unbound{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), logPath: filepath.Join(dir, "unbound.log"), done: make(chan struct{})}
		conf := filepath.Join(dir, "unbound.conf")
		if err := os.WriteFile(conf, []byte(config(dir, port, u.logPath)), 0o644); err != nil {
			t.Fatal(err)
		}
		u.cmd = exec.Command(bin, "-d", "-c", conf)
		u.cmd.Dir = dir
		out := &syncBuffer{}
		u.cmd.Stdout, u.cmd.Stderr = out, out
		if err := u.cmd.Start(); err != nil {
			t.Fatalf("start unbound: %v", err)
		}
		go func() { _ = u.cmd.Wait(); close(u.done) }()
		if u.waitReady(10 * time.Second) {
			t.Cleanup(u.Stop)
			return u
		}
		u.Stop()
		lastLog = out.String() + u.Log()
	}
	t.Fatalf("unbound did not start:\n%s", lastLog)
	return nil
}

func unboundConfig(dir string, port int, zone, authHost, authPort, logPath string, o UnboundOptions) string {
	ecs := fmt.Sprintf(`module-config: "subnetcache iterator"
	send-client-subnet: %s
	max-client-subnet-ipv4: 24
	max-client-subnet-ipv6: 56`, authHost)
	if o.NoECS {
		ecs = `module-config: "iterator"`
	}
	return unboundServer(dir, port, logPath) + fmt.Sprintf(`	outgoing-interface: 127.0.0.1
	qname-minimisation: no
	%s
	cache-min-ttl: %d
stub-zone:
	name: %q
	stub-addr: %s@%s
`, ecs, o.CacheMinTTL, zone, authHost, authPort)
}

// validatorConfig is the configuration of a validating unbound in dir on port, resolving from
// the root hints file hints with the trust anchor anchor, sending ECS to the addresses ecs. The
// TLD tld is resolved, even one of unbound's default local zones (test.).
func validatorConfig(dir string, port int, logPath, hints, anchor, tld string, ecs []string) string {
	var send strings.Builder
	for _, a := range ecs {
		fmt.Fprintf(&send, "\tsend-client-subnet: %s\n", a)
	}
	return unboundServer(dir, port, logPath) + fmt.Sprintf(`	val-log-level: 2
	module-config: "subnetcache validator iterator"
%s	max-client-subnet-ipv4: 24
	max-client-subnet-ipv6: 56
	cache-min-ttl: 0
	root-hints: %q
	trust-anchor: %q
	local-zone: %q nodefault
`, send.String(), hints, anchor, tld)
}

// unboundServer is the start of the server clause of every unbound the tests run: in the
// foreground, as this user, in dir, on 127.0.0.1:port, logging to logPath.
func unboundServer(dir string, port int, logPath string) string {
	return fmt.Sprintf(`server:
	interface: 127.0.0.1
	port: %d
	do-ip6: no
	do-daemonize: no
	username: ""
	chroot: ""
	directory: %q
	pidfile: ""
	use-syslog: no
	logfile: %q
	verbosity: 1
	num-threads: 1
	so-reuseport: no
	access-control: 127.0.0.0/8 allow
	do-not-query-localhost: no
`, port, dir, logPath)
}

// waitReady polls the resolver until it answers a query (any rcode), it exits, or timeout
// passes.
func (u *Unbound) waitReady(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	c := &dns.Client{Net: "udp", Timeout: 200 * time.Millisecond}
	m := new(dns.Msg)
	m.SetQuestion("version.server.", dns.TypeTXT)
	m.Question[0].Qclass = dns.ClassCHAOS
	for time.Now().Before(deadline) {
		select {
		case <-u.done:
			return false
		default:
		}
		if _, _, err := c.Exchange(m, u.Addr); err == nil {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// Stop ends the resolver and waits for it.
func (u *Unbound) Stop() { terminate(u.cmd.Process, u.done) }

// Log returns what unbound wrote to its log file so far.
func (u *Unbound) Log() string {
	b, _ := os.ReadFile(u.logPath)
	return string(b)
}

// QueryECS asks the resolver name/qtype with an EDNS Client Subnet option for subnet (as a
// stub resolver behind a forwarder would) and returns the reply.
func (u *Unbound) QueryECS(t testing.TB, name string, qtype uint16, subnet string) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.SetEdns0(1232, false)
	if err := AddECS(m, subnet); err != nil {
		t.Fatal(err)
	}
	c := &dns.Client{Net: "udp", Timeout: 3 * time.Second}
	r, _, err := c.Exchange(m, u.Addr)
	if err != nil {
		t.Fatalf("unbound query %s with ECS %s: %v\nunbound log:\n%s", name, subnet, err, u.Log())
	}
	return r
}

// AddECS adds an EDNS Client Subnet option for subnet ("198.51.100.0/24") to m, which must
// carry an OPT record already.
func AddECS(m *dns.Msg, subnet string) error {
	_, ipnet, err := net.ParseCIDR(subnet)
	if err != nil {
		return fmt.Errorf("ECS subnet: %w", err)
	}
	ones, _ := ipnet.Mask.Size()
	ecs := &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, SourceNetmask: uint8(ones), Address: ipnet.IP}
	if ip4 := ipnet.IP.To4(); ip4 != nil {
		ecs.Family, ecs.Address = 1, ip4
	} else {
		ecs.Family = 2
	}
	opt := m.IsEdns0()
	if opt == nil {
		return fmt.Errorf("ECS: the message has no OPT record")
	}
	opt.Option = append(opt.Option, ecs)
	return nil
}
