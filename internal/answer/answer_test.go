package answer

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// states is a HealthSource that lets a test set each backend's health by address.
type states map[string]*health.State

func (s states) State(key string) *health.State {
	if st, ok := s[key]; ok {
		return st
	}
	st := &health.State{}
	s[key] = st
	return st
}

// set gives every backend of record name with the given address the status st.
func (s states) set(t testing.TB, snap *catalog.Snapshot, name, addr string, st health.Status) {
	t.Helper()
	found := false
	for _, r := range snap.Records() {
		if r.Name() != name {
			continue
		}
		for _, b := range r.Backends {
			if b.Config.Address == addr {
				b.State.Set(st)
				found = true
			}
		}
		r.Refresh()
	}
	if !found {
		t.Fatalf("no backend %s in %s", addr, name)
	}
}

var zoneYAML = `
soa:
  mname: ns1.example.org.
  rname: hostmaster.example.org.
  serial: 2026113001
  ttl: 3600
  minimum: 60
ns: [ns1.example.org., ns2.example.org.]
healthcheck_profiles:
  tcp80:
    type: tcp
    params: {port: 80}
records:
  www.example.org.:
    mode: failover
    record_ttl: 42
    backends:
      - {address: 10.0.0.1, priority: 1}
      - {address: 10.0.0.2, priority: 2}
      - {address: "2001:db8::1", priority: 1}
  hashed.example.org.:
    mode: ip-hash
    backends:
      - {address: 10.1.0.1}
      - {address: 10.1.0.2}
      - {address: 10.1.0.3}
  cdn.example.org.:
    mode: failover
    backends:
      - {address: edge.cdn.example.net, priority: 1, port: 443}
      - {address: 10.2.0.1, priority: 2, port: 8443}
  checked.example.org.:
    mode: failover
    backends:
      - {address: 10.3.0.1, priority: 1, healthchecks: [tcp80]}
      - {address: 10.3.0.2, priority: 2, healthchecks: [tcp80]}
      - {address: "2001:db8::3", healthchecks: [tcp80]}
      - {address: 10.3.0.9, enable: false}
  closed.example.org.:
    fallback_policy: {mode: fail-closed, rcode: REFUSED}
    backends:
      - {address: 10.4.0.1, healthchecks: [tcp80]}
  closeddefault.example.org.:
    fallback_policy: {mode: fail-closed}
    backends:
      - {address: 10.4.0.2, healthchecks: [tcp80]}
  specific.example.org.:
    fallback_policy: {mode: fail-specific, fallback_ips: [192.0.2.1, "2001:db8::99"]}
    backends:
      - {address: 10.5.0.1, healthchecks: [tcp80]}
      - {address: "2001:db8::5", healthchecks: [tcp80]}
  specificv4.example.org.:
    fallback_policy: {mode: fail-specific, fallback_ips: [192.0.2.2, "2001:db8::98"]}
    backends:
      - {address: 10.5.0.2, healthchecks: [tcp80]}
  specificcname.example.org.:
    fallback_policy: {mode: fail-specific, fallback_cname: backup.cdn.example.net}
    backends:
      - {address: 10.6.0.1, healthchecks: [tcp80]}
  v4only.example.org.:
    backends:
      - {address: 10.7.0.1}
  "*.app.example.org.":
    backends:
      - {address: 10.8.0.1}
  exact.app.example.org.:
    backends:
      - {address: 10.8.0.2}
  deep.ent.example.org.:
    backends:
      - {address: 10.9.0.1}
  big.example.org.:
    mode: random
    alpn: [h2]
    backends:
` + bigBackends()

func bigBackends() string {
	var b strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&b, "      - {address: 10.10.0.%d, port: 443}\n", i)
	}
	return b.String()
}

func testSnapshot(t testing.TB) (*catalog.Snapshot, states) {
	t.Helper()
	return snapshotOf(t, "example.org.yml", zoneYAML)
}

