package answer

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
)

// recordNamed returns the record of snap named name.
func recordNamed(t *testing.T, snap *catalog.Snapshot, name string) *catalog.Record {
	t.Helper()
	for _, r := range snap.Records() {
		if r.Name() == name {
			return r
		}
	}
	t.Fatalf("no record %s", name)
	return nil
}

func TestAnswerCounts(t *testing.T) {
	snap, _ := testSnapshot(t)
	for _, c := range []struct {
		name           string
		qname          string
		qtype          uint16
		record         string
		answered, fail uint64
		selected       map[string]uint64 // backend address -> count
	}{
		{"failover A", "www.example.org.", dns.TypeA, "www.example.org.", 1, 0, map[string]uint64{"10.0.0.1": 1, "10.0.0.2": 0, "2001:db8::1": 0}},
		{"failover AAAA", "www.example.org.", dns.TypeAAAA, "www.example.org.", 1, 0, map[string]uint64{"10.0.0.1": 0, "2001:db8::1": 1}},
		{"NODATA is no address answer", "www.example.org.", dns.TypeMX, "www.example.org.", 0, 0, map[string]uint64{"10.0.0.1": 0}},
		{"fail-closed", "closed.example.org.", dns.TypeA, "closed.example.org.", 0, 1, map[string]uint64{"10.4.0.1": 0}},
		{"host name first: its CNAME", "cdn.example.org.", dns.TypeA, "cdn.example.org.", 1, 0, map[string]uint64{"edge.cdn.example.net": 1, "10.2.0.1": 0}},
		{"wildcard", "x.app.example.org.", dns.TypeA, "*.app.example.org.", 1, 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			snap, _ := testSnapshot(t)
			if _, res := ask(snap, Options{Count: true}, c.qname, c.qtype); res != Answered {
				t.Fatalf("result %v", res)
			}
			rec := recordNamed(t, snap, c.record)
			if ok, fail := rec.Answers(); ok != c.answered || fail != c.fail {
				t.Errorf("answers = %d, %d failed; want %d, %d", ok, fail, c.answered, c.fail)
			}
			for _, b := range rec.Backends {
				if want, ok := c.selected[b.Config.Address]; ok && rec.Selected(b) != want {
					t.Errorf("backend %s selected %d times, want %d", b.Config.Address, rec.Selected(b), want)
				}
			}
		})
	}

	// Without Count (coredns_gslb_metrics off) nothing is counted.
	uncounted, _ := testSnapshot(t)
	if _, res := ask(uncounted, Options{}, "www.example.org.", dns.TypeA); res != Answered {
		t.Fatalf("result %v", res)
	}
	if ok, _ := recordNamed(t, uncounted, "www.example.org.").Answers(); ok != 0 {
		t.Errorf("counted %d answers without Count", ok)
	}

	// Explain answers like Respond but counts nothing.
	m := new(dns.Msg)
	m.SetQuestion("www.example.org.", dns.TypeA)
	Explain(snap, Options{}, Query{Msg: m, Source: testClient})
	if ok, _ := recordNamed(t, snap, "www.example.org.").Answers(); ok != 0 {
		t.Errorf("Explain counted %d answers", ok)
	}
}

// TestAnswerCountsAllocateNothing checks that counting adds no allocation to the query path:
// Respond allocates what the same answer without counting does (the response's own).
func TestAnswerCountsAllocateNothing(t *testing.T) {
	snap, _ := testSnapshot(t)
	for _, c := range []struct {
		qname string
		qtype uint16
	}{
		{"www.example.org.", dns.TypeA}, {"www.example.org.", dns.TypeAAAA}, {"hashed.example.org.", dns.TypeA},
		{"x.app.example.org.", dns.TypeA}, {"checked.example.org.", dns.TypeA}, {"closed.example.org.", dns.TypeA},
		{"cdn.example.org.", dns.TypeA},
	} {
		q := new(dns.Msg)
		q.SetQuestion(c.qname, c.qtype)
		query := Query{Msg: q, Source: testClient}
		counted := testing.AllocsPerRun(200, func() { Respond(snap, Options{Count: true}, query) })
		uncounted := testing.AllocsPerRun(200, func() { respond(snap, &Options{}, &query, false, false) })
		if counted != uncounted {
			t.Errorf("%s %s: %v allocations counted, %v without counting", c.qname, dns.TypeToString[c.qtype], counted, uncounted)
		}
	}
	if ok, _ := recordNamed(t, snap, "www.example.org.").Answers(); ok < 400 {
		t.Errorf("www.example.org. counted %d answers of at least 400", ok)
	}
}

// TestTrafficCounts: with traffic_shares (Options.Traffic), a counted answer adds its TTL to
// the traffic of each backend it carries, by either path, and for a geo record to the
// client's country's; counted without it (CoreDNS-GSLB's metrics alone), it adds none.
func TestTrafficCounts(t *testing.T) {
	for _, traffic := range []bool{true, false} {
		t.Run(fmt.Sprint("traffic=", traffic), func(t *testing.T) {
			snap, _ := geoSnapshot(t)
			src := geoSources(t)
			rec := recordNamed(t, snap, "single.example.org.")
			opts := Options{Count: true, Traffic: traffic}
			q := new(dns.Msg)
			q.SetQuestion("single.example.org.", dns.TypeA)
			Respond(snap, opts, Query{Msg: q, Source: netip.MustParseAddr("198.51.100.7"), Geo: src})
			if _, ok := AppendFast(nil, snap, &opts, pack(t, q), netip.MustParseAddr("203.0.113.9"), false, src, time.Time{}); !ok {
				t.Fatal("the fast path did not answer")
			}
			if got := rec.Selected(rec.Backends[0]); got != 2 {
				t.Errorf("selected %d times, want 2", got)
			}
			ttl := uint64(rec.View().TTL[catalog.IPv4])
			wantTraffic, wantCountries := 2*ttl, fmt.Sprintf("[FR %d US %d]", ttl, ttl)
			if !traffic {
				wantTraffic, wantCountries = 0, "[]"
			}
			if got := rec.Traffic(rec.Backends[0]); got != wantTraffic {
				t.Errorf("traffic %d, want %d", got, wantTraffic)
			}
			var got []string
			rec.TrafficByCountry(func(country string, _ *catalog.Backend, seconds uint64) {
				got = append(got, fmt.Sprintf("%s %d", country, seconds))
			})
			if fmt.Sprint(got) != wantCountries {
				t.Errorf("by country %v, want %s", got, wantCountries)
			}
		})
	}
}
