package answer

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/cookie"
	"github.com/meridian-gslb/meridian/internal/dnssec"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/published"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// fastDeterministic are records whose answer is a function of the query and health: the
// fuzz target's zone.
var fastDeterministic = `
soa: {mname: ns1.example.org., rname: hostmaster.example.org., ttl: 3600, minimum: 60}
ns: [ns1.example.org.]
static:
  "@": ["MX 10 mail", "TXT \"v=spf1 -all\"", "CAA 0 issue \"letsencrypt.org\""]
  sub: ["NS ns1.sub", "DS 12345 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF"]
  ns1.sub: ["A 192.0.2.53"]
  gsub: ["NS ns1.gsub", "NS gslb-ns", "NS ns.other.net."]
  ns1.gsub: ["A 192.0.2.54", "AAAA 2001:db8::54"]
  www: ["TXT \"static text\""]
  mail: ["300 A 192.0.2.25", "300 A 192.0.2.26"]
  v6: ["AAAA 2001:db8::25", "AAAA 2001:db8::26"]
  alias: ["CNAME www"]
  upper: ["CNAME Target.Example.NET."]
  svc: ["HTTPS 1 . alpn=h2 port=8443", "SVCB 0 svc2.example.org."]
  _sip._tcp: ["SRV 10 5 5060 sip.example.org."]
  ptr: ["PTR host.example.org."]
healthcheck_profiles:
  tcp80: {type: tcp, params: {port: 80}}
records:
  example.org.: {backends: [{address: 192.0.2.1}]}
  www.example.org.:
    mode: failover
    record_ttl: 42
    backends:
      - {address: 10.0.0.1, priority: 1}
      - {address: 10.0.0.2, priority: 2}
      - {address: "2001:db8::1", priority: 1}
      - {address: "2001:db8::2", priority: 1}
  hashed.example.org.:
    mode: ip-hash
    backends: [{address: 10.1.0.1}, {address: 10.1.0.2}, {address: 10.1.0.3}, {address: "2001:db8:1::1"}, {address: "2001:db8:1::2"}]
  consistent.example.org.:
    mode: consistent-hash
    hash_prefix_v4: 24
    hash_prefix_v6: 56
    backends: [{address: 10.2.0.1}, {address: 10.2.0.2}, {address: 10.2.0.3}, {address: "2001:db8:2::1"}, {address: "2001:db8:2::2"}]
  geo.example.org.:
    mode: geoip
    backends:
      - {address: 172.16.0.10, country: US, subdivision: CA, city: San Jose}
      - {address: 172.16.0.13, continent: EU}
      - {address: 172.16.0.20, location: lab}
      - {address: "2001:db8:16::10", country: US}
      - {address: "2001:db8:16::13", continent: EU}
  chain.example.org.:
    mode: chain
    chain: [priority, hash]
    backends:
      - {address: 10.3.0.1, priority: 1}
      - {address: 10.3.0.2, priority: 1}
      - {address: 10.3.0.3, priority: 2}
  checked.example.org.:
    mode: failover
    backends:
      - {address: 10.4.0.1, priority: 1, healthchecks: [tcp80]}
      - {address: 10.4.0.2, priority: 2, healthchecks: [tcp80]}
      - {address: "2001:db8:4::1", healthchecks: [tcp80]}
  specific.example.org.:
    fallback_policy: {mode: fail-specific, fallback_ips: [192.0.2.98, 192.0.2.99, "2001:db8::99"]}
    backends:
      - {address: 10.5.0.1, healthchecks: [tcp80]}
      - {address: "2001:db8:5::1", healthchecks: [tcp80]}
  specificcname.example.org.:
    fallback_policy: {mode: fail-specific, fallback_cname: backup.cdn.example.net}
    backends: [{address: 10.6.0.1, healthchecks: [tcp80]}]
  closed.example.org.:
    fallback_policy: {mode: fail-closed, rcode: REFUSED}
    backends: [{address: 10.7.0.1, healthchecks: [tcp80]}]
  cdn.example.org.:
    mode: failover
    backends:
      - {address: edge.cdn.example.net, priority: 1}
      - {address: 10.8.0.1, priority: 2}
  v4only.example.org.: {backends: [{address: 10.9.0.1}]}
  "*.app.example.org.": {backends: [{address: 10.10.0.1}]}
  exact_name-1.app.example.org.: {backends: [{address: 10.10.0.2}]}
  many.example.org.:
    backends:
` + backendsYAML(20) + `
  localtargets-own.example.org.: {backends: [{address: 10.11.0.1}]}
  gslb-ns.example.org.: {backends: [{address: 192.0.2.60}, {address: 192.0.2.61}, {address: "2001:db8::60"}]}
  srv.example.org.:
    mode: failover
    backends:
      - {address: 10.40.0.1, port: 443, priority: 1, weight: 5}
      - {address: sip.example.net., port: 5060, priority: 2}
      - {address: "2001:db8:40::1", port: 443, priority: 1}
      - {address: 10.40.0.9, priority: 1}
  hostlater.example.org.:
    mode: failover
    backends: [{address: 10.41.0.1, priority: 1}, {address: later.example.net., priority: 1}]
  https.example.org.:
    alpn: [h2, http/1.1]
    backends: [{address: 10.42.0.1, port: 8443}, {address: 10.42.0.2}, {address: "2001:db8:42::1"}]
  alias-https.example.org.:
    backends: [{address: edge.example.net.}, {address: 10.43.0.1}]
  a.very.long.name.with.many.labels.to.fill.the.packet.example.org.: {backends: [{address: 10.12.0.1}]}
`

// fastRandom are records whose answers rotate or are drawn at random.
var fastRandom = `
  weighted.example.org.:
    mode: weighted
    backends:
      - {address: 10.20.0.1, weight: 1}
      - {address: 10.20.0.2, weight: 2}
      - {address: "2001:db8:20::1", weight: 1}
      - {address: "2001:db8:20::2", weight: 1}
  rr.example.org.:
    mode: roundrobin
    backends: [{address: 10.21.0.1}, {address: 10.21.0.2}, {address: 10.21.0.3}]
  bigrr.example.org.:
    mode: roundrobin
    backends:
` + backendsYAML(bigRotation) + `
  random.example.org.:
    mode: random
    backends: [{address: 10.22.0.1}, {address: 10.22.0.2}, {address: 10.22.0.3}]
`