// snapshotOf compiles yaml, the zone example.org. read from file, with health words the test
// can set.
func snapshotOf(t testing.TB, file, yaml string) (*catalog.Snapshot, states) {
	t.Helper()
	z, err := config.ParseZone(file, []byte(yaml), "example.org", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	hs := states{}
	snap, err := catalog.Build([]*config.Zone{z}, hs)
	if err != nil {
		t.Fatal(err)
	}
	return snap, hs
}

var testClient = netip.MustParseAddr("192.0.2.200")

func ask(snap *catalog.Snapshot, opts Options, name string, qtype uint16) (*dns.Msg, Result) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	return Respond(snap, opts, Query{Msg: m, Source: testClient})
}

// rdata returns the answer section as "TYPE value" strings, in order.
func rdata(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		fields := strings.SplitN(rr.String(), "\t", 5)
		out = append(out, dns.TypeToString[rr.Header().Rrtype]+" "+fields[len(fields)-1])
	}
	return out
}

func TestAnswers(t *testing.T) {
	tests := []struct {
		name       string
		qname      string
		qtype      uint16
		wantRcode  int
		wantResult Result
		want       []string // answer rdata, sorted unless ordered
		wantSOA    bool     // negative answer: SOA in authority
	}{
		{"failover A", "www.example.org.", dns.TypeA, dns.RcodeSuccess, Answered, []string{"A 10.0.0.1"}, false},
		{"failover AAAA split by family", "www.example.org.", dns.TypeAAAA, dns.RcodeSuccess, Answered, []string{"AAAA 2001:db8::1"}, false},
		{"case-insensitive name", "WwW.ExAmPlE.oRg.", dns.TypeA, dns.RcodeSuccess, Answered, []string{"A 10.0.0.1"}, false},
		{"NODATA for MX", "www.example.org.", dns.TypeMX, dns.RcodeSuccess, Answered, nil, true},
		{"NODATA for TXT when TXT is off", "www.example.org.", dns.TypeTXT, dns.RcodeSuccess, Answered, nil, true},
		{"NODATA for AAAA of an IPv4-only record", "v4only.example.org.", dns.TypeAAAA, dns.RcodeSuccess, Answered, nil, true},
		{"NXDOMAIN for an unknown name", "nope.example.org.", dns.TypeA, dns.RcodeNameError, NameError, nil, true},
		{"not ours across a label boundary", "xexample.org.", dns.TypeA, 0, NotOurs, nil, false},
		{"not ours outside the zone", "example.net.", dns.TypeA, 0, NotOurs, nil, false},
		{"apex SOA", "example.org.", dns.TypeSOA, dns.RcodeSuccess, Answered, []string{"SOA ns1.example.org. hostmaster.example.org. 2026113001 7200 3600 1209600 60"}, false},
		{"apex NS", "example.org.", dns.TypeNS, dns.RcodeSuccess, Answered, []string{"NS ns1.example.org.", "NS ns2.example.org."}, false},
		{"apex A is NODATA", "example.org.", dns.TypeA, dns.RcodeSuccess, Answered, nil, true},
		{"empty non-terminal is NODATA", "ent.example.org.", dns.TypeA, dns.RcodeSuccess, Answered, nil, true},
		{"wildcard", "foo.app.example.org.", dns.TypeA, dns.RcodeSuccess, Answered, []string{"A 10.8.0.1"}, false},
		{"wildcard several labels down", "a.b.app.example.org.", dns.TypeA, dns.RcodeSuccess, Answered, []string{"A 10.8.0.1"}, false},
		{"exact name beats wildcard", "exact.app.example.org.", dns.TypeA, dns.RcodeSuccess, Answered, []string{"A 10.8.0.2"}, false},
		{"wildcard does not cover below an existing name", "x.exact.app.example.org.", dns.TypeA, dns.RcodeNameError, NameError, nil, true},
		{"host-name backend answers CNAME", "cdn.example.org.", dns.TypeA, dns.RcodeSuccess, Answered, []string{"CNAME edge.cdn.example.net."}, false},
		{"host-name backend answers CNAME for AAAA", "cdn.example.org.", dns.TypeAAAA, dns.RcodeSuccess, Answered, []string{"CNAME edge.cdn.example.net."}, false},
		{"CNAME query", "cdn.example.org.", dns.TypeCNAME, dns.RcodeSuccess, Answered, []string{"CNAME edge.cdn.example.net."}, false},
		{"CNAME query of an address record is NODATA", "www.example.org.", dns.TypeCNAME, dns.RcodeSuccess, Answered, nil, true},
		{"SRV from selected backends", "cdn.example.org.", dns.TypeSRV, dns.RcodeSuccess, Answered, []string{"SRV 1 1 443 edge.cdn.example.net."}, false},
		{"SRV without ports is NODATA", "www.example.org.", dns.TypeSRV, dns.RcodeSuccess, Answered, nil, true},
		{"HTTPS in service mode", "www.example.org.", dns.TypeHTTPS, dns.RcodeSuccess, Answered, []string{`HTTPS 1 . ipv4hint="10.0.0.1" ipv6hint="2001:db8::1"`}, false},
		{"HTTPS in alias mode", "cdn.example.org.", dns.TypeHTTPS, dns.RcodeSuccess, Answered, []string{"HTTPS 0 edge.cdn.example.net."}, false},
		{"SVCB", "v4only.example.org.", dns.TypeSVCB, dns.RcodeSuccess, Answered, []string{`SVCB 1 . ipv4hint="10.7.0.1"`}, false},
		{"ANY is minimal", "www.example.org.", dns.TypeANY, dns.RcodeSuccess, Answered, []string{"A 10.0.0.1"}, false},
		{"ANY at the apex", "example.org.", dns.TypeANY, dns.RcodeSuccess, Answered, []string{"SOA ns1.example.org. hostmaster.example.org. 2026113001 7200 3600 1209600 60"}, false},
		// Health-checked backends start unknown: the fallback policy answers until a check passes.
		{"fail-open answers every enabled backend", "checked.example.org.", dns.TypeA, dns.RcodeSuccess, Answered, []string{"A 10.3.0.1", "A 10.3.0.2"}, false},
		{"fail-open by family", "checked.example.org.", dns.TypeAAAA, dns.RcodeSuccess, Answered, []string{"AAAA 2001:db8::3"}, false},
		{"fail-closed rcode", "closed.example.org.", dns.TypeA, dns.RcodeRefused, Answered, nil, true},
		{"fail-closed defaults to SERVFAIL", "closeddefault.example.org.", dns.TypeA, dns.RcodeServerFailure, Answered, nil, true},
		{"fail-closed covers every family while the record is down", "closed.example.org.", dns.TypeAAAA, dns.RcodeRefused, Answered, nil, true},
		{"fail-specific IPv6 for an IPv4-only record that is down", "specificv4.example.org.", dns.TypeAAAA, dns.RcodeSuccess, Answered, []string{"AAAA 2001:db8::98"}, false},
		{"fail-specific IPv4", "specific.example.org.", dns.TypeA, dns.RcodeSuccess, Answered, []string{"A 192.0.2.1"}, false},
		{"fail-specific IPv6", "specific.example.org.", dns.TypeAAAA, dns.RcodeSuccess, Answered, []string{"AAAA 2001:db8::99"}, false},
		{"fail-specific CNAME", "specificcname.example.org.", dns.TypeA, dns.RcodeSuccess, Answered, []string{"CNAME backup.cdn.example.net."}, false},
	}
	snap, _ := testSnapshot(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, res := ask(snap, Options{}, tt.qname, tt.qtype)
			if res != tt.wantResult {
				t.Fatalf("result %v, want %v", res, tt.wantResult)
			}
			if res == NotOurs {
				if m != nil {
					t.Fatalf("a response for a name that is not ours: %v", m)
				}
				return
			}
			if !m.Authoritative {
				t.Error("AA is not set")
			}
			if m.Rcode != tt.wantRcode {
				t.Errorf("rcode %s, want %s", dns.RcodeToString[m.Rcode], dns.RcodeToString[tt.wantRcode])
			}
			got := rdata(m.Answer)
			slices.Sort(got)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("answer %q, want %q", got, want)
			}
			hasSOA := len(m.Ns) == 1 && m.Ns[0].Header().Rrtype == dns.TypeSOA
			if hasSOA != tt.wantSOA {
				t.Errorf("authority %v, want SOA: %v", m.Ns, tt.wantSOA)
			}
			if hasSOA && m.Ns[0].Header().Ttl != 60 {
				t.Errorf("negative answer SOA TTL %d, want the minimum 60", m.Ns[0].Header().Ttl)
			}
			for _, rr := range m.Answer {
				if rr.Header().Rrtype == dns.TypeA && rr.Header().Name != strings.ToLower(tt.qname) {
					t.Errorf("owner %s, want %s", rr.Header().Name, tt.qname)
				}
			}
		})
	}
}

