package answer

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// geoZone is the reference's San Jose example, every backend probed, plus a record whose only
// healthy backend makes its answer the same for every client.
const geoZone = `
records:
  geo.example.org.:
    mode: geoip
    fallback_policy: {mode: fail-closed}
    backends:
      - {address: 172.16.0.10, country: US, subdivision: CA, city: San Jose, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 172.16.0.11, country: US, subdivision: CA, city: Oakland, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 172.16.0.12, country: CA, subdivision: BC, continent: NA, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 172.16.0.13, continent: EU, healthchecks: [{type: tcp, params: {port: 80}}]}
  single.example.org.:
    mode: geoip
    backends:
      - {address: 172.16.1.1, country: US}
`

// geoSources writes a city database: San Jose clients in 198.51.100.0/24, Paris clients in
// 203.0.113.0/25.
func geoSources(t testing.TB) *geo.Sources {
	t.Helper()
	src, err := geo.Open(config.GeoIPOptions{CityDB: testutil.WriteCityDB(t, []testutil.GeoNetwork{
		{Prefix: "198.51.100.0/24", City: "San Jose", Subdivision: "CA", Country: "US", Continent: "NA", Lat: 37.33, Lon: -121.89},
		{Prefix: "203.0.113.0/25", City: "Paris", Subdivision: "IDF", Country: "FR", Continent: "EU", Lat: 48.85, Lon: 2.35},
	})})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func geoSnapshot(t testing.TB) (*catalog.Snapshot, states) {
	t.Helper()
	return snapshotOf(t, "geo.yml", geoZone)
}

func TestGeoAnswersAndScopes(t *testing.T) {
	snap, hs := geoSnapshot(t)
	src := geoSources(t)
	rec := snap.Records()[0]
	setUp := func(up ...string) {
		for _, b := range rec.Backends {
			st := health.Down
			if slices.Contains(up, b.Config.Address) {
				st = health.Up
			}
			hs[b.Key()].Set(st)
		}
		rec.Refresh()
	}
	all := []string{"172.16.0.10", "172.16.0.11", "172.16.0.12", "172.16.0.13"}
	tests := []struct {
		name   string
		qname  string
		up     []string
		ecs    *dns.EDNS0_SUBNET
		want   []string
		rcode  int
		scope  uint8
		noGeos bool // query without the sources
	}{
		{"San Jose client: city", "geo.example.org.", all, subnet(1, 24, "198.51.100.0"), []string{"A 172.16.0.10"}, dns.RcodeSuccess, 24, false},
		{"a longer source prefix is answered with the database network", "geo.example.org.", all, subnet(1, 32, "198.51.100.7"), []string{"A 172.16.0.10"}, dns.RcodeSuccess, 24, false},
		{"a shorter source prefix caps the scope", "geo.example.org.", all, subnet(1, 16, "198.51.0.0"), []string{"A 172.16.0.10", "A 172.16.0.11", "A 172.16.0.12", "A 172.16.0.13"}, dns.RcodeSuccess, 16, false},
		{"San Jose down: subdivision CA", "geo.example.org.", all[1:], subnet(1, 24, "198.51.100.0"), []string{"A 172.16.0.11"}, dns.RcodeSuccess, 24, false},
		{"US down: continent NA", "geo.example.org.", all[2:], subnet(1, 24, "198.51.100.0"), []string{"A 172.16.0.12"}, dns.RcodeSuccess, 24, false},
		{"Paris client: continent EU", "geo.example.org.", all, subnet(1, 24, "203.0.113.0"), []string{"A 172.16.0.13"}, dns.RcodeSuccess, 24, false},
		{"everything down: fail-closed", "geo.example.org.", nil, subnet(1, 24, "198.51.100.0"), nil, dns.RcodeServerFailure, 0, false},
		{"one backend: the answer depends on nobody", "single.example.org.", all, subnet(1, 24, "198.51.100.0"), []string{"A 172.16.1.1"}, dns.RcodeSuccess, 0, false},
		{"no sources: failover over the healthy ones", "geo.example.org.", all[1:], subnet(1, 24, "198.51.100.0"), []string{"A 172.16.0.11", "A 172.16.0.12", "A 172.16.0.13"}, dns.RcodeSuccess, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setUp(tt.up...)
			q := Query{Msg: ecsQuery(tt.qname, dns.TypeA, tt.ecs), Source: testClient, Geo: src}
			if tt.noGeos {
				q.Geo = nil
			}
			r, _ := Respond(snap, Options{UseECS: true}, q)
			if got := rdata(r.Answer); r.Rcode != tt.rcode || !slices.Equal(got, tt.want) {
				t.Fatalf("answer %s %v, want %s %v", dns.RcodeToString[r.Rcode], got, dns.RcodeToString[tt.rcode], tt.want)
			}
			if e := findECS(r); e == nil || e.SourceScope != tt.scope {
				t.Fatalf("reply ECS %v, want scope %d", e, tt.scope)
			}
		})
	}
}

