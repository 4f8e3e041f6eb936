package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// The loopback addresses of the signed hierarchies (port 53): BIND serving the signed root
// and test. TLD, and the name servers of the child zones it delegates.
const (
	dsRoot           = "127.0.39.1"
	dsNS1, dsNS2     = "127.0.39.2", "127.0.39.3"
	dsPluginNS       = "127.0.39.4"
	dsRolloverRoot   = "127.0.39.11"
	dsRolloverNS     = "127.0.39.12"
	validatorTimeout = 20 * time.Second
)

// signedZone is the gslb zone of the validation tests, for the zone origin with its name
// servers ns1 and ns2 at their addresses, and a failover record whose primary and secondary
// are TCP listeners on the ports given.
func signedZone(origin, ns1, ns2 string, primary, secondary int) string {
	return fmt.Sprintf(`soa: {mname: ns1.%[1]s, rname: hostmaster.%[1]s, minimum: 5, ttl: 60}
ns: [ns1.%[1]s, ns2.%[1]s]
defaults:
  record_ttl: 1
static:
  ns1: ["A %[2]s"]
  ns2: ["A %[3]s"]
  "@": ["MX 10 mail", "TXT \"v=spf1 -all\""]
  mail: ["A 192.0.2.25"]
records:
  www.%[1]s:
    mode: roundrobin
    backends: [{address: 192.0.2.10}, {address: 192.0.2.11}, {address: "2001:db8::10"}]
  app.%[1]s:
    mode: failover
    scrape_interval: 200ms
    scrape_timeout: 100ms
    backends:
      - {address: 127.0.0.1, priority: 1, rise: 1, fall: 1, healthchecks: [{type: tcp, params: {port: %[4]d}}]}
      - {address: 127.0.0.2, priority: 2, rise: 1, fall: 1, healthchecks: [{type: tcp, params: {port: %[5]d}}]}
  geo.%[1]s:
    mode: ip-hash
    backends: [{address: 192.0.2.30}, {address: 192.0.2.31}, {address: 192.0.2.32}]
  "*.apps.%[1]s":
    backends: [{address: 192.0.2.40}, {address: 192.0.2.41}]
  v4only.%[1]s:
    backends: [{address: 192.0.2.50}]
`, origin, ns1, ns2, primary, secondary)
}

// listener returns a TCP listener on ip that accepts and closes connections until the test
// ends, and its port.
func listener(t *testing.T, ip string) (net.Listener, int) {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go acceptAndClose(l)
	return l, l.Addr().(*net.TCPAddr).Port
}

// askValidator asks the validating resolver u name/qtype with the DO bit (and an ECS option
// for subnet, unless empty) and returns the reply.
func askValidator(t *testing.T, u *testutil.Unbound, name string, qtype uint16, subnet string) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.SetEdns0(1232, true)
	if subnet != "" {
		if err := testutil.AddECS(m, subnet); err != nil {
			t.Fatal(err)
		}
	}
	c := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
	r, _, err := c.Exchange(m, u.Addr)
	if err != nil {
		t.Fatalf("resolver: %s %s: %v\nunbound log:\n%s", name, dns.TypeToString[qtype], err, u.Log())
	}
	return r
}

// validated checks that r is a validated answer (AD, the rcode want) and returns its answer's
// addresses.
func validated(t *testing.T, u *testutil.Unbound, r *dns.Msg, want int) []string {
	t.Helper()
	if r.Rcode != want || !r.AuthenticatedData {
		t.Errorf("%s %s: %s AD=%v, want %s with AD\n%v\nunbound log:\n%s", r.Question[0].Name, dns.TypeToString[r.Question[0].Qtype],
			dns.RcodeToString[r.Rcode], r.AuthenticatedData, dns.RcodeToString[want], r, tail(u.Log()))
	}
	return addresses(r)
}

