package axfr

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// states is a HealthSource whose words the test sets.
type states map[string]*health.State

func (s states) State(key string) *health.State {
	if st, ok := s[key]; ok {
		return st
	}
	st := &health.State{}
	s[key] = st
	return st
}

const zoneYAML = `
soa: {mname: ns1.example.org., rname: hostmaster.example.org., serial: 100, ttl: 3600}
ns: [ns1.example.org.]
static:
  "@": ["MX 10 mail"]
  mail: ["A 192.0.2.25"]
records:
  www.example.org.:
    mode: weighted
    backends:
      - {address: 192.0.2.10, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 192.0.2.11, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: "2001:db8::10", healthchecks: [{type: tcp, params: {port: 80}}]}
  down.example.org.:
    fallback_policy: {mode: fail-specific, fallback_ips: [192.0.2.99]}
    backends:
      - {address: 192.0.2.20, healthchecks: [{type: tcp, params: {port: 80}}]}
  alias.example.org.: {backends: [{address: www.example.net.}]}
`

func build(t *testing.T, hs states) *catalog.Snapshot {
	t.Helper()
	z, err := config.ParseZone("example.org.yml", []byte(zoneYAML), "example.org", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Build([]*config.Zone{z}, hs)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// set gives the backend key the status st and refreshes every record.
func set(snap *catalog.Snapshot, hs states, key string, st health.Status) {
	hs.State(key).Set(st)
	for _, r := range snap.Records() {
		r.Refresh()
	}
}

func texts(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		out = append(out, strings.ReplaceAll(rr.String(), "\t", " "))
	}
	return out
}

// TestRecords transfers the SOA first, the NS, the static records, and each record's answer
// for a secondary: every healthy backend (weighted mode's whole set, not one draw), a host
// name's CNAME, and the fallback policy's addresses for a record that is down.
func TestRecords(t *testing.T) {
	hs := states{}
	snap := build(t, hs)
	for _, k := range []string{"www.example.org.|192.0.2.10|0", "www.example.org.|192.0.2.11|0", "www.example.org.|2001:db8::10|0"} {
		set(snap, hs, k, health.Up)
	}
	set(snap, hs, "down.example.org.|192.0.2.20|0", health.Down)
	got := texts(Records(snap, "example.org."))
	want := []string{
		"example.org. 3600 IN SOA ns1.example.org. hostmaster.example.org. 100 7200 3600 1209600 60",
		"example.org. 3600 IN NS ns1.example.org.",
		"example.org. 3600 IN MX 10 mail.example.org.",
		"mail.example.org. 3600 IN A 192.0.2.25",
		"alias.example.org. 30 IN CNAME www.example.net.",
		"down.example.org. 30 IN A 192.0.2.99",
		"www.example.org. 30 IN A 192.0.2.10",
		"www.example.org. 30 IN A 192.0.2.11",
		"www.example.org. 30 IN AAAA 2001:db8::10",
	}
	if !slices.Equal(got, want) {
		t.Errorf("records\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if Records(snap, "example.com.") != nil {
		t.Error("records of a zone the snapshot does not have")
	}
}

// TestVersioner raises a zone's serial when what it transfers changes (a backend going down),
// not when nothing does (a refresh, a reload of the same content), and keeps serials growing:
// at least the clock, and above the file's serial.
func TestVersioner(t *testing.T) {
	hs := states{}
	snap := build(t, hs)
	set(snap, hs, "www.example.org.|192.0.2.10|0", health.Up)
	v := NewVersioner()
	now := time.Unix(1_800_000_000, 0)
	v.now = func() time.Time { return now }
	z := snap.ZoneOf("example.org.")
	steps := []struct {
		name   string
		do     func()
		serial uint32
		raised []string
	}{
		{"first sight: the clock", func() {}, 1_800_000_000, nil},
		{"a refresh that changes nothing", func() { snap.Records()[0].Refresh() }, 1_800_000_000, nil},
		{"a backend down, the same second", func() { set(snap, hs, "www.example.org.|192.0.2.10|0", health.Down) }, 1_800_000_001, []string{"example.org."}},
		{"back up, a minute later", func() {
			now = now.Add(time.Minute)
			set(snap, hs, "www.example.org.|192.0.2.10|0", health.Up)
		}, 1_800_000_060, []string{"example.org."}},
		{"a reload of the same content", func() {
			snap = build(t, hs)
			z = snap.ZoneOf("example.org.")
		}, 1_800_000_060, nil},
	}
	for _, s := range steps {
		s.do()
		v.Update(snap)
		if got := v.Raised(); z.Serial() != s.serial || !slices.Equal(got, s.raised) {
			t.Errorf("%s: serial %d, raised %v; want %d, %v", s.name, z.Serial(), got, s.serial, s.raised)
		}
		if soa := Records(snap, "example.org.")[0].(*dns.SOA); soa.Serial != s.serial {
			t.Errorf("%s: the transfer's SOA has serial %d", s.name, soa.Serial)
		}
	}
}

// TestTransfer: an AXFR ends with the SOA; an IXFR from the current serial or a newer one is
// the SOA alone; from an older one, the whole zone (AXFR-style).
func TestTransfer(t *testing.T) {
	hs := states{}
	snap := build(t, hs)
	full := len(Records(snap, "example.org.")) + 1
	for _, tt := range []struct {
		name   string
		serial uint32
		n      int
	}{{"AXFR", 0, full}, {"IXFR, current", 100, 1}, {"IXFR, newer", 101, 1}, {"IXFR, older", 99, full}, {"IXFR across the wrap", 100 + 1<<31 + 5, full}} {
		rrs, ok := Transfer(snap, "example.org.", tt.serial)
		if !ok || len(rrs) != tt.n || rrs[0].Header().Rrtype != dns.TypeSOA || rrs[len(rrs)-1].Header().Rrtype != dns.TypeSOA {
			t.Errorf("%s: %d records (want %d), first and last SOA: %v", tt.name, len(rrs), tt.n, texts(rrs))
		}
	}
	if _, ok := Transfer(snap, "example.com.", 0); ok {
		t.Error("transferred a zone the snapshot does not have")
	}
}