func TestRecordTTL(t *testing.T) {
	snap, _ := testSnapshot(t)
	m, _ := ask(snap, Options{}, "www.example.org.", dns.TypeA)
	if ttl := m.Answer[0].Header().Ttl; ttl != 42 {
		t.Fatalf("TTL %d, want record_ttl 42", ttl)
	}
	m, _ = ask(snap, Options{}, "v4only.example.org.", dns.TypeA)
	if ttl := m.Answer[0].Header().Ttl; ttl != config.DefaultRecordTTL {
		t.Fatalf("TTL %d, want the default %d", ttl, config.DefaultRecordTTL)
	}
}

func TestHealthChangesTheAnswer(t *testing.T) {
	snap, hs := testSnapshot(t)
	const name = "checked.example.org."
	steps := []struct {
		addr string
		st   health.Status
		want []string
	}{
		{"10.3.0.2", health.Up, []string{"A 10.3.0.2"}},
		{"10.3.0.1", health.Up, []string{"A 10.3.0.1"}},
		{"10.3.0.1", health.Down, []string{"A 10.3.0.2"}},
		{"10.3.0.2", health.Down, []string{"A 10.3.0.1", "A 10.3.0.2"}}, // all down: fail-open
	}
	for i, s := range steps {
		hs.set(t, snap, name, s.addr, s.st)
		m, _ := ask(snap, Options{}, name, dns.TypeA)
		got := rdata(m.Answer)
		slices.Sort(got)
		if !slices.Equal(got, s.want) {
			t.Fatalf("step %d (%s %s): answer %v, want %v", i, s.addr, s.st, got, s.want)
		}
	}
}