// TestSignedAnswersValidate runs a signed hierarchy (the root and test. in BIND, signed, the
// root's key the resolver's trust anchor) delegating gslb.test to two meridians signing with
// the same keys (a KSK and a ZSK, key files as dnssec-keygen writes them), and a validating
// unbound: every kind of answer comes back with the AD bit, through a failover, with ECS, and
// from either instance.
func TestSignedAnswersValidate(t *testing.T) {
	dir := t.TempDir()
	ksk := testutil.WriteKey(t, dir, testutil.KeySpec{Zone: "gslb.test", KSK: true, Algorithm: dns.ECDSAP256SHA256})
	zsk := testutil.WriteKey(t, dir, testutil.KeySpec{Zone: "gslb.test", Algorithm: dns.ECDSAP256SHA256})
	h := testutil.StartHierarchy(t, dsRoot, "test",
		testutil.ChildZone{Zone: "gslb.test", NS: map[string]string{"ns1.gslb.test": dsNS1, "ns2.gslb.test": dsNS2}, DS: []string{ksk.DS()}})
	primary, pport := listener(t, "127.0.0.1")
	_, sport := listener(t, "127.0.0.2")
	zone := filepath.Join(dir, "gslb.test.yml")
	if err := os.WriteFile(zone, []byte(signedZone("gslb.test.", dsNS1, dsNS2, pport, sport)), 0o644); err != nil {
		t.Fatal(err)
	}
	var servers []*testutil.Server
	for _, ip := range []string{dsNS1, dsNS2} {
		servers = append(servers, testutil.StartAt(t, dir, ip+":53", fmt.Sprintf(`gslb.test {
    bind %s
    gslb {
        zone gslb.test. %s
        use_edns_csubnet
        dnssec {
            key file %s %s
        }
    }
}
`, ip, zone, ksk.Base, zsk.Base), 15*time.Second))
	}
	u := testutil.StartValidator(t, h, dsNS1, dsNS2)

	for _, tt := range []struct {
		name   string
		qtype  uint16
		subnet string
		rcode  int
		want   []string // the answer is one of these addresses (nil: none)
	}{
		{"www.gslb.test", dns.TypeA, "", dns.RcodeSuccess, []string{"192.0.2.10", "192.0.2.11"}},
		{"www.gslb.test", dns.TypeAAAA, "", dns.RcodeSuccess, []string{"2001:db8::10"}},
		{"geo.gslb.test", dns.TypeA, "198.51.100.0/24", dns.RcodeSuccess, []string{"192.0.2.30", "192.0.2.31", "192.0.2.32"}},
		{"geo.gslb.test", dns.TypeA, "203.0.113.0/24", dns.RcodeSuccess, []string{"192.0.2.30", "192.0.2.31", "192.0.2.32"}},
		{"foo.apps.gslb.test", dns.TypeA, "", dns.RcodeSuccess, []string{"192.0.2.40", "192.0.2.41"}},
		{"a.b.apps.gslb.test", dns.TypeA, "", dns.RcodeSuccess, []string{"192.0.2.40", "192.0.2.41"}},
		{"foo.apps.gslb.test", dns.TypeTXT, "", dns.RcodeSuccess, nil},
		{"v4only.gslb.test", dns.TypeAAAA, "", dns.RcodeSuccess, nil},
		{"nope.gslb.test", dns.TypeA, "", dns.RcodeSuccess, nil}, // compact denial: NODATA with NXNAME
		{"x.www.gslb.test", dns.TypeAAAA, "", dns.RcodeSuccess, nil},
		{"mail.gslb.test", dns.TypeA, "", dns.RcodeSuccess, []string{"192.0.2.25"}},
		{"mail.gslb.test", dns.TypeAAAA, "", dns.RcodeSuccess, nil},
		{"gslb.test", dns.TypeMX, "", dns.RcodeSuccess, nil},
		{"gslb.test", dns.TypeDNSKEY, "", dns.RcodeSuccess, nil},
		{"gslb.test", dns.TypeCDS, "", dns.RcodeSuccess, nil},
		{"gslb.test", dns.TypeSOA, "", dns.RcodeSuccess, nil},
		{"apps.gslb.test", dns.TypeA, "", dns.RcodeSuccess, nil}, // an empty non-terminal
	} {
		t.Run(dns.TypeToString[tt.qtype]+" "+tt.name+" "+tt.subnet, func(t *testing.T) {
			for range 4 { // either instance may answer
				got := validated(t, u, askValidator(t, u, tt.name, tt.qtype, tt.subnet), tt.rcode)
				for _, a := range got {
					if !slices.Contains(tt.want, a) {
						t.Errorf("answer %v, want among %v", got, tt.want)
					}
				}
				if tt.want != nil && len(got) == 0 {
					t.Errorf("no answer, want among %v", tt.want)
				}
			}
		})
	}

	t.Run("failover", func(t *testing.T) {
		answer := func() []string {
			return validated(t, u, askValidator(t, u, "app.gslb.test", dns.TypeA, ""), dns.RcodeSuccess)
		}
		testutil.Eventually(t, validatorTimeout, func() bool { return slices.Equal(answer(), []string{"127.0.0.1"}) }, "the primary is not answered: %v", answer)
		primary.Close()
		testutil.Eventually(t, validatorTimeout, func() bool { return slices.Equal(answer(), []string{"127.0.0.2"}) }, "no failover: %v\n%s", answer, servers[0].Logs)
	})
}