func BenchmarkRespondGeo(b *testing.B) {
	snap, hs := geoSnapshot(b)
	for _, st := range hs {
		st.Set(health.Up)
	}
	for _, r := range snap.Records() {
		r.Refresh()
	}
	src := geoSources(b)
	q := ecsQuery("geo.example.org.", dns.TypeA, subnet(1, 24, "198.51.100.0"))
	b.ReportAllocs()
	for b.Loop() {
		if m, _ := Respond(snap, Options{UseECS: true}, Query{Msg: q, Source: testClient, Geo: src}); len(m.Answer) != 1 {
			b.Fatal("no answer")
		}
	}
}

func TestExplainSaysWhatDecided(t *testing.T) {
	snap, hs := geoSnapshot(t)
	src := geoSources(t)
	rec := snap.Records()[0]
	for _, b := range rec.Backends {
		hs[b.Key()].Set(health.Up)
	}
	hs[rec.Backends[0].Key()].Set(health.Down) // San Jose is down
	rec.Refresh()
	tests := []struct {
		name  string
		q     *dns.Msg
		opts  Options
		check func(t *testing.T, e Explanation)
	}{
		{"geo with ECS", ecsQuery("geo.example.org.", dns.TypeA, subnet(1, 24, "198.51.100.0")), Options{UseECS: true}, func(t *testing.T, e Explanation) {
			text := e.String()
			for _, want := range []string{"EDNS Client Subnet /24", "172.16.0.10: down", "subdivision", "172.16.0.11", "scope /24"} {
				if !strings.Contains(text, want) {
					t.Errorf("explanation lacks %q:\n%s", want, text)
				}
			}
			if e.Client != netip.MustParseAddr("198.51.100.0") || e.Record != "geo.example.org." || e.Mode != "geoip" || len(e.Answer) != 1 {
				t.Errorf("explanation %+v", e)
			}
		}},
		{"ECS ignored when off", ecsQuery("geo.example.org.", dns.TypeA, subnet(1, 24, "198.51.100.0")), Options{}, func(t *testing.T, e Explanation) {
			if e.Client != testClient || !strings.Contains(e.String(), "use_edns_csubnet is off") {
				t.Errorf("explanation:\n%s", e)
			}
		}},
		{"no such name", ecsQuery("nope.example.org.", dns.TypeA, subnet(1, 24, "198.51.100.0")), Options{}, func(t *testing.T, e Explanation) {
			if e.Rcode != "NXDOMAIN" || !strings.Contains(e.String(), "no such name") {
				t.Errorf("explanation:\n%s", e)
			}
		}},
		{"not ours", ecsQuery("example.com.", dns.TypeA, subnet(1, 24, "198.51.100.0")), Options{}, func(t *testing.T, e Explanation) {
			if !strings.Contains(e.String(), "next plugin") {
				t.Errorf("explanation:\n%s", e)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, Explain(snap, tt.opts, Query{Msg: tt.q, Source: testClient, Geo: src}))
		})
	}
}