func TestResponsesDoNotShareRecordsWithTheCatalog(t *testing.T) {
	snap, _ := testSnapshot(t)
	m, _ := ask(snap, Options{}, "www.example.org.", dns.TypeA)
	m.Answer[0].Header().Name = "rewritten.example.org."
	m.Answer[0].(*dns.A).Hdr.Ttl = 1
	m, _ = ask(snap, Options{}, "www.example.org.", dns.TypeA)
	if h := m.Answer[0].Header(); h.Name != "www.example.org." || h.Ttl != 42 {
		t.Fatalf("a later answer saw a change made to an earlier response: %v", m.Answer[0])
	}
}

func TestTXTDebugAnswer(t *testing.T) {
	snap, hs := testSnapshot(t)
	hs.set(t, snap, "checked.example.org.", "10.3.0.2", health.Down)
	m, _ := ask(snap, Options{EnableTXT: true}, "checked.example.org.", dns.TypeTXT)
	got := rdata(m.Answer)
	want := []string{
		`TXT "Backend: 10.3.0.1 | Priority: 1 | Status: unknown | Enabled: true"`,
		`TXT "Backend: 10.3.0.2 | Priority: 2 | Status: down | Enabled: true"`,
		`TXT "Backend: 2001:db8::3 | Priority: 0 | Status: unknown | Enabled: true"`,
		`TXT "Backend: 10.3.0.9 | Priority: 0 | Status: up | Enabled: false"`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("TXT %q, want %q", got, want)
	}
}

func TestTruncation(t *testing.T) {
	snap, _ := testSnapshot(t)
	for _, tt := range []struct {
		name    string
		tcp     bool
		udpSize uint16 // 0: no EDNS
		wantTC  bool
	}{
		{"UDP without EDNS", false, 0, true},
		{"UDP with a 4096 buffer is held to 1232 bytes", false, 4096, true},
		{"TCP", true, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := new(dns.Msg)
			m.SetQuestion("big.example.org.", dns.TypeA)
			if tt.udpSize > 0 {
				m.SetEdns0(tt.udpSize, false)
			}
			r, _ := Respond(snap, Options{}, Query{Msg: m, Source: testClient, TCP: tt.tcp})
			if r.Truncated != tt.wantTC {
				t.Fatalf("TC = %v, want %v", r.Truncated, tt.wantTC)
			}
			packed, err := r.Pack()
			if err != nil {
				t.Fatal(err)
			}
			if limit := max(512, min(int(tt.udpSize), advertisedUDPSize)); tt.wantTC && len(packed) > limit {
				t.Fatalf("truncated UDP answer is %d bytes", len(packed))
			}
			if !tt.wantTC && len(r.Answer) != 100 {
				t.Fatalf("%d answers, want all 100", len(r.Answer))
			}
		})
	}
}