// backendsYAML lists n backends 10.30.0.1 to 10.30.0.<n>: 20 A records do not fit 512 bytes.
func backendsYAML(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "      - {address: 10.30.0.%d}\n", i)
	}
	return b.String()
}

// bigRotation is how many backends bigrr rotates through: odd, so that a test asking both
// paths in turn sees every answer on each (see TestAppendFastMatchesRespond).
const bigRotation = 21

// The clients of the tests: the San Jose and Paris networks of geoSources, the lab network
// of the location map, and testClient (192.0.2.200), which no source knows.
var (
	sanJose = netip.MustParseAddr("198.51.100.7")
	paris   = netip.MustParseAddr("203.0.113.9")
	lab     = netip.MustParseAddr("10.99.1.2")
	v6      = netip.MustParseAddr("2001:db8:aa::1")
)

// fastSnapshot compiles the fast path's test zone (with the random records when random is
// set), with the fail-specific record's backends down and checked's first backend down, its
// second up, and returns it with GeoIP sources that have a location map.
func fastSnapshot(t testing.TB, random bool) (*catalog.Snapshot, *geo.Sources) {
	t.Helper()
	yaml := fastDeterministic
	if random {
		yaml += fastRandom
	}
	snap, hs := snapshotOf(t, "example.org.yml", yaml)
	return fastStates(t, snap, hs)
}

// fastSnapshotSigned is fastSnapshot signed by signer.
func fastSnapshotSigned(t testing.TB, random bool, signer *dnssec.Signer) (*catalog.Snapshot, *geo.Sources) {
	t.Helper()
	yaml := fastDeterministic
	if random {
		yaml += fastRandom
	}
	snap, hs := signedSnapshot(t, yaml, signer)
	return fastStates(t, snap, hs)
}

