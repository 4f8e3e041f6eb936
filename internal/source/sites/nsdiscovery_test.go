package sites

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/exchange"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

const peerPort = 5353

// addrPorts parses addresses and gives each peerPort.
// testKey is a peer key that the exchanges of these tests must not use.
var testKey = &config.TSIGKey{Name: "peer-key.", Algorithm: dns.HmacSHA256, Secret: "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA=="}

func addrPorts(addrs ...string) []netip.AddrPort {
	var aps []netip.AddrPort
	for _, a := range addrs {
		aps = append(aps, netip.AddrPortFrom(netip.MustParseAddr(a), peerPort))
	}
	return aps
}

// closedPort returns host:port on loopback where nothing listens.
func closedPort(t *testing.T) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(testutil.FreePort(t)))
}

// TestPeersFromNSParents asks real authoritative servers (CoreDNS's file plugin in the
// meridian binary) of the parent zone, which answer with referrals and glue.
func TestPeersFromNSParents(t *testing.T) {
	delegation := []string{
		"gslb IN NS ns1.gslb", "ns1.gslb IN A 127.0.0.11",
		"gslb IN NS ns2.gslb", "ns2.gslb IN AAAA ::1",
		"gslb IN NS ns3.other", "ns3.other IN A 127.0.0.13", // glueless: not below gslb
	}
	parent := testutil.StartAuthoritative(t, "example.com.", delegation...)
	broken := testutil.StartAuthoritative(t, "example.com.",
		"gslb IN NS ns1.gslb", "ns1.gslb IN A 127.0.0.11",
		"gslb IN NS ns4.nowhere.invalid.", // not the parent's to answer: REFUSED
		"gslb IN NS ns5.other",            // no address at all: NXDOMAIN
	)
	// A parent that is authoritative for the zone itself answers in the answer section.
	child := testutil.StartAuthoritative(t, "gslb.example.com.",
		"@ IN NS ns1", "ns1 IN A 127.0.0.21", "@ IN NS ns2", "ns2 IN AAAA ::2", "ns2 IN A 127.0.0.21")

	tests := []struct {
		name    string
		zone    string
		parents []string
		want    []netip.AddrPort
		errs    []string // what the error must name; none: no error
	}{
		{name: "referral with glue and a glueless name server", zone: "gslb.example.com.",
			parents: []string{parent.Addr}, want: addrPorts("127.0.0.11", "127.0.0.13", "::1")},
		{name: "zone without the final dot", zone: "GSLB.example.com",
			parents: []string{parent.Addr}, want: addrPorts("127.0.0.11", "127.0.0.13", "::1")},
		{name: "a parent that does not answer is skipped", zone: "gslb.example.com.",
			parents: []string{closedPort(t), parent.Addr}, want: addrPorts("127.0.0.11", "127.0.0.13", "::1")},
		{name: "authoritative answer, duplicates removed", zone: "gslb.example.com.",
			parents: []string{child.Addr}, want: addrPorts("127.0.0.1", "127.0.0.21", "::2")},
		{name: "unresolvable name servers are left out with an error", zone: "gslb.example.com.",
			parents: []string{broken.Addr}, want: addrPorts("127.0.0.11"),
			errs: []string{"ns4.nowhere.invalid.", "refused", "ns5.other.example.com.", "no A or AAAA"}},
		{name: "no such zone", zone: "nope.example.com.", parents: []string{parent.Addr},
			errs: []string{"nope.example.com.", "no NS records", "NXDOMAIN"}},
		{name: "no parent answers", zone: "gslb.example.com.", parents: []string{closedPort(t)},
			errs: []string{"gslb.example.com.", "network"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &exchange.Client{Timeout: 2 * time.Second, Key: testKey} // the key must not be used
			got, err := PeersFromNS(context.Background(), c, tt.zone, tt.parents, "", peerPort)
			checkPeers(t, got, err, tt.want, tt.errs)
		})
	}
}