func ecsQuery(name string, qtype uint16, ecs *dns.EDNS0_SUBNET) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.SetEdns0(1232, false)
	opt := m.IsEdns0()
	opt.Option = append(opt.Option, ecs)
	return m
}

func subnet(family uint16, prefix uint8, addr string) *dns.EDNS0_SUBNET {
	return &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: family, SourceNetmask: prefix, Address: net.ParseIP(addr)}
}

func TestEDNSClientSubnet(t *testing.T) {
	snap, _ := testSnapshot(t)
	tests := []struct {
		name      string
		opts      Options
		qname     string
		ecs       *dns.EDNS0_SUBNET
		wantRcode int
		wantEcho  bool
		wantScope uint8
	}{
		{"scope 0 when the answer does not depend on the client", Options{UseECS: true}, "www.example.org.", subnet(1, 24, "198.51.100.0"), dns.RcodeSuccess, true, 0},
		{"source prefix as scope for ip-hash", Options{UseECS: true}, "hashed.example.org.", subnet(1, 24, "198.51.100.0"), dns.RcodeSuccess, true, 24},
		{"IPv6 source", Options{UseECS: true}, "hashed.example.org.", subnet(2, 56, "2001:db8:aa00::"), dns.RcodeSuccess, true, 56},
		{"prefix 0 means do not use the subnet", Options{UseECS: true}, "hashed.example.org.", subnet(1, 0, "0.0.0.0"), dns.RcodeSuccess, true, 0},
		{"bits beyond the prefix are FORMERR", Options{UseECS: true}, "www.example.org.", subnet(1, 16, "198.51.100.0"), dns.RcodeFormatError, false, 0},
		{"a scope in a query is FORMERR", Options{UseECS: true}, "www.example.org.", &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, SourceScope: 24, Address: net.ParseIP("198.51.100.0")}, dns.RcodeFormatError, false, 0},
		{"ignored and not echoed when off", Options{}, "hashed.example.org.", subnet(1, 24, "198.51.100.0"), dns.RcodeSuccess, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := Respond(snap, tt.opts, Query{Msg: ecsQuery(tt.qname, dns.TypeA, tt.ecs), Source: testClient})
			if r.Rcode != tt.wantRcode {
				t.Fatalf("rcode %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[tt.wantRcode])
			}
			e := findECS(r)
			if (e != nil) != tt.wantEcho {
				t.Fatalf("ECS echoed: %v, want %v", e, tt.wantEcho)
			}
			if e == nil {
				return
			}
			if e.SourceScope != tt.wantScope || e.SourceNetmask != tt.ecs.SourceNetmask || e.Family != tt.ecs.Family {
				t.Fatalf("echo %v, want family %d source %d scope %d", e, tt.ecs.Family, tt.ecs.SourceNetmask, tt.wantScope)
			}
		})
	}
}

func TestIPHashFollowsTheECSAddress(t *testing.T) {
	snap, _ := testSnapshot(t)
	answers := map[string]bool{}
	for i := range 32 {
		addr := fmt.Sprintf("198.51.%d.0", i)
		q := ecsQuery("hashed.example.org.", dns.TypeA, subnet(1, 24, addr))
		r, _ := Respond(snap, Options{UseECS: true}, Query{Msg: q, Source: testClient})
		again, _ := Respond(snap, Options{UseECS: true}, Query{Msg: q, Source: netip.MustParseAddr("127.0.0.9")})
		if rdata(r.Answer)[0] != rdata(again.Answer)[0] {
			t.Fatalf("subnet %s: the answer changed with the transport address", addr)
		}
		answers[rdata(r.Answer)[0]] = true
	}
	if len(answers) < 2 {
		t.Fatalf("32 client subnets all got %v", answers)
	}
}

