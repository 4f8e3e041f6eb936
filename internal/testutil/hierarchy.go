package testutil

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Hierarchy is a signed DNS tree on port 53 of a loopback address: the root and one TLD,
// served by Debian's Knot DNS and signed by it (automatic DNSSEC signing, its default policy:
// a KSK and a ZSK, ECDSA P-256), the root holding the TLD's DS, the TLD delegating child zones
// to the name servers a test names, with their DS. (BIND binds only the addresses of the
// interfaces, which the other loopback addresses are not; Knot binds the one it is given.) A validating resolver that trusts the root's key (Anchor) validates the child zones'
// answers through it as it would on the Internet. The TLD takes RFC 2136 updates signed with
// Key (a delegation keeper's NS, glue and DS). It is stopped when the test ends.
type Hierarchy struct {
	// Addr is Knot's address, host:53; Anchor the root's KSK as a DNSKEY record, for a
	// resolver's trust anchor; Key the TSIG key the zones take updates signed with.
	Addr   string
	Anchor string
	Key    TSIGKey
	TLD    string
	srv    *UpdateServer
}

// ChildZone is a zone the TLD of a Hierarchy delegates.
type ChildZone struct {
	// Zone is the child's origin; NS its name servers and their addresses (in the TLD, as
	// glue); DS its DS records in zone file form (none: an insecure delegation).
	Zone string
	NS   map[string]string
	DS   []string
}

// hierarchyKey is the TSIG key of a Hierarchy's updates.
var hierarchyKey = TSIGKey{Name: "hierarchy-key.", Algorithm: dns.HmacSHA256, Secret: "c2VjcmV0LWtleS1vZi10aGUtdGVzdC1oaWVyYXJjaHk="}

// StartHierarchy starts Knot on ip:53 (a loopback address the test owns) serving the root and
// tld ("test.") signed, tld delegating children. It needs root (port 53) and skips the test
// otherwise, or when knotd is not installed.
func StartHierarchy(t testing.TB, ip, tld string, children ...ChildZone) *Hierarchy {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a DNS hierarchy serves on port 53, which only root may bind")
	}
	bin := Sbin(t, "knotd", "knot")
	tld = dns.Fqdn(tld)
	dir := t.TempDir()
	ns := "ns.nic." + tld
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("root.zone", fmt.Sprintf(`. 86400 IN SOA %[1]s hostmaster.nic.%[2]s 1 1800 900 604800 60
. 86400 IN NS %[1]s
%[2]s 86400 IN NS %[1]s
%[1]s 86400 IN A %[3]s
`, ns, tld, ip))
	var b strings.Builder
	fmt.Fprintf(&b, "%[2]s 3600 IN SOA %[1]s hostmaster.nic.%[2]s 1 1800 900 604800 60\n%[2]s 3600 IN NS %[1]s\n%[1]s 3600 IN A %[3]s\n", ns, tld, ip)
	for _, c := range children {
		for name, addr := range c.NS {
			fmt.Fprintf(&b, "%s 60 IN NS %s\n", dns.Fqdn(c.Zone), dns.Fqdn(name))
			if dns.IsSubDomain(tld, dns.Fqdn(name)) {
				fmt.Fprintf(&b, "%s 60 IN A %s\n", dns.Fqdn(name), addr)
			}
		}
		for _, ds := range c.DS {
			b.WriteString(ds + "\n")
		}
	}
	write(zoneFileName(tld), b.String())
	key := hierarchyKey
	write("knot.conf", hierarchyConfig(dir, ip, key, []string{".", tld}))
	h := &Hierarchy{Addr: net.JoinHostPort(ip, "53"), Key: key, TLD: tld}
	h.srv = &UpdateServer{Addr: h.Addr, Kind: "knot", logs: &syncBuffer{}, done: make(chan struct{})}
	h.srv.cmd = exec.Command(bin, "-c", filepath.Join(dir, "knot.conf"))
	h.srv.cmd.Dir = dir
	h.srv.cmd.Stdout, h.srv.cmd.Stderr = h.srv.logs, h.srv.logs
	if err := h.srv.cmd.Start(); err != nil {
		t.Fatalf("start knotd: %v", err)
	}
	go func() { _ = h.srv.cmd.Wait(); close(h.srv.done) }()
	t.Cleanup(h.srv.Stop)
	if !h.srv.waitReady([]string{".", tld}) {
		t.Fatalf("knotd did not start:\n%s", h.srv.Logs())
	}
	tldKey := h.signedKey(t, tld)
	h.Update(t, tld, ".", []string{strings.ReplaceAll(tldKey.ToDS(dns.SHA256).String(), "\t", " ")}, nil)
	Eventually(t, 20*time.Second, func() bool { return h.signed(tld, dns.TypeDS) }, "the root signs the DS of %s\n%s", tld, h.srv.Logs)
	rootKey := h.signedKey(t, ".")
	h.Anchor = strings.ReplaceAll(rootKey.String(), "\t", " ")
	return h
}