// fastStates sets the health of fastSnapshot's backends in snap and opens its GeoIP sources.
func fastStates(t testing.TB, snap *catalog.Snapshot, hs states) (*catalog.Snapshot, *geo.Sources) {
	t.Helper()
	hs.set(t, snap, "specific.example.org.", "10.5.0.1", health.Down)
	hs.set(t, snap, "specific.example.org.", "2001:db8:5::1", health.Down)
	hs.set(t, snap, "checked.example.org.", "10.4.0.1", health.Down)
	hs.set(t, snap, "checked.example.org.", "10.4.0.2", health.Up)
	hs.set(t, snap, "checked.example.org.", "2001:db8:4::1", health.Up)
	src, err := geo.Open(config.GeoIPOptions{
		CityDB: testutil.WriteCityDB(t, []testutil.GeoNetwork{
			{Prefix: "198.51.100.0/24", City: "San Jose", Subdivision: "CA", Country: "US", Continent: "NA", Lat: 37.33, Lon: -121.89},
			{Prefix: "203.0.113.0/25", City: "Paris", Subdivision: "IDF", Country: "FR", Continent: "EU", Lat: 48.85, Lon: 2.35},
		}),
		CustomMap: testutil.WriteFile(t, "locations.yml", "subnets:\n  - subnet: 10.99.0.0/16\n    location: lab\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return snap, src
}

// fastCase is one query of the differential test.
type fastCase struct {
	qname  string
	qtype  uint16
	edns   uint16 // the client's UDP buffer size; 0 for no OPT record
	do, cd bool
	ecs    *dns.EDNS0_SUBNET
	useECS bool
	tcp    bool
	src    netip.Addr // testClient when not set
}

func (c fastCase) String() string {
	s := c.qname + " " + dns.TypeToString[c.qtype]
	if c.edns > 0 {
		s += fmt.Sprintf(" edns=%d", c.edns)
	}
	if c.do {
		s += " do"
	}
	if c.cd {
		s += " cd"
	}
	if c.ecs != nil {
		s += " ecs=" + c.ecs.String()
	}
	if c.useECS {
		s += " use_ecs"
	}
	if c.src.IsValid() {
		s += " from " + c.src.String()
	}
	if c.tcp {
		s += " tcp"
	}
	return s
}

func (c fastCase) client() netip.Addr {
	if c.src.IsValid() {
		return c.src
	}
	return testClient
}

// packet returns the query on the wire.
func (c fastCase) packet(t testing.TB) []byte {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(c.qname, c.qtype)
	m.Id = 0xbeef
	m.CheckingDisabled = c.cd
	switch {
	case c.edns > 0:
		m.SetEdns0(c.edns, c.do)
	case c.ecs != nil:
		m.SetEdns0(advertisedUDPSize, c.do)
	}
	if c.ecs != nil {
		m.IsEdns0().Option = append(m.IsEdns0().Option, c.ecs)
	}
	return pack(t, m)
}

func pack(t testing.TB, m *dns.Msg) []byte {
	t.Helper()
	wire, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return wire
}

// slowWire is the reference: what Respond puts on the wire for pkt (over TCP with tcp), and
// whether it answers: a query it passes on, or whose NXDOMAIN the fallthrough option hands
// to the next plugin, is not answered.
func slowWire(t testing.TB, snap *catalog.Snapshot, opts Options, pkt []byte, src netip.Addr, tcp bool, sources *geo.Sources) ([]byte, bool) {
	t.Helper()
	req := new(dns.Msg)
	if err := req.Unpack(pkt); err != nil {
		return nil, false
	}
	m, res := Respond(snap, opts, Query{Msg: req, Source: src, TCP: tcp, Geo: sources})
	if res == NotOurs || res == NameError && under(opts.Fallthrough, strings.ToLower(req.Question[0].Name)) {
		return nil, false
	}
	return pack(t, m), true
}

// TestAppendFastMatchesRespond answers every kind of query the fast path handles both ways and
// compares the bytes. Each query is asked trials times of each path, alternately, and the
// sets of distinct responses must be equal: for the deterministic modes that is one response
// each; roundrobin's rotation and weighted's and random's draws then show every possible
// answer on both sides (each path turns a rotation of odd length by steps of 2, which covers it; weighted's rarest answer,
// 1 in 4, is missed in 200 draws with a probability of 1e-25).
func TestAppendFastMatchesRespond(t *testing.T) {
	snap, sources := fastSnapshot(t, true)
	const trials = 200
	v4 := func(prefix uint8, addr string) *dns.EDNS0_SUBNET { return subnet(1, prefix, addr) }
	tests := []struct {
		c    fastCase
		want bool // handled by the fast path
	}{
		{fastCase{qname: "www.example.org.", qtype: dns.TypeA}, true},
		{fastCase{qname: "www.example.org.", qtype: dns.TypeAAAA}, true},
		{fastCase{qname: "WwW.ExAmPlE.oRg.", qtype: dns.TypeA}, true},
		{fastCase{qname: "WWW.EXAMPLE.ORG.", qtype: dns.TypeAAAA, edns: 1232}, true},
		{fastCase{qname: "www.example.org.", qtype: dns.TypeA, edns: 4096, do: true}, true},
		{fastCase{qname: "www.example.org.", qtype: dns.TypeA, edns: 100, cd: true}, true},
		{fastCase{qname: "www.example.org.", qtype: dns.TypeA, ecs: v4(24, "198.51.100.0"), useECS: true}, true},
		{fastCase{qname: "www.example.org.", qtype: dns.TypeA, ecs: v4(24, "198.51.100.0")}, false}, // ECS without use_edns_csubnet
		{fastCase{qname: "example.org.", qtype: dns.TypeA, edns: 1232}, true},
		{fastCase{qname: "mail.example.org.", qtype: dns.TypeA}, true}, // static
		{fastCase{qname: "MAIL.example.org.", qtype: dns.TypeA, edns: 1232, do: true}, true},
		{fastCase{qname: "mail.example.org.", qtype: dns.TypeA, ecs: v4(24, "198.51.100.0"), useECS: true}, true},
		{fastCase{qname: "v6.example.org.", qtype: dns.TypeAAAA, edns: 1232}, true},
		{fastCase{qname: "mail.example.org.", qtype: dns.TypeAAAA}, true}, // static NODATA
		{fastCase{qname: "mail.example.org.", qtype: dns.TypeTXT}, true},  // a static name's other types
		{fastCase{qname: "alias.example.org.", qtype: dns.TypeA}, true},   // a static CNAME
		{fastCase{qname: "hashed.example.org.", qtype: dns.TypeA}, true},
		{fastCase{qname: "hashed.example.org.", qtype: dns.TypeA, src: sanJose}, true},
		{fastCase{qname: "hashed.example.org.", qtype: dns.TypeAAAA, src: v6, edns: 1232}, true},
		{fastCase{qname: "hashed.example.org.", qtype: dns.TypeA, ecs: v4(24, "198.51.7.0"), useECS: true}, true},
		{fastCase{qname: "hashed.example.org.", qtype: dns.TypeA, ecs: v4(0, "0.0.0.0"), useECS: true}, true},
		{fastCase{qname: "hashed.example.org.", qtype: dns.TypeA, ecs: &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET}, useECS: true}, true}, // family 0
		{fastCase{qname: "hashed.example.org.", qtype: dns.TypeAAAA, ecs: subnet(2, 56, "2001:db8:77::"), useECS: true}, true},
		{fastCase{qname: "hashed.example.org.", qtype: dns.TypeA, ecs: subnet(2, 128, "::ffff:198.51.100.7"), useECS: true}, true},
		{fastCase{qname: "hashed.example.org.", qtype: dns.TypeA, ecs: v4(32, "198.51.100.7"), useECS: true, do: true}, true},
		{fastCase{qname: "consistent.example.org.", qtype: dns.TypeA, ecs: v4(20, "198.51.96.0"), useECS: true}, true},
		{fastCase{qname: "consistent.example.org.", qtype: dns.TypeA, ecs: v4(28, "198.51.100.16"), useECS: true}, true},
		{fastCase{qname: "consistent.example.org.", qtype: dns.TypeAAAA, src: v6}, true},
		{fastCase{qname: "geo.example.org.", qtype: dns.TypeA, ecs: v4(24, "198.51.100.0"), useECS: true}, true},
		{fastCase{qname: "geo.example.org.", qtype: dns.TypeA, ecs: v4(25, "203.0.113.0"), useECS: true}, true},
		{fastCase{qname: "geo.example.org.", qtype: dns.TypeA, ecs: v4(24, "10.99.1.0"), useECS: true}, true},
		{fastCase{qname: "geo.example.org.", qtype: dns.TypeA, ecs: v4(16, "198.51.0.0"), useECS: true}, true},
		{fastCase{qname: "geo.example.org.", qtype: dns.TypeA, src: lab}, true},
		{fastCase{qname: "geo.example.org.", qtype: dns.TypeA, src: paris, edns: 1232}, true},
		{fastCase{qname: "GEO.example.org.", qtype: dns.TypeAAAA, ecs: v4(24, "198.51.100.0"), useECS: true}, true},
		{fastCase{qname: "geo.example.org.", qtype: dns.TypeAAAA, src: sanJose}, true},
		{fastCase{qname: "chain.example.org.", qtype: dns.TypeA, src: sanJose}, true},
		{fastCase{qname: "chain.example.org.", qtype: dns.TypeA, ecs: v4(24, "203.0.113.0"), useECS: true}, true},
		{fastCase{qname: "checked.example.org.", qtype: dns.TypeA}, true},
		{fastCase{qname: "checked.example.org.", qtype: dns.TypeAAAA, edns: 1232}, true},
		{fastCase{qname: "specific.example.org.", qtype: dns.TypeA}, true},
		{fastCase{qname: "specific.example.org.", qtype: dns.TypeAAAA, ecs: v4(24, "198.51.100.0"), useECS: true}, true},
		{fastCase{qname: "exact_name-1.app.example.org.", qtype: dns.TypeA}, true},
		{fastCase{qname: "a.very.long.name.with.many.labels.to.fill.the.packet.example.org.", qtype: dns.TypeA, edns: 1232}, true},
		{fastCase{qname: "many.example.org.", qtype: dns.TypeA, edns: 1232}, true},
		{fastCase{qname: "many.example.org.", qtype: dns.TypeA}, false},            // 20 records do not fit 512 bytes: truncated
		{fastCase{qname: "many.example.org.", qtype: dns.TypeA, edns: 600}, false}, // nor 600
		{fastCase{qname: "weighted.example.org.", qtype: dns.TypeA}, true},
		{fastCase{qname: "weighted.example.org.", qtype: dns.TypeAAAA, edns: 1232, do: true}, true},
		{fastCase{qname: "rr.example.org.", qtype: dns.TypeA}, true},
		{fastCase{qname: "Rr.Example.Org.", qtype: dns.TypeA, ecs: v4(24, "198.51.100.0"), useECS: true}, true},
		{fastCase{qname: "bigrr.example.org.", qtype: dns.TypeA, edns: 1232}, true},
		{fastCase{qname: "bigrr.example.org.", qtype: dns.TypeA}, false}, // every backend would not fit: the rotation must not turn
		{fastCase{qname: "random.example.org.", qtype: dns.TypeA}, true},
		{fastCase{qname: "cdn.example.org.", qtype: dns.TypeA}, true},           // a host-name backend: CNAME
		{fastCase{qname: "specificcname.example.org.", qtype: dns.TypeA}, true}, // the fallback CNAME
		{fastCase{qname: "closed.example.org.", qtype: dns.TypeA}, true},        // fail-closed
		{fastCase{qname: "v4only.example.org.", qtype: dns.TypeAAAA}, true},     // NODATA
		{fastCase{qname: "foo.app.example.org.", qtype: dns.TypeA}, true},       // a wildcard
		{fastCase{qname: "nope.example.org.", qtype: dns.TypeA}, true},          // NXDOMAIN
		{fastCase{qname: "sub.example.org.", qtype: dns.TypeA}, true},           // a referral
		{fastCase{qname: "host.sub.example.org.", qtype: dns.TypeA}, true},
		{fastCase{qname: "localtargets-own.example.org.", qtype: dns.TypeA}, true}, // no sites: an ordinary name
		{fastCase{qname: "www.example.org.", qtype: dns.TypeTXT}, true},
		{fastCase{qname: "www.example.org.", qtype: dns.TypeA, tcp: true}, true},
		{fastCase{qname: "many.example.org.", qtype: dns.TypeA, tcp: true}, true},
		{fastCase{qname: "bigrr.example.org.", qtype: dns.TypeA, tcp: true}, true},
		// Respond answers these, the fast path leaves them to it.
		{fastCase{qname: "www.example.org.", qtype: dns.TypeANY}, false},
		{fastCase{qname: "sub.example.org.", qtype: dns.TypeDS}, false},
		{fastCase{qname: "example.net.", qtype: dns.TypeA}, false},
	}
	for _, tt := range tests {
		t.Run(tt.c.String(), func(t *testing.T) {
			opts := Options{UseECS: tt.c.useECS}
			pkt := tt.c.packet(t)
			prefix := []byte("prefix")
			fast, slow := map[string]bool{}, map[string]bool{}
			for range trials {
				out, handled := AppendFast(slices.Clone(prefix), snap, &opts, pkt, tt.c.client(), tt.c.tcp, sources, time.Time{})
				if handled != tt.want {
					t.Fatalf("handled %v, want %v", handled, tt.want)
				}
				if !bytes.HasPrefix(out, prefix) || !handled && len(out) != len(prefix) {
					t.Fatalf("dst changed: %q", out)
				}
				if handled {
					fast[string(out[len(prefix):])] = true
				}
				if wire, ok := slowWire(t, snap, opts, pkt, tt.c.client(), tt.c.tcp, sources); ok && handled {
					slow[string(wire)] = true
				} else if handled {
					t.Fatal("handled a query that Respond does not answer")
				}
			}
			if !tt.want {
				return
			}
			for wire := range fast {
				if !slow[wire] {
					t.Errorf("fast path response\n%s\nnot among Respond's:\n%s", unpacked(wire), unpackedSet(slow))
				}
			}
			for wire := range slow {
				if !fast[wire] {
					t.Errorf("Respond's response\n%s\nnever given by the fast path:\n%s", unpacked(wire), unpackedSet(fast))
				}
			}
		})
	}
}

// unpacked shows a response for a failure message.
func unpacked(wire string) string {
	m := new(dns.Msg)
	if err := m.Unpack([]byte(wire)); err != nil {
		return fmt.Sprintf("%x (%v)", wire, err)
	}
	return fmt.Sprintf("%x\n%v", wire, m)
}

func unpackedSet(set map[string]bool) string {
	var out []string
	for wire := range set {
		out = append(out, unpacked(wire))
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// withHeader returns pkt with the 16-bit header field at off set to v.
func withHeader(pkt []byte, off int, v uint16) []byte {
	out := slices.Clone(pkt)
	binary.BigEndian.PutUint16(out[off:], v)
	return out
}

// TestAppendFastLeavesQueriesToRespond lists queries the fast path must not answer, and checks
// that it leaves no trace of them: dst as it was, nothing counted, no record marked queried.
func TestAppendFastLeavesQueriesToRespond(t *testing.T) {
	query := func(name string, qtype uint16, edit func(m *dns.Msg)) func(t testing.TB) []byte {
		return func(t testing.TB) []byte {
			m := new(dns.Msg)
			m.SetQuestion(name, qtype)
			if edit != nil {
				edit(m)
			}
			return pack(t, m)
		}
	}
	www := query("www.example.org.", dns.TypeA, nil)
	withOption := func(opts ...dns.EDNS0) func(m *dns.Msg) {
		return func(m *dns.Msg) {
			m.SetEdns0(1232, false)
			m.IsEdns0().Option = opts
		}
	}
	raw := func(b []byte) func(testing.TB) []byte { return func(testing.TB) []byte { return b } }
	edit := func(base func(testing.TB) []byte, f func([]byte) []byte) func(testing.TB) []byte {
		return func(t testing.TB) []byte { return f(base(t)) }
	}
	enableTXT := func(o *Options) { o.EnableTXT = true }
	tests := []struct {
		name string
		pkt  func(t testing.TB) []byte
		opts func(*Options) // changes the options of the fast path; nil for none
	}{
		{"a wildcard's own name", query("*.app.example.org.", dns.TypeA, nil), nil},
		{"not a served zone", query("www.example.net.", dns.TypeA, nil), nil},
		{"a record named like a published name", query("localtargets-own.example.org.", dns.TypeA, nil), nil},
		{"published name", query("localtargets-www.example.org.", dns.TypeA, nil), nil},
		{"heartbeat", query("heartbeat-us.example.org.", dns.TypeA, nil), nil},
		{"too large for 512 bytes", query("many.example.org.", dns.TypeA, nil), nil},
		{"rotation too large for 512 bytes", query("bigrr.example.org.", dns.TypeA, nil), nil},
		{"ANY", query("www.example.org.", dns.TypeANY, nil), nil},
		{"DS at a delegation", query("sub.example.org.", dns.TypeDS, nil), nil},
		{"DS", query("www.example.org.", dns.TypeDS, nil), nil},
		{"type 0", query("www.example.org.", 0, nil), nil},
		{"type OPT", query("www.example.org.", dns.TypeOPT, nil), nil},
		{"a meta type", query("www.example.org.", dns.TypeMAILA, nil), nil},
		{"TXT with enable_txt", query("hashed.example.org.", dns.TypeTXT, nil), enableTXT},
		{"NXDOMAIN under fallthrough", query("nope.example.org.", dns.TypeA, nil), func(o *Options) { o.Fallthrough = []string{"example.org."} }},
		{"NXDOMAIN under fallthrough of every name", query("nope.example.org.", dns.TypeA, nil), func(o *Options) { o.Fallthrough = []string{"."} }},
		{"a zone of another server block", query("www.example.org.", dns.TypeA, nil), func(o *Options) { o.Exclude = []string{"www.example.org."} }},
		{"below a zone of another server block", query("a.b.app.example.org.", dns.TypeA, nil), func(o *Options) { o.Exclude = []string{"app.example.org."} }},
		{"AXFR", query("www.example.org.", dns.TypeAXFR, nil), nil},
		{"class CH", query("www.example.org.", dns.TypeA, func(m *dns.Msg) { m.Question[0].Qclass = dns.ClassCHAOS }), nil},
		{"class ANY", query("www.example.org.", dns.TypeA, func(m *dns.Msg) { m.Question[0].Qclass = dns.ClassANY }), nil},
		{"NOTIFY", query("www.example.org.", dns.TypeA, func(m *dns.Msg) { m.Opcode = dns.OpcodeNotify }), nil},
		{"UPDATE", query("www.example.org.", dns.TypeA, func(m *dns.Msg) { m.Opcode = dns.OpcodeUpdate }), nil},
		{"a response", query("www.example.org.", dns.TypeA, func(m *dns.Msg) { m.Response = true }), nil},
		{"truncated query", query("www.example.org.", dns.TypeA, func(m *dns.Msg) { m.Truncated = true }), nil},
		{"two questions", query("www.example.org.", dns.TypeA, func(m *dns.Msg) { m.Question = append(m.Question, m.Question[0]) }), nil},
		{"no question", edit(www, func(b []byte) []byte { return withHeader(b, 4, 0)[:headerLen] }), nil},
		{"an answer record", query("www.example.org.", dns.TypeA, func(m *dns.Msg) {
			m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: "www.example.org.", Rrtype: dns.TypeA, Class: dns.ClassINET}, A: []byte{1, 2, 3, 4}}}
		}), nil},
		{"an authority record", query("www.example.org.", dns.TypeA, func(m *dns.Msg) {
			m.Ns = []dns.RR{&dns.NS{Hdr: dns.RR_Header{Name: "example.org.", Rrtype: dns.TypeNS, Class: dns.ClassINET}, Ns: "ns1.example.org."}}
		}), nil},
		{"TSIG", query("www.example.org.", dns.TypeA, func(m *dns.Msg) { m.SetTsig("peer.", dns.HmacSHA256, 300, 1) }), nil},
		{"EDNS and TSIG", query("www.example.org.", dns.TypeA, func(m *dns.Msg) { m.SetEdns0(1232, false); m.SetTsig("peer.", dns.HmacSHA256, 300, 1) }), nil},
		{"two OPT records", query("www.example.org.", dns.TypeA, func(m *dns.Msg) { m.SetEdns0(1232, false); m.SetEdns0(1232, false) }), nil},
		{"EDNS version 1", query("www.example.org.", dns.TypeA, func(m *dns.Msg) { m.SetEdns0(1232, false); m.IsEdns0().SetVersion(1) }), nil},
		{"OPT not at the root", query("www.example.org.", dns.TypeA, func(m *dns.Msg) { m.SetEdns0(1232, false); m.IsEdns0().Hdr.Name = "example.org." }), nil},
		{"a cookie too short", query("www.example.org.", dns.TypeA, withOption(&dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: "01234567"})), nil},
		{"padding", query("www.example.org.", dns.TypeA, withOption(&dns.EDNS0_PADDING{Padding: make([]byte, 8)})), nil},
		{"two cookies", query("www.example.org.", dns.TypeA, withOption(&dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: "0123456789abcdef"}, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: "0123456789abcdef"})), nil},
		{"a cookie too long", query("www.example.org.", dns.TypeA, withOption(&dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: strings.Repeat("ab", 41)})), func(o *Options) {
			o.Cookies = cookie.NewJar(cookie.RandomSecrets())
		}},
		{"two ECS options", query("www.example.org.", dns.TypeA, withOption(subnet(1, 24, "198.51.100.0"), subnet(1, 24, "198.51.100.0"))), nil},
		{"ECS bits beyond the prefix", edit(query("www.example.org.", dns.TypeA, withOption(subnet(1, 24, "198.51.100.0"))), func(b []byte) []byte {
			b[len(b)-5] = 20 // a /20 of 198.51.100: FORMERR
			return b
		}), nil},
		{"ECS with a scope", query("www.example.org.", dns.TypeA, withOption(&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, SourceScope: 24, Address: []byte{198, 51, 100, 0}})), nil},
		{"ECS of family 3", edit(query("www.example.org.", dns.TypeA, withOption(subnet(1, 24, "198.51.100.0"))), func(b []byte) []byte {
			return withHeader(b, len(b)-7, 3)
		}), nil},
		{"ECS address longer than its prefix", edit(query("www.example.org.", dns.TypeA, withOption(subnet(1, 24, "198.51.100.0"))), func(b []byte) []byte {
			b = append(b, 0) // a fourth address byte, counted in the option's and the OPT's lengths
			binary.BigEndian.PutUint16(b[len(b)-10:], 8)
			binary.BigEndian.PutUint16(b[len(b)-14:], 12)
			return b
		}), nil},
		{"trailing bytes", edit(www, func(b []byte) []byte { return append(b, 0) }), nil},
		{"trailing bytes after OPT", edit(query("www.example.org.", dns.TypeA, func(m *dns.Msg) { m.SetEdns0(1232, false) }), func(b []byte) []byte { return append(b, 0, 0) }), nil},
		{"OPT length past the end", edit(query("www.example.org.", dns.TypeA, func(m *dns.Msg) { m.SetEdns0(1232, false) }), func(b []byte) []byte { return withHeader(b, len(b)-2, 4) }), nil},
		{"missing OPT", edit(www, func(b []byte) []byte { return withHeader(b, 10, 1) }), nil},
		{"cut in the question", edit(www, func(b []byte) []byte { return b[:len(b)-3] }), nil},
		{"cut in the name", edit(www, func(b []byte) []byte { return b[:headerLen+5] }), nil},
		{"header only", edit(www, func(b []byte) []byte { return b[:headerLen] }), nil},
		{"shorter than a header", edit(www, func(b []byte) []byte { return b[:7] }), nil},
		{"empty", raw(nil), nil},
		{"garbage", raw([]byte("\xbe\xef\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\xff\xfe\xfd")), nil},
		{"compressed name", raw([]byte("\xbe\xef\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03www\xc0\x16\x00\x01\x00\x01\x07example\x03org\x00")), nil},
		{"a label with a dot", raw([]byte("\xbe\xef\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07www.exa\x03org\x00\x00\x01\x00\x01")), nil},
		{"a label with a space", raw([]byte("\xbe\xef\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03w w\x07example\x03org\x00\x00\x01\x00\x01")), nil},
		{"extended label type", raw([]byte("\xbe\xef\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x43www\x07example\x03org\x00\x00\x01\x00\x01")), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, sources := fastSnapshot(t, true)
			snap.SetHeartbeat(published.NewServed("us"))
			opts := Options{UseECS: true, Count: true}
			if tt.opts != nil {
				tt.opts(&opts)
			}
			pkt := tt.pkt(t)
			dst := make([]byte, 3, 64)
			if out, handled := AppendFast(dst, snap, &opts, pkt, testClient, false, sources, time.Time{}); handled || len(out) != 3 {
				t.Fatalf("handled %v, %d bytes appended", handled, len(out)-3)
			}
			for _, rec := range snap.Records() {
				if ok, failed := rec.Answers(); ok+failed != 0 || rec.Activity.Queried() {
					t.Errorf("%s: %d answers counted, queried %v", rec.Name(), ok+failed, rec.Activity.Queried())
				}
				for _, be := range rec.Backends {
					if rec.Selected(be) != 0 {
						t.Errorf("%s: backend %s selected %d times", rec.Name(), be.Config.Address, rec.Selected(be))
					}
				}
			}
		})
	}
}