func TestEDNSVersionAndOPT(t *testing.T) {
	snap, _ := testSnapshot(t)
	m := new(dns.Msg)
	m.SetQuestion("www.example.org.", dns.TypeA)
	m.SetEdns0(4096, true)
	m.IsEdns0().SetVersion(1)
	r, _ := Respond(snap, Options{}, Query{Msg: m, Source: testClient})
	if _, err := r.Pack(); err != nil {
		t.Fatal(err)
	}
	if r.Rcode != dns.RcodeBadVers || r.IsEdns0() == nil {
		t.Fatalf("EDNS version 1: rcode %s with OPT %v, want BADVERS with OPT", dns.RcodeToString[r.Rcode], r.IsEdns0())
	}
	m.IsEdns0().SetVersion(0)
	r, _ = Respond(snap, Options{}, Query{Msg: m, Source: testClient})
	opt := r.IsEdns0()
	if opt == nil || !opt.Do() || opt.UDPSize() != advertisedUDPSize {
		t.Fatalf("reply OPT %v, want DO copied and size %d", opt, advertisedUDPSize)
	}
}

func TestNotAQuery(t *testing.T) {
	snap, _ := testSnapshot(t)
	m := new(dns.Msg)
	m.SetQuestion("www.example.org.", dns.TypeA)
	m.Opcode = dns.OpcodeUpdate
	if _, res := Respond(snap, Options{}, Query{Msg: m, Source: testClient}); res != NotOurs {
		t.Fatalf("UPDATE: result %v, want NotOurs", res)
	}
	m = new(dns.Msg)
	if _, res := Respond(snap, Options{}, Query{Msg: m, Source: testClient}); res != NotOurs {
		t.Fatalf("no question: result %v, want NotOurs", res)
	}
	// A NOTIFY for a gslb zone: NOTIMP, as BIND, Knot and NSD answer one for a zone they do
	// not take them for; for another zone, the next plugin's.
	m = new(dns.Msg)
	m.SetNotify("example.org.")
	if resp, res := Respond(snap, Options{}, Query{Msg: m, Source: testClient}); res != Answered || resp.Rcode != dns.RcodeNotImplemented || resp.Opcode != dns.OpcodeNotify || !resp.Response {
		t.Fatalf("NOTIFY: %v %v, want an answered NOTIMP", resp, res)
	}
	m.SetNotify("example.com.")
	if _, res := Respond(snap, Options{}, Query{Msg: m, Source: testClient}); res != NotOurs {
		t.Fatalf("NOTIFY of another zone: %v, want NotOurs", res)
	}
}

func TestZoneTransfersAreRefused(t *testing.T) {
	tests := []struct {
		name  string
		qname string
		qtype uint16
		tcp   bool
	}{
		{"AXFR of the apex over TCP", "example.org.", dns.TypeAXFR, true},
		{"AXFR of the apex over UDP", "example.org.", dns.TypeAXFR, false},
		{"IXFR of the apex over TCP", "example.org.", dns.TypeIXFR, true},
		{"IXFR of the apex over UDP", "example.org.", dns.TypeIXFR, false},
		{"AXFR of a record name", "www.example.org.", dns.TypeAXFR, true},
		{"AXFR of a name not in the zone's records", "nope.example.org.", dns.TypeAXFR, true},
	}
	snap, _ := testSnapshot(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := new(dns.Msg)
			m.SetQuestion(tt.qname, tt.qtype)
			r, res := Respond(snap, Options{}, Query{Msg: m, Source: testClient, TCP: tt.tcp})
			if res != Answered {
				t.Fatalf("result %v, want Answered", res)
			}
			if r.Rcode != dns.RcodeRefused {
				t.Errorf("rcode %s, want REFUSED", dns.RcodeToString[r.Rcode])
			}
			if len(r.Question) != 1 || r.Question[0] != m.Question[0] {
				t.Errorf("question %v, want %v echoed", r.Question, m.Question)
			}
			if len(r.Answer)+len(r.Ns)+len(r.Extra) != 0 {
				t.Errorf("records in a refusal: answer %v, authority %v, additional %v", r.Answer, r.Ns, r.Extra)
			}
		})
	}
	// A transfer of a zone that is not ours is passed on.
	m := new(dns.Msg)
	m.SetQuestion("example.net.", dns.TypeAXFR)
	if _, res := Respond(snap, Options{}, Query{Msg: m, Source: testClient, TCP: true}); res != NotOurs {
		t.Fatalf("AXFR of example.net.: result %v, want NotOurs", res)
	}
}

