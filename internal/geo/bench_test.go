package geo_test

import (
	"net/netip"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
)

// benchClients are clients of every kind: placed with coordinates, placed without, known only
// to the country and ASN databases, in the map, unknown, IPv6 and IPv4-mapped.
var benchClients = []string{"198.51.100.7", "10.4.0.1", "10.6.0.1", "10.7.0.1", "10.9.8.7",
	"10.0.0.5", "203.0.113.9", "192.0.2.1", "2001:db8:3::1", "2001:db8:9::1", "::ffff:10.1.0.1"}

// benchCandidates is a record of eight sites over three continents.
func benchCandidates() []geo.Candidate {
	return []geo.Candidate{
		at(seattle, geo.Candidate{Healthy: true, Country: "US", Subdivision: "WA", City: "Seattle", Continent: "NA"}),
		at(newYork, geo.Candidate{Healthy: true, Country: "US", Subdivision: "NY", City: "New York", Continent: "NA"}),
		at(sanJose, geo.Candidate{Healthy: false, Country: "US", Subdivision: "CA", City: "San Jose", Continent: "NA"}),
		at(paris, geo.Candidate{Healthy: true, Country: "FR", City: "Paris", Continent: "EU", Location: "eu-west"}),
		at(paris, geo.Candidate{Healthy: true, Country: "FR", City: "Paris", Continent: "EU", Location: "eu-west"}),
		at(lyon, geo.Candidate{Healthy: true, Country: "FR", City: "Lyon", Continent: "EU", Priority: 1}),
		{Healthy: true, Country: "JP", Continent: "AS", ASN: 64500, Location: "ap-east"},
		{Healthy: true, Continent: "AS", ASN: 64501, Priority: 2},
	}
}

func benchLocations(src *geo.Sources) []geo.Location {
	locs := make([]geo.Location, len(benchClients))
	for i, c := range benchClients {
		src.Lookup(netip.MustParseAddr(c), &locs[i])
	}
	return locs
}

// TestSelectDoesNotAllocate runs every kind of client through both modes, each with and without
// coordinates on the candidates.
func TestSelectDoesNotAllocate(t *testing.T) {
	src := world(t, "city country asn map")
	locs := benchLocations(src)
	withCoords := benchCandidates()
	without := benchCandidates()
	for i := range without {
		without[i].HasCoords = false
	}
	dst := make([]int, 0, 16)
	for _, mode := range []config.Mode{config.ModeGeoIP, config.ModeGeoIPAffinity} {
		for _, cands := range [][]geo.Candidate{withCoords, without} {
			table := geo.Prepare(mode, cands)
			n := testing.AllocsPerRun(100, func() {
				for i := range locs {
					dst, _ = table.Select(src, &locs[i], dst[:0])
				}
			})
			if n != 0 {
				t.Errorf("%s: Select allocates %v times per run", mode, n)
			}
		}
	}
}

func benchmarkSelect(b *testing.B, mode config.Mode) {
	src := world(b, "city country asn map")
	locs := benchLocations(src)
	table := geo.Prepare(mode, benchCandidates())
	dst := make([]int, 0, 16)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		dst, _ = table.Select(src, &locs[i%len(locs)], dst[:0])
	}
}

// BenchmarkSelectGeoIP is one geoip selection over eight candidates, for a mix of clients.
func BenchmarkSelectGeoIP(b *testing.B) { benchmarkSelect(b, config.ModeGeoIP) }

// BenchmarkSelectAffinity is one geoip_affinity selection over eight candidates, for a mix of
// clients.
func BenchmarkSelectAffinity(b *testing.B) { benchmarkSelect(b, config.ModeGeoIPAffinity) }

// BenchmarkLookup is one Lookup in the four sources, with the records cached.
func BenchmarkLookup(b *testing.B) {
	src := world(b, "city country asn map")
	addrs := make([]netip.Addr, len(benchClients))
	var loc geo.Location
	for i, c := range benchClients {
		addrs[i] = netip.MustParseAddr(c)
		src.Lookup(addrs[i], &loc)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		src.Lookup(addrs[i%len(addrs)], &loc)
	}
}
