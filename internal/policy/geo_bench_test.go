package policy_test

import (
	"net/netip"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/policy"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// benchCandidates is a record of eight sites over three continents.
func benchCandidates() []policy.GeoCandidate {
	return []policy.GeoCandidate{
		at(seattle, policy.GeoCandidate{Healthy: true, Country: "US", Subdivision: "WA", City: "Seattle", Continent: "NA"}),
		at(newYork, policy.GeoCandidate{Healthy: true, Country: "US", Subdivision: "NY", City: "New York", Continent: "NA"}),
		at(sanJose, policy.GeoCandidate{Healthy: false, Country: "US", Subdivision: "CA", City: "San Jose", Continent: "NA"}),
		at(paris, policy.GeoCandidate{Healthy: true, Country: "FR", City: "Paris", Continent: "EU", Location: "eu-west"}),
		at(paris, policy.GeoCandidate{Healthy: true, Country: "FR", City: "Paris", Continent: "EU", Location: "eu-west"}),
		at(lyon, policy.GeoCandidate{Healthy: true, Country: "FR", City: "Lyon", Continent: "EU", Priority: 1}),
		{Healthy: true, Country: "JP", Continent: "AS", ASN: 64500, Location: "ap-east"},
		{Healthy: true, Continent: "AS", ASN: 64501, Priority: 2},
	}
}

func benchLocations(src *geo.Sources) []geo.Location {
	locs := make([]geo.Location, len(testutil.WorldClients))
	for i, c := range testutil.WorldClients {
		src.Lookup(netip.MustParseAddr(c), &locs[i])
	}
	return locs
}

// TestSelectDoesNotAllocate runs every kind of client through both modes, each with and without
// coordinates on the candidates.
func TestSelectDoesNotAllocate(t *testing.T) {
	src := testutil.World(t, "city country asn map")
	locs := benchLocations(src)
	withCoords := benchCandidates()
	without := benchCandidates()
	for i := range without {
		without[i].HasCoords = false
	}
	dst := make([]int, 0, 16)
	for _, mode := range []config.Mode{config.ModeGeoIP, config.ModeGeoIPAffinity} {
		for _, cands := range [][]policy.GeoCandidate{withCoords, without} {
			table := policy.PrepareGeo(mode, cands)
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
	src := testutil.World(b, "city country asn map")
	locs := benchLocations(src)
	table := policy.PrepareGeo(mode, benchCandidates())
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