// TestAppendFastKeepsTheRotation: a roundrobin query that the fast path leaves to Respond
// does not turn the rotation, so that Respond's next answer is the next backend.
func TestAppendFastKeepsTheRotation(t *testing.T) {
	snap, sources := fastSnapshot(t, true)
	first, _ := ask(snap, Options{}, "bigrr.example.org.", dns.TypeA)
	pkt := fastCase{qname: "bigrr.example.org.", qtype: dns.TypeA}.packet(t)
	if _, handled := AppendFast(nil, snap, &Options{}, pkt, testClient, false, sources, time.Time{}); handled {
		t.Fatal("handled a query whose answer may not fit")
	}
	second, _ := ask(snap, Options{}, "bigrr.example.org.", dns.TypeA)
	a, b := first.Answer[0].(*dns.A).A.To4(), second.Answer[0].(*dns.A).A.To4()
	if b[3] != a[3]%bigRotation+1 {
		t.Fatalf("Respond answered %v, then %v: the rotation turned in between", a, b)
	}
}

// TestAppendFastCounts: with Count, the fast path counts what Respond counts for the same
// queries: the records' answers, the backends' selections, and the queried mark.
func TestAppendFastCounts(t *testing.T) {
	slowSnap, sources := fastSnapshot(t, false)
	fastSnap, _ := fastSnapshot(t, false)
	opts := Options{UseECS: true, Count: true}
	cases := []fastCase{
		{qname: "www.example.org.", qtype: dns.TypeA},
		{qname: "www.example.org.", qtype: dns.TypeAAAA},
		{qname: "www.example.org.", qtype: dns.TypeAAAA, edns: 1232},
		{qname: "hashed.example.org.", qtype: dns.TypeA, ecs: subnet(1, 24, "198.51.100.0")},
		{qname: "geo.example.org.", qtype: dns.TypeA, ecs: subnet(1, 24, "10.99.0.0")},
		{qname: "specific.example.org.", qtype: dns.TypeA},
		{qname: "checked.example.org.", qtype: dns.TypeA},
		{qname: "many.example.org.", qtype: dns.TypeA, edns: 1232},
	}
	for _, c := range cases {
		pkt := c.packet(t)
		for range 3 {
			if _, handled := AppendFast(nil, fastSnap, &opts, pkt, testClient, false, sources, time.Time{}); !handled {
				t.Fatalf("%s: not handled", c)
			}
			if _, ok := slowWire(t, slowSnap, opts, pkt, testClient, false, sources); !ok {
				t.Fatalf("%s: Respond did not answer", c)
			}
		}
	}
	for i, fastRec := range fastSnap.Records() {
		slowRec := slowSnap.Records()[i]
		fastOK, fastFailed := fastRec.Answers()
		slowOK, slowFailed := slowRec.Answers()
		if fastOK != slowOK || fastFailed != slowFailed || fastRec.Activity.Queried() != slowRec.Activity.Queried() {
			t.Errorf("%s: fast path counted %d answers, %d failed, queried %v; Respond %d, %d, %v",
				fastRec.Name(), fastOK, fastFailed, fastRec.Activity.Queried(), slowOK, slowFailed, slowRec.Activity.Queried())
		}
		if _, seconds := fastRec.Resolutions(false); fastOK > 0 && seconds <= 0 {
			t.Errorf("%s: %d answers took no time", fastRec.Name(), fastOK)
		}
		for j, be := range fastRec.Backends {
			if want := slowRec.Selected(slowRec.Backends[j]); fastRec.Selected(be) != want {
				t.Errorf("%s: backend %s selected %d times, Respond %d", fastRec.Name(), be.Config.Address, fastRec.Selected(be), want)
			}
		}
	}
	if ok, _ := recordNamed(t, fastSnap, "www.example.org.").Answers(); ok != 9 {
		t.Errorf("www.example.org. counted %d answers, want 9", ok)
	}
}