// TestFastQueryInfo reads the type and the DO bit of packed queries.
func TestFastQueryInfo(t *testing.T) {
	for _, tt := range []struct {
		qtype uint16
		edns  bool
		do    bool
	}{{dns.TypeA, false, false}, {dns.TypeAAAA, true, false}, {dns.TypeA, true, true}} {
		m := new(dns.Msg)
		m.SetQuestion("www.Example.org.", tt.qtype)
		if tt.edns {
			m.SetEdns0(1232, tt.do)
		}
		pkt, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		if qtype, do := FastQueryInfo(pkt); qtype != tt.qtype || do != tt.do {
			t.Errorf("%+v: got %d %v", tt, qtype, do)
		}
	}
	if qtype, do := FastQueryInfo([]byte{1, 2, 3}); qtype != 0 || do {
		t.Error("a short packet has a type")
	}
}

// TestMalformedEDNS: what RFC 6891 and RFC 7871 make FORMERR, read from the wire as the server
// reads it (a padded Client Subnet address shows only in the wire lengths).
func TestMalformedEDNS(t *testing.T) {
	snap, _ := testSnapshot(t)
	wire := func(m *dns.Msg, edit func([]byte) []byte) *dns.Msg {
		b, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			b = edit(b)
		}
		out := new(dns.Msg)
		if err := out.Unpack(b); err != nil {
			t.Fatalf("unpack: %v", err)
		}
		return out
	}
	// padded makes the address of the query's last option, an ECS of family 1 and prefix 8
	// packed in one octet, four octets long: the option's, the OPT's and the packet's lengths
	// grow by three.
	padded := func(b []byte) []byte {
		b = append(b, 0, 0, 0)
		binary.BigEndian.PutUint16(b[len(b)-10:], 8)
		binary.BigEndian.PutUint16(b[len(b)-14:], binary.BigEndian.Uint16(b[len(b)-14:])+3)
		return b
	}
	twoOPT := ecsQuery("www.example.org.", dns.TypeA, subnet(1, 24, "198.51.100.0"))
	twoOPT.Extra = append(twoOPT.Extra, &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT, Class: 1232}})
	tests := []struct {
		name string
		opts Options
		msg  *dns.Msg
		want int
	}{
		{"two OPT records", Options{}, twoOPT, dns.RcodeFormatError},
		{"two OPT records, with ECS", Options{UseECS: true}, twoOPT, dns.RcodeFormatError},
		{"ECS address padded beyond its prefix", Options{UseECS: true}, wire(ecsQuery("www.example.org.", dns.TypeA, subnet(1, 8, "10.0.0.0")), padded), dns.RcodeFormatError},
		{"ECS address of the octets its prefix needs", Options{UseECS: true}, wire(ecsQuery("www.example.org.", dns.TypeA, subnet(1, 8, "10.0.0.0")), nil), dns.RcodeSuccess},
		{"padded ECS, ECS off: ignored", Options{}, wire(ecsQuery("www.example.org.", dns.TypeA, subnet(1, 8, "10.0.0.0")), padded), dns.RcodeSuccess},
		{"ECS and a cookie, as read", Options{UseECS: true}, wire(func() *dns.Msg {
			m := ecsQuery("www.example.org.", dns.TypeA, subnet(1, 24, "198.51.100.0"))
			m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: "0123456789abcdef"})
			return m
		}(), nil), dns.RcodeSuccess},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := Respond(snap, tt.opts, Query{Msg: tt.msg, Source: testClient})
			if r.Rcode != tt.want {
				t.Fatalf("rcode %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[tt.want])
			}
			if _, err := r.Pack(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