// hierarchyConfig is knot.conf for Knot on ip:53 in dir, serving origins signed by its
// default policy, taking updates signed with key.
func hierarchyConfig(dir, ip string, key TSIGKey, origins []string) string {
	var b strings.Builder
	b.WriteString(knotServerConfig(dir, ip+"@53"))
	b.WriteString(knotUpdateACL(key))
	fmt.Fprintf(&b, `template:
  - id: default
    storage: %q
    acl: update
    dnssec-signing: on
    zonefile-sync: -1
zone:
`, dir)
	for _, origin := range origins {
		fmt.Fprintf(&b, "  - domain: %q\n    file: %q\n", origin, zoneFileName(origin))
	}
	return b.String()
}

// signedKey waits until Knot serves zone's DNSKEY RRset signed, and returns its SEP key.
func (h *Hierarchy) signedKey(t testing.TB, zone string) *dns.DNSKEY {
	t.Helper()
	var key *dns.DNSKEY
	Eventually(t, 20*time.Second, func() bool {
		r := h.query(zone, dns.TypeDNSKEY)
		if r == nil || !hasRRSIG(r.Answer, dns.TypeDNSKEY) {
			return false
		}
		for _, rr := range r.Answer {
			if k, ok := rr.(*dns.DNSKEY); ok && k.Flags&dns.SEP != 0 {
				key = k
			}
		}
		return key != nil
	}, "Knot signs %s\n%s", zone, h.srv.Logs)
	return key
}

// signed reports whether Knot serves name/qtype signed.
func (h *Hierarchy) signed(name string, qtype uint16) bool {
	r := h.query(name, qtype)
	return r != nil && hasRRSIG(r.Answer, qtype)
}

// query asks Knot name/qtype with the DO bit; nil on error.
func (h *Hierarchy) query(name string, qtype uint16) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.SetEdns0(4096, true)
	c := &dns.Client{Net: "tcp", Timeout: 2 * time.Second}
	r, _, err := c.Exchange(m, h.Addr)
	if err != nil {
		return nil
	}
	return r
}

// hasRRSIG reports whether rrs hold an RRSIG covering covered.
func hasRRSIG(rrs []dns.RR, covered uint16) bool {
	for _, rr := range rrs {
		if s, ok := rr.(*dns.RRSIG); ok && s.TypeCovered == covered {
			return true
		}
	}
	return false
}

// Update sends Knot an update of zone (signed with Key) that adds the records add and removes
// the records remove (zone file form) of the RRsets at owner.
func (h *Hierarchy) Update(t testing.TB, owner, zone string, add, remove []string) {
	t.Helper()
	m := new(dns.Msg)
	m.SetUpdate(dns.Fqdn(zone))
	parse := func(lines []string) []dns.RR {
		var out []dns.RR
		for _, l := range lines {
			rr, err := dns.NewRR(l)
			if err != nil {
				t.Fatalf("update of %s: %v", owner, err)
			}
			out = append(out, rr)
		}
		return out
	}
	if rrs := parse(remove); len(rrs) > 0 {
		m.Remove(rrs)
	}
	if rrs := parse(add); len(rrs) > 0 {
		m.Insert(rrs)
	}
	m.SetTsig(h.Key.Name, h.Key.Algorithm, 300, time.Now().Unix())
	c := &dns.Client{Net: "tcp", Timeout: 5 * time.Second, TsigSecret: map[string]string{h.Key.Name: h.Key.Secret}}
	r, _, err := c.Exchange(m, h.Addr)
	if err != nil || r.Rcode != dns.RcodeSuccess {
		t.Fatalf("update of %s in %s: %v %v\n%s", owner, zone, err, r, h.srv.Logs())
	}
}

// Query asks Knot name/qtype with the DO bit, over TCP.
func (h *Hierarchy) Query(t testing.TB, name string, qtype uint16) *dns.Msg {
	t.Helper()
	r := h.query(name, qtype)
	if r == nil {
		t.Fatalf("Knot did not answer %s %s", name, dns.TypeToString[qtype])
	}
	return r
}

// Logs returns what Knot logged.
func (h *Hierarchy) Logs() string { return h.srv.Logs() }

// RootHints returns a root hints file's text for the hierarchy: its one root server.
func (h *Hierarchy) RootHints() string {
	host, _, _ := net.SplitHostPort(h.Addr)
	return fmt.Sprintf(". 3600000 NS ns.nic.%s\nns.nic.%s 3600000 A %s\n", h.TLD, h.TLD, host)
}