// TestAppendFastAllocatesNothing: answering allocates nothing when dst has room, counting
// or not, with or without ECS and GeoIP, for drawn and rotated answers, static RRsets, the
// apex, denials, referrals, CNAME, SRV and HTTPS answers, over UDP and TCP; in the zone
// signed by Meridian's signer too, where it answers the DO queries whose signatures were
// prepared (signed answers, NODATA with its NSEC record, fail-closed) and leaves the others
// (NXDOMAIN, a wildcard, a referral, SRV and HTTPS) to Respond, also without allocating.
func TestAppendFastAllocatesNothing(t *testing.T) {
	plain, sources := fastSnapshot(t, true)
	signed, _ := fastSnapshotSigned(t, true, signerOf(t, testSigning))
	for _, zone := range []struct {
		name string
		snap *catalog.Snapshot
	}{{"unsigned", plain}, {"signed", signed}} {
		t.Run(zone.name, func(t *testing.T) {
			fastAllocatesNothing(t, zone.snap, sources, zone.snap == signed)
		})
	}
}

// fastAllocatesNothing is TestAppendFastAllocatesNothing in snap (signed: a signed zone).
func fastAllocatesNothing(t *testing.T, snap *catalog.Snapshot, sources *geo.Sources, signed bool) {
	dst := make([]byte, 0, maxFastTCP)
	cases := []fastCase{
		{qname: "weighted.example.org.", qtype: dns.TypeA},
		{qname: "rr.example.org.", qtype: dns.TypeA},
		{qname: "mail.example.org.", qtype: dns.TypeA},
		{qname: "www.example.org.", qtype: dns.TypeA},
		{qname: "WWW.example.org.", qtype: dns.TypeAAAA, edns: 1232, do: true},
		{qname: "geo.example.org.", qtype: dns.TypeA, ecs: subnet(1, 24, "198.51.100.0")},
		{qname: "geo.example.org.", qtype: dns.TypeA, ecs: subnet(1, 24, "10.99.0.0")},
		{qname: "hashed.example.org.", qtype: dns.TypeAAAA, ecs: subnet(2, 56, "2001:db8:77::")},
		{qname: "consistent.example.org.", qtype: dns.TypeA, src: v6},
		{qname: "chain.example.org.", qtype: dns.TypeA},
		{qname: "specific.example.org.", qtype: dns.TypeA},
		{qname: "a.very.long.name.with.many.labels.to.fill.the.packet.example.org.", qtype: dns.TypeA, edns: 1232},
		{qname: "nope.example.org.", qtype: dns.TypeA},
		{qname: "v4only.example.org.", qtype: dns.TypeAAAA, edns: 1232, do: true},
		{qname: "foo.app.example.org.", qtype: dns.TypeA},
		{qname: "www.example.org.", qtype: dns.TypeTXT},
		{qname: "example.org.", qtype: dns.TypeSOA},
		{qname: "example.org.", qtype: dns.TypeNS},
		{qname: "x.gsub.example.org.", qtype: dns.TypeA},
		{qname: "cdn.example.org.", qtype: dns.TypeA},
		{qname: "closed.example.org.", qtype: dns.TypeA},
		{qname: "srv.example.org.", qtype: dns.TypeSRV},
		{qname: "https.example.org.", qtype: dns.TypeHTTPS},
		{qname: "www.example.org.", qtype: dns.TypeA, tcp: true},
	}
	if signed {
		for _, c := range cases {
			c.edns, c.do = 1232, true
			cases = append(cases, c)
		}
	}
	for _, c := range cases {
		pkt := c.packet(t)
		// In the signed zone, the DO queries the fast path leaves to Respond.
		declined := signed && c.do && signedSlow(c)
		for _, count := range []bool{false, true} {
			opts := Options{UseECS: true, Count: count}
			allocs := testing.AllocsPerRun(100, func() {
				if _, handled := AppendFast(dst, snap, &opts, pkt, c.client(), c.tcp, sources, time.Time{}); handled == declined {
					t.Fatalf("%s: handled %v", c, handled)
				}
			})
			if allocs != 0 {
				t.Errorf("%s (count %v): %v allocations", c, count, allocs)
			}
		}
	}
}