// checkPeers fails t unless got is want and err names every one of errs (nil when errs is
// empty).
func checkPeers(t *testing.T, got []netip.AddrPort, err error, want []netip.AddrPort, errs []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("peers %v, want %v", got, want)
	}
	if len(errs) == 0 && err != nil {
		t.Errorf("error %v", err)
	}
	if len(errs) > 0 && err == nil {
		t.Errorf("no error, want one naming %q", errs)
	}
	for _, s := range errs {
		if err != nil && !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %q", err, s)
		}
	}
}

// writeResolvConf writes a resolv.conf with lines and returns its path.
func writeResolvConf(t *testing.T, lines ...string) string {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPeersFromNSResolver: without parents, the servers of resolv.conf are asked, with RD set,
// in order until one answers.
func TestPeersFromNSResolver(t *testing.T) {
	auth := testutil.StartAuthoritative(t, "gslb.example.com.",
		"@ IN NS ns1", "ns1 IN A 127.0.0.21", "@ IN NS ns2.example.net.")
	// A resolver answering only recursive queries, for a name server the zone does not serve.
	resolver := testutil.StartDNS(t, dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		switch q := r.Question[0]; {
		case !r.RecursionDesired:
			m.Rcode = dns.RcodeRefused
		case q.Name == "gslb.example.com." && q.Qtype == dns.TypeNS:
			m.Answer = append(m.Answer, &dns.NS{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: 30}, Ns: "ns2.example.net."})
		case q.Name == "ns2.example.net." && q.Qtype == dns.TypeAAAA:
			m.Answer = append(m.Answer, &dns.AAAA{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: 30}, AAAA: net.ParseIP("2001:db8::2")})
		}
		_ = w.WriteMsg(m)
	}), nil)

	tests := []struct {
		name       string
		resolvConf []string
		want       []netip.AddrPort
		errs       []string
	}{
		{name: "an authoritative server as the resolver",
			resolvConf: []string{"# test", "search example.com", "nameserver " + auth.Addr},
			want:       addrPorts("127.0.0.1", "127.0.0.21"),
			errs:       []string{"ns2.example.net."}},
		{name: "recursive queries, after a server that does not answer",
			resolvConf: []string{"nameserver bogus", "nameserver " + closedPort(t), "nameserver " + resolver},
			want:       addrPorts("2001:db8::2")},
		{name: "no nameserver", resolvConf: []string{"nameserver bogus", "options ndots:2"},
			errs: []string{"no nameserver", "bogus"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeResolvConf(t, tt.resolvConf...)
			got, err := PeersFromNS(context.Background(), &exchange.Client{Timeout: 2 * time.Second}, "gslb.example.com.", nil, path, peerPort)
			checkPeers(t, got, err, tt.want, tt.errs)
		})
	}
	t.Run("missing resolv.conf", func(t *testing.T) {
		got, err := PeersFromNS(context.Background(), &exchange.Client{}, "gslb.example.com.", nil, filepath.Join(t.TempDir(), "none"), peerPort)
		checkPeers(t, got, err, nil, []string{"resolver's configuration", "none"})
	})
}

// TestResolvers reads the nameserver lines of resolv.conf.
func TestResolvers(t *testing.T) {
	path := writeResolvConf(t, "nameserver 192.0.2.1", "nameserver ::1", "nameserver fe80::1%eth0",
		"nameserver 192.0.2.2:5300", "nameserver [2001:db8::1]:5301", "nameserver ns.example.", "domain example.com")
	got, err := resolvers(path)
	want := []string{"192.0.2.1:53", "[::1]:53", "[fe80::1%eth0]:53", "192.0.2.2:5300", "[2001:db8::1]:5301"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("resolvers %q (err %v), want %q", got, err, want)
	}
}

func TestPeersFromNSPort(t *testing.T) {
	for _, port := range []int{0, -1, 65536} {
		got, err := PeersFromNS(context.Background(), &exchange.Client{}, "gslb.example.com.", []string{closedPort(t)}, "", port)
		checkPeers(t, got, err, nil, []string{strconv.Itoa(port), "not 1-65535"})
	}
}
