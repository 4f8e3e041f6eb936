package proxy

import (
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/answer"
	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

const zoneYAML = `
soa:
  mname: ns1.example.org.
  rname: hostmaster.example.org.
  serial: 2026120101
  ttl: 3600
  minimum: 60
healthcheck_profiles:
  tcp80: {type: tcp, params: {port: 80}}
records:
  www.example.org.:
    record_ttl: 30
    degraded_ttl: 5
    backends:
      - {address: 10.0.0.1, healthchecks: [tcp80]}
      - {address: 10.0.0.2, healthchecks: [tcp80]}
      - {address: 10.0.0.3, healthchecks: [tcp80]}
      - {address: "2001:db8::1", healthchecks: [tcp80]}
      - {address: "2001:db8::2", healthchecks: [tcp80]}
  standby.example.org.:
    mode: failover
    backends:
      - {address: 10.1.0.1, priority: 1, healthchecks: [tcp80]}
      - {address: 10.1.0.2, priority: 2, healthchecks: [tcp80]}
  chain.example.org.:
    mode: chain
    chain: [priority]
    max_answers: 2
    backends:
      - {address: 10.2.0.1, healthchecks: [tcp80]}
      - {address: 10.2.0.2, healthchecks: [tcp80]}
      - {address: 10.2.0.3, healthchecks: [tcp80]}
  open.example.org.:
    backends:
      - {address: 10.3.0.1, healthchecks: [tcp80]}
      - {address: 10.3.0.2, healthchecks: [tcp80]}
  closed.example.org.:
    fallback_policy: {mode: fail-closed, rcode: REFUSED}
    backends:
      - {address: 10.4.0.1, healthchecks: [tcp80]}
  specific.example.org.:
    fallback_policy: {mode: fail-specific, fallback_ips: [192.0.2.1]}
    backends:
      - {address: 10.5.0.1, healthchecks: [tcp80]}
  specificv6.example.org.:
    fallback_policy: {mode: fail-specific, fallback_ips: ["2001:db8::99"]}
    backends:
      - {address: 10.5.0.2, healthchecks: [tcp80]}
  cname.example.org.:
    fallback_policy: {mode: fail-specific, fallback_cname: backup.example.net.}
    backends:
      - {address: 10.5.0.3, healthchecks: [tcp80]}
  ports.example.org.:
    backends:
      - {address: 10.7.0.1, port: 80, healthchecks: [tcp80]}
      - {address: 10.7.0.1, port: 8080, healthchecks: [tcp80]}
      - {address: 10.7.0.2, port: 80, healthchecks: [tcp80]}
  "*.wild.example.org.":
    backends:
      - {address: 10.6.0.1, healthchecks: [tcp80]}
      - {address: 10.6.0.2, healthchecks: [tcp80]}
`

// testSnapshot compiles zoneYAML with every backend's health settable through set.
func testSnapshot(t testing.TB) *catalog.Snapshot {
	t.Helper()
	z, err := config.ParseZone("example.org.yml", []byte(zoneYAML), "example.org.", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Build([]*config.Zone{z}, states{})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// states is a HealthSource of fresh states, one per backend.
type states map[string]*health.State

func (s states) State(key string) *health.State {
	if _, ok := s[key]; !ok {
		s[key] = &health.State{}
	}
	return s[key]
}

// set makes every backend up, except those whose address, or address:port, is in down, and
// refreshes the records.
func set(snap *catalog.Snapshot, down []string) {
	for _, r := range snap.Records() {
		for _, b := range r.Backends {
			st := health.Up
			hostPort := net.JoinHostPort(b.Config.Address, strconv.Itoa(int(b.Config.Port)))
			if slices.Contains(down, b.Config.Address) || slices.Contains(down, hostPort) {
				st = health.Down
			}
			b.State.Set(st)
		}
		r.Refresh()
	}
}

var testClient = netip.MustParseAddr("192.0.2.200")

// upstream returns a NOERROR response to a query of qname and qtype with the answer records
// rrs (zone file lines), as an authoritative server sends it.
func upstream(t testing.TB, qname string, qtype uint16, rrs ...string) (*dns.Msg, *dns.Msg) {
	t.Helper()
	req := new(dns.Msg)
	req.SetQuestion(qname, qtype)
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	for _, s := range rrs {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		m.Answer = append(m.Answer, rr)
	}
	m.Ns = []dns.RR{mustRR(t, "example.org. 3600 IN NS ns1.example.org.")}
	return req, m
}

func mustRR(t testing.TB, s string) dns.RR {
	t.Helper()
	rr, err := dns.NewRR(s)
	if err != nil {
		t.Fatal(err)
	}
	return rr
}

// lines returns rrs as zone file lines with single spaces.
func lines(rrs []dns.RR) []string {
	out := make([]string, len(rrs))
	for i, rr := range rrs {
		out[i] = strings.Join(strings.Fields(rr.String()), " ")
	}
	return out
}

func TestRewrite(t *testing.T) {
	snap := testSnapshot(t)
	sig := "www.example.org. 300 IN RRSIG A 13 3 300 20270101000000 20261201000000 12345 example.org. AAAA"
	tests := []struct {
		name      string
		qname     string
		qtype     uint16
		down      []string
		upstream  []string
		want      []string // the answer section afterwards
		wantRcode int
		changed   bool
	}{
		{
			name: "down backends are left out, TTL capped by the degraded TTL", qname: "www.example.org.", qtype: dns.TypeA, down: []string{"10.0.0.2"},
			upstream: []string{"www.example.org. 300 IN A 10.0.0.1", "www.example.org. 300 IN A 10.0.0.2", "www.example.org. 300 IN A 10.0.0.3"},
			want:     []string{"www.example.org. 5 IN A 10.0.0.1", "www.example.org. 5 IN A 10.0.0.3"}, changed: true,
		},
		{
			name: "ties keep the record's order, not the upstream's", qname: "www.example.org.", qtype: dns.TypeA,
			upstream: []string{"www.example.org. 20 IN A 10.0.0.3", "www.example.org. 20 IN A 10.0.0.1", "www.example.org. 20 IN A 10.0.0.2"},
			want:     []string{"www.example.org. 20 IN A 10.0.0.1", "www.example.org. 20 IN A 10.0.0.2", "www.example.org. 20 IN A 10.0.0.3"}, changed: true,
		},
		{
			name: "a lower upstream TTL is kept, in order nothing changes", qname: "www.example.org.", qtype: dns.TypeA,
			upstream: []string{"www.example.org. 20 IN A 10.0.0.1", "www.example.org. 20 IN A 10.0.0.2"},
			want:     []string{"www.example.org. 20 IN A 10.0.0.1", "www.example.org. 20 IN A 10.0.0.2"},
		},
		{
			name: "the healthy TTL caps a longer upstream TTL", qname: "www.example.org.", qtype: dns.TypeA,
			upstream: []string{"www.example.org. 300 IN A 10.0.0.1"},
			want:     []string{"www.example.org. 30 IN A 10.0.0.1"}, changed: true,
		},
		{
			name: "unmonitored addresses follow the monitored ones in upstream order", qname: "www.example.org.", qtype: dns.TypeA, down: []string{"10.0.0.1"},
			upstream: []string{"www.example.org. 300 IN A 198.51.100.9", "www.example.org. 300 IN A 10.0.0.1", "www.example.org. 300 IN A 198.51.100.8", "www.example.org. 300 IN A 10.0.0.3"},
			want:     []string{"www.example.org. 5 IN A 10.0.0.3", "www.example.org. 5 IN A 198.51.100.9", "www.example.org. 5 IN A 198.51.100.8"}, changed: true,
		},
		{
			name: "none monitored passes unchanged", qname: "www.example.org.", qtype: dns.TypeA, down: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"},
			upstream: []string{"www.example.org. 300 IN A 198.51.100.9", "www.example.org. 300 IN A 198.51.100.8"},
			want:     []string{"www.example.org. 300 IN A 198.51.100.9", "www.example.org. 300 IN A 198.51.100.8"},
		},
		{
			name: "a name no zone file lists passes unchanged", qname: "other.example.org.", qtype: dns.TypeA,
			upstream: []string{"other.example.org. 300 IN A 10.0.0.1"},
			want:     []string{"other.example.org. 300 IN A 10.0.0.1"},
		},
		{
			name: "a name outside the zones passes unchanged", qname: "www.example.net.", qtype: dns.TypeA,
			upstream: []string{"www.example.net. 300 IN A 10.0.0.1"},
			want:     []string{"www.example.net. 300 IN A 10.0.0.1"},
		},
		{
			name: "all monitored down under fail-open, with an unmonitored address", qname: "www.example.org.", qtype: dns.TypeA, down: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"},
			upstream: []string{"www.example.org. 300 IN A 10.0.0.1", "www.example.org. 300 IN A 198.51.100.9"},
			// fail-open answers every enabled backend, 10.0.0.1 among them.
			want: []string{"www.example.org. 5 IN A 10.0.0.1", "www.example.org. 5 IN A 198.51.100.9"}, changed: true,
		},
		{
			name: "all down under fail-open: every enabled backend the upstream has", qname: "open.example.org.", qtype: dns.TypeA, down: []string{"10.3.0.1", "10.3.0.2"},
			upstream: []string{"open.example.org. 60 IN A 10.3.0.2", "open.example.org. 60 IN A 10.3.0.1"},
			want:     []string{"open.example.org. 30 IN A 10.3.0.1", "open.example.org. 30 IN A 10.3.0.2"}, changed: true,
		},
		{
			name: "all down under fail-specific: the fallback IPs", qname: "specific.example.org.", qtype: dns.TypeA, down: []string{"10.5.0.1"},
			upstream: []string{"specific.example.org. 300 IN A 10.5.0.1"},
			want:     []string{"specific.example.org. 30 IN A 192.0.2.1"}, changed: true,
		},
		{
			name: "all down under fail-specific without an IP of the family: NODATA", qname: "specificv6.example.org.", qtype: dns.TypeA, down: []string{"10.5.0.2"},
			upstream: []string{"specificv6.example.org. 300 IN A 10.5.0.2"},
			want:     []string{}, changed: true,
		},
		{
			name: "all down under fail-closed: its rcode", qname: "closed.example.org.", qtype: dns.TypeA, down: []string{"10.4.0.1"},
			upstream: []string{"closed.example.org. 300 IN A 10.4.0.1"},
			want:     []string{}, wantRcode: dns.RcodeRefused, changed: true,
		},
		{
			name: "two backends of one address, both up: the address once", qname: "ports.example.org.", qtype: dns.TypeA,
			upstream: []string{"ports.example.org. 30 IN A 10.7.0.2", "ports.example.org. 30 IN A 10.7.0.1"},
			want:     []string{"ports.example.org. 30 IN A 10.7.0.1", "ports.example.org. 30 IN A 10.7.0.2"}, changed: true,
		},
		{
			name: "two backends of one address: it stays while one is up", qname: "ports.example.org.", qtype: dns.TypeA, down: []string{"10.7.0.1:80"},
			upstream: []string{"ports.example.org. 30 IN A 10.7.0.2", "ports.example.org. 30 IN A 10.7.0.1"},
			want:     []string{"ports.example.org. 30 IN A 10.7.0.1", "ports.example.org. 30 IN A 10.7.0.2"}, changed: true,
		},
		{
			name: "two backends of one address: it goes when both are down", qname: "ports.example.org.", qtype: dns.TypeA, down: []string{"10.7.0.1"},
			upstream: []string{"ports.example.org. 30 IN A 10.7.0.2", "ports.example.org. 30 IN A 10.7.0.1"},
			want:     []string{"ports.example.org. 30 IN A 10.7.0.2"}, changed: true,
		},
		{
			name: "all down under fail-specific with a CNAME, at the end of a chain", qname: "alias.example.org.", qtype: dns.TypeA, down: []string{"10.5.0.3"},
			upstream: []string{"alias.example.org. 300 IN CNAME cname.example.org.", "cname.example.org. 300 IN A 10.5.0.3"},
			want:     []string{"alias.example.org. 300 IN CNAME cname.example.org.", "cname.example.org. 30 IN CNAME backup.example.net."}, changed: true,
		},
		{
			name: "failover answers the best priority only", qname: "standby.example.org.", qtype: dns.TypeA,
			upstream: []string{"standby.example.org. 30 IN A 10.1.0.2", "standby.example.org. 30 IN A 10.1.0.1"},
			want:     []string{"standby.example.org. 30 IN A 10.1.0.1"}, changed: true,
		},
		{
			name: "chain cuts to max_answers", qname: "chain.example.org.", qtype: dns.TypeA,
			upstream: []string{"chain.example.org. 30 IN A 10.2.0.1", "chain.example.org. 30 IN A 10.2.0.2", "chain.example.org. 30 IN A 10.2.0.3"},
			want:     []string{"chain.example.org. 30 IN A 10.2.0.1", "chain.example.org. 30 IN A 10.2.0.2"}, changed: true,
		},
		{
			name: "AAAA by the IPv6 backends", qname: "www.example.org.", qtype: dns.TypeAAAA, down: []string{"2001:db8::1"},
			upstream: []string{"www.example.org. 300 IN AAAA 2001:db8::1", "www.example.org. 300 IN AAAA 2001:db8::2"},
			want:     []string{"www.example.org. 5 IN AAAA 2001:db8::2"}, changed: true,
		},
		{
			name: "mixed families: each RRset by its own family", qname: "www.example.org.", qtype: dns.TypeANY, down: []string{"10.0.0.1", "2001:db8::2"},
			upstream: []string{"www.example.org. 300 IN A 10.0.0.1", "www.example.org. 300 IN AAAA 2001:db8::1", "www.example.org. 300 IN A 10.0.0.2", "www.example.org. 300 IN AAAA 2001:db8::2"},
			want:     []string{"www.example.org. 5 IN A 10.0.0.2", "www.example.org. 5 IN AAAA 2001:db8::1"}, changed: true,
		},
		{
			name: "an IPv4 address in an AAAA record is not the IPv4 backend", qname: "www.example.org.", qtype: dns.TypeAAAA, down: []string{"10.0.0.1"},
			upstream: []string{"www.example.org. 300 IN AAAA ::ffff:10.0.0.1"},
			want:     []string{"www.example.org. 300 IN AAAA ::ffff:10.0.0.1"},
		},
		{
			name: "CNAME chain: the target's RRset is rewritten, the CNAME kept", qname: "alias.example.org.", qtype: dns.TypeA, down: []string{"10.0.0.1"},
			upstream: []string{"alias.example.org. 300 IN CNAME www.example.org.", "www.example.org. 300 IN A 10.0.0.1", "www.example.org. 300 IN A 10.0.0.2"},
			want:     []string{"alias.example.org. 300 IN CNAME www.example.org.", "www.example.org. 5 IN A 10.0.0.2"}, changed: true,
		},
		{
			name: "CNAME chain out of the zones passes unchanged", qname: "www.example.org.", qtype: dns.TypeA,
			upstream: []string{"www.example.org. 300 IN CNAME lb.example.net.", "lb.example.net. 300 IN A 10.0.0.1"},
			want:     []string{"www.example.org. 300 IN CNAME lb.example.net.", "lb.example.net. 300 IN A 10.0.0.1"},
		},
		{
			name: "wildcard record, owner spelling kept", qname: "A.Wild.example.org.", qtype: dns.TypeA, down: []string{"10.6.0.1"},
			upstream: []string{"A.Wild.example.org. 300 IN A 10.6.0.1", "A.Wild.example.org. 300 IN A 10.6.0.2"},
			want:     []string{"A.Wild.example.org. 30 IN A 10.6.0.2"}, changed: true,
		},
		{
			name: "fallback records take the upstream owner spelling", qname: "SPECIFIC.example.org.", qtype: dns.TypeA, down: []string{"10.5.0.1"},
			upstream: []string{"SPECIFIC.example.org. 300 IN A 10.5.0.1"},
			want:     []string{"SPECIFIC.example.org. 30 IN A 192.0.2.1"}, changed: true,
		},
		{
			name: "an RRset between the records of an unchanged one is rewritten", qname: "www.example.org.", qtype: dns.TypeANY,
			upstream: []string{"www.example.org. 20 IN A 198.51.100.9", "chain.example.org. 30 IN A 10.2.0.1", "chain.example.org. 30 IN A 10.2.0.2", "chain.example.org. 30 IN A 10.2.0.3", "www.example.org. 20 IN A 198.51.100.8"},
			want:     []string{"www.example.org. 20 IN A 198.51.100.9", "chain.example.org. 30 IN A 10.2.0.1", "chain.example.org. 30 IN A 10.2.0.2", "www.example.org. 20 IN A 198.51.100.8"}, changed: true,
		},
		{
			name: "a scattered RRset is rewritten in the place of its first record", qname: "www.example.org.", qtype: dns.TypeANY, down: []string{"10.0.0.1"},
			upstream: []string{"www.example.org. 30 IN A 10.0.0.1", "www.example.org. 30 IN AAAA 2001:db8::1", "www.example.org. 30 IN A 10.0.0.2"},
			want:     []string{"www.example.org. 5 IN A 10.0.0.2", "www.example.org. 30 IN AAAA 2001:db8::1"}, changed: true,
		},
		{
			name: "signed answer untouched", qname: "www.example.org.", qtype: dns.TypeA, down: []string{"10.0.0.1"},
			upstream: []string{"www.example.org. 300 IN A 10.0.0.1", "www.example.org. 300 IN A 10.0.0.2", sig},
			want:     []string{"www.example.org. 300 IN A 10.0.0.1", "www.example.org. 300 IN A 10.0.0.2", sig},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set(snap, tt.down)
			req, m := upstream(t, tt.qname, tt.qtype, tt.upstream...)
			before := m.String()
			changed := Rewrite(m, snap, answer.Options{}, Client{Request: req, Source: testClient})
			if got := lines(m.Answer); !slices.Equal(got, tt.want) {
				t.Errorf("answer\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if m.Rcode != tt.wantRcode {
				t.Errorf("rcode %s, want %s", dns.RcodeToString[m.Rcode], dns.RcodeToString[tt.wantRcode])
			}
			if changed != tt.changed {
				t.Errorf("changed = %v, want %v", changed, tt.changed)
			}
			if !changed && m.String() != before {
				t.Errorf("an unchanged message changed:\n%s\nwas\n%s", m, before)
			}
			if !m.Authoritative {
				t.Error("the upstream's AA flag was lost")
			}
			if _, err := m.Pack(); err != nil {
				t.Errorf("the rewritten message does not pack: %v", err)
			}
		})
	}
}

// TestRewriteNegative checks what takes the zone's SOA: fail-closed's rcode, and NODATA.
func TestRewriteNegative(t *testing.T) {
	snap := testSnapshot(t)
	for _, name := range []string{"closed.example.org.", "specificv6.example.org."} {
		t.Run(name, func(t *testing.T) {
			set(snap, []string{"10.4.0.1", "10.5.0.2"})
			req, m := upstream(t, name, dns.TypeA, name+" 300 IN A "+map[string]string{"closed.example.org.": "10.4.0.1", "specificv6.example.org.": "10.5.0.2"}[name])
			Rewrite(m, snap, answer.Options{}, Client{Request: req, Source: testClient})
			if len(m.Ns) != 1 || m.Ns[0].Header().Rrtype != dns.TypeSOA || m.Ns[0].Header().Name != "example.org." {
				t.Fatalf("authority %v, want the zone's SOA", m.Ns)
			}
		})
	}
}

// TestRewritePassesWhole checks the responses Rewrite leaves alone whatever they hold.
func TestRewritePassesWhole(t *testing.T) {
	snap := testSnapshot(t)
	set(snap, []string{"10.0.0.1"})
	tests := []struct {
		name   string
		modify func(*dns.Msg)
	}{
		{"NXDOMAIN", func(m *dns.Msg) { m.Rcode = dns.RcodeNameError }},
		{"SERVFAIL", func(m *dns.Msg) { m.Rcode = dns.RcodeServerFailure }},
		{"truncated", func(m *dns.Msg) { m.Truncated = true }},
		{"a query, not a response", func(m *dns.Msg) { m.Response = false }},
		{"not a QUERY", func(m *dns.Msg) { m.Opcode = dns.OpcodeUpdate }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, m := upstream(t, "www.example.org.", dns.TypeA, "www.example.org. 300 IN A 10.0.0.1", "www.example.org. 300 IN A 10.0.0.2")
			tt.modify(m)
			before := m.String()
			if Rewrite(m, snap, answer.Options{}, Client{Request: req, Source: testClient}) || m.String() != before {
				t.Fatalf("changed:\n%s\nwas\n%s", m, before)
			}
		})
	}
	_, m := upstream(t, "www.example.org.", dns.TypeA, "www.example.org. 300 IN A 10.0.0.1")
	if Rewrite(m, nil, answer.Options{}, Client{}) {
		t.Fatal("changed without a snapshot")
	}
}

// TestRewriteECS checks that the client's EDNS Client Subnet steers the answer, with
// use_edns_csubnet: ip-hash picks by the subnet, not by the transport address.
func TestRewriteECS(t *testing.T) {
	z, err := config.ParseZone("example.org.yml", []byte(`
records:
  hash.example.org.:
    mode: ip-hash
    backends: [{address: 10.9.0.1}, {address: 10.9.0.2}, {address: 10.9.0.3}, {address: 10.9.0.4}]
`), "example.org.", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Build([]*config.Zone{z}, states{})
	if err != nil {
		t.Fatal(err)
	}
	rrs := []string{"hash.example.org. 30 IN A 10.9.0.1", "hash.example.org. 30 IN A 10.9.0.2", "hash.example.org. 30 IN A 10.9.0.3", "hash.example.org. 30 IN A 10.9.0.4"}
	picks := map[string]bool{}
	for i := range 32 {
		req, m := upstream(t, "hash.example.org.", dns.TypeA, rrs...)
		req.SetEdns0(1232, false)
		ecs := &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: netip.AddrFrom4([4]byte{198, 51, byte(i), 0}).AsSlice()}
		req.IsEdns0().Option = append(req.IsEdns0().Option, ecs)
		Rewrite(m, snap, answer.Options{UseECS: true}, Client{Request: req, Source: testClient})
		if len(m.Answer) != 1 {
			t.Fatalf("answer %v, want the one ip-hash picks", m.Answer)
		}
		picks[m.Answer[0].(*dns.A).A.String()] = true
	}
	if len(picks) < 2 {
		t.Fatalf("every subnet got %v: the ECS address did not steer", picks)
	}
}