// BenchmarkAppendFast measures the fast path for a failover query and an ECS query of a geoip
// record, among others (a weighted draw, static RRsets, denials, a wildcard, a referral, TCP),
// with the reference (Respond, with unpacking and packing) beside them.
// "+count" counts the answers (coredns_gslb_metrics), which reads the clock twice.
func BenchmarkAppendFast(b *testing.B) {
	snap, sources := fastSnapshot(b, true)
	for _, c := range []struct {
		name  string
		q     fastCase
		count bool
	}{
		{"failover/A", fastCase{qname: "www.example.org.", qtype: dns.TypeA}, false},
		{"failover/A+count", fastCase{qname: "www.example.org.", qtype: dns.TypeA}, true},
		{"failover/AAAA+EDNS", fastCase{qname: "www.example.org.", qtype: dns.TypeAAAA, edns: 1232}, false},
		{"geoip/A+ECS", fastCase{qname: "geo.example.org.", qtype: dns.TypeA, ecs: subnet(1, 24, "198.51.100.0")}, false},
		{"geoip/A+ECS+count", fastCase{qname: "geo.example.org.", qtype: dns.TypeA, ecs: subnet(1, 24, "198.51.100.0")}, true},
		{"ip-hash/A+ECS", fastCase{qname: "hashed.example.org.", qtype: dns.TypeA, ecs: subnet(1, 24, "198.51.100.0")}, false},
		{"weighted/A", fastCase{qname: "weighted.example.org.", qtype: dns.TypeA}, false},
		{"static/A", fastCase{qname: "mail.example.org.", qtype: dns.TypeA}, false},
		{"static/TXT", fastCase{qname: "www.example.org.", qtype: dns.TypeTXT}, false},
		{"NXDOMAIN", fastCase{qname: "nope.example.org.", qtype: dns.TypeA}, false},
		{"NODATA/AAAA", fastCase{qname: "v4only.example.org.", qtype: dns.TypeAAAA}, false},
		{"wildcard/A", fastCase{qname: "foo.app.example.org.", qtype: dns.TypeA}, false},
		{"referral", fastCase{qname: "x.gsub.example.org.", qtype: dns.TypeA}, false},
		{"failover/A+TCP", fastCase{qname: "www.example.org.", qtype: dns.TypeA, tcp: true}, false},
	} {
		pkt := c.q.packet(b)
		opts := Options{UseECS: true, Count: c.count}
		b.Run(c.name, func(b *testing.B) {
			dst := make([]byte, 0, advertisedUDPSize)
			b.ReportAllocs()
			for b.Loop() {
				if _, handled := AppendFast(dst, snap, &opts, pkt, c.q.client(), c.q.tcp, sources, time.Time{}); !handled {
					b.Fatal("not handled")
				}
			}
		})
		b.Run(c.name+"/Respond+Pack", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := slowWire(b, snap, opts, pkt, c.q.client(), c.q.tcp, sources); !ok {
					b.Fatal("no answer")
				}
			}
		})
	}
}

// TestFastParseName reads question names as miekg/dns does where it accepts them, the
// longest name included, and refuses what it cannot answer from the wire as sent.
func TestFastParseName(t *testing.T) {
	label := func(n int, c byte) string { return string(rune(n)) + strings.Repeat(string(c), n) }
	longest := label(63, 'a') + label(63, 'B') + label(63, 'c') + label(61, 'D') // 255 bytes with the root
	tests := []struct {
		name string
		wire string // the name in wire form, without its root label
		ok   bool
	}{
		{"plain", "\x03www\x07example\x03org", true},
		{"mixed case, digits, hyphen, underscore", "\x05A-b_9\x07ExAmPlE\x03ORG", true},
		{"root", "", true},
		{"the longest name", longest, true},
		{"a byte too long", longest[:len(longest)-62] + label(62, 'D'), false},
		{"a label too long", label(64, 'a'), false},
		{"a space", "\x03a b", false},
		{"a dot", "\x03a.b", false},
		{"a backslash", "\x03a\\b", false},
		{"a wildcard", "\x01*\x03org", false},
		{"a byte above ASCII", "\x03a\xe9b", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pkt := append([]byte("\xbe\xef\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"+tt.wire+"\x00"), 0, 1, 0, 1)
			var q fastQuery
			if ok := q.parse(pkt, false); ok != tt.ok {
				t.Fatalf("parsed: %v, want %v", ok, tt.ok)
			}
			m := new(dns.Msg)
			err := m.Unpack(pkt)
			if len(tt.wire)+1 > maxNameWire && err == nil {
				t.Fatalf("miekg/dns unpacks a name of %d bytes", len(tt.wire)+1)
			}
			if !tt.ok {
				return
			}
			if err != nil {
				t.Fatalf("miekg/dns does not unpack it: %v", err)
			}
			if got, want := q.lowerName(), strings.ToLower(m.Question[0].Name); got != want {
				t.Fatalf("name %q, want %q", got, want)
			}
			if !bytes.Equal(q.name, []byte(tt.wire+"\x00")) {
				t.Fatalf("wire name %q", q.name)
			}
		})
	}
}

// TestAppendFastUnmapsTheClient: an IPv4 client seen through a dual-stack socket, as an
// IPv4-mapped address, is answered as Respond answers the IPv4 address (gslb.ClientOf
// unmaps it).
func TestAppendFastUnmapsTheClient(t *testing.T) {
	snap, sources := fastSnapshot(t, false)
	for _, name := range []string{"hashed.example.org.", "consistent.example.org.", "geo.example.org."} {
		pkt := fastCase{qname: name, qtype: dns.TypeA}.packet(t)
		fast, handled := AppendFast(nil, snap, &Options{}, pkt, netip.AddrFrom16(sanJose.As16()), false, sources, time.Time{})
		slow, _ := slowWire(t, snap, Options{}, pkt, sanJose, false, sources)
		if !handled || !bytes.Equal(fast, slow) {
			t.Errorf("%s: handled %v,\n%s\nwant\n%s", name, handled, unpacked(string(fast)), unpacked(string(slow)))
		}
	}
}
