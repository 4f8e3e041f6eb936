package policy_test

import (
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/policy"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// selCase is one selection: the candidates (all healthy but those in down), the client and
// the expected answer, scope and deciding stage.
type selCase struct {
	name   string
	mode   config.Mode // geoip when empty
	cands  []policy.GeoCandidate
	down   []int
	client string
	want   []int
	scope  int
	stage  string // the Stage of the last explained step, when set
}

func (c selCase) table() *policy.GeoTable {
	cands := slices.Clone(c.cands)
	for i := range cands {
		cands[i].Healthy = !slices.Contains(c.down, i)
	}
	mode := c.mode
	if mode == "" {
		mode = config.ModeGeoIP
	}
	return policy.PrepareGeo(mode, cands)
}

// runCases checks Select, and that Explain agrees with it, for every case against src.
func runCases(t *testing.T, src *geo.Sources, cases []selCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			table := c.table()
			loc := testutil.Lookup(src, c.client)
			got, scope := table.Select(src, loc, nil)
			ex := table.Explain(src, loc)
			if !slices.Equal(got, c.want) || scope != c.scope {
				t.Errorf("Select = %v scope /%d, want %v scope /%d\n%s", got, scope, c.want, c.scope, ex)
			}
			if !slices.Equal(ex.Picks, got) || ex.Scope != scope {
				t.Errorf("Explain = %v scope /%d, Select = %v scope /%d\n%s", ex.Picks, ex.Scope, got, scope, ex)
			}
			if len(ex.Steps) == 0 {
				t.Fatalf("Explain has no steps")
			}
			last := ex.Steps[len(ex.Steps)-1]
			if c.stage != "" && last.Stage != c.stage {
				t.Errorf("decided by %q, want %q\n%s", last.Stage, c.stage, ex)
			}
			if !slices.Equal(last.Matched, got) {
				t.Errorf("last step matched %v, answer %v\n%s", last.Matched, got, ex)
			}
		})
	}
}

// Coordinates of the test world's places.
var (
	sanJose = policy.GeoCandidate{Lat: 37.3382, Lon: -121.8863, HasCoords: true}
	oakland = policy.GeoCandidate{Lat: 37.8044, Lon: -122.2711, HasCoords: true}
	seattle = policy.GeoCandidate{Lat: 47.6062, Lon: -122.3321, HasCoords: true}
	newYork = policy.GeoCandidate{Lat: 40.7128, Lon: -74.0060, HasCoords: true}
	paris   = policy.GeoCandidate{Lat: 48.8566, Lon: 2.3522, HasCoords: true}
	lyon    = policy.GeoCandidate{Lat: 45.7640, Lon: 4.8357, HasCoords: true}
)

// at returns c placed like place.
func at(place policy.GeoCandidate, c policy.GeoCandidate) policy.GeoCandidate {
	c.Lat, c.Lon, c.HasCoords = place.Lat, place.Lon, place.HasCoords
	return c
}

func TestGeoIPCityHierarchy(t *testing.T) {
	// The reference's "GeoIP city behavior" example.
	ref := []policy.GeoCandidate{
		{Country: "US", Subdivision: "CA", City: "San Jose"},
		{Country: "US", Subdivision: "CA", City: "Oakland"},
		{Country: "CA", Subdivision: "BC", Continent: "NA"},
		{Continent: "EU"},
	}
	runCases(t, testutil.World(t, "city"), []selCase{
		{name: "San Jose client gets the city match", cands: ref, client: "198.51.100.7", want: []int{0}, scope: 24, stage: "city"},
		{name: "city down: subdivision CA", cands: ref, down: []int{0}, client: "198.51.100.7", want: []int{1}, scope: 24, stage: "subdivision"},
		{name: "US down: continent NA", cands: ref, down: []int{0, 1}, client: "198.51.100.7", want: []int{2}, scope: 24, stage: "continent"},
		{name: "only one healthy: no source read", cands: ref, down: []int{0, 1, 2}, client: "198.51.100.7", want: []int{3}, scope: 0, stage: "same answer"},
		{name: "all subdivision matches", cands: ref, client: "10.5.0.1", want: []int{0, 1}, scope: 16, stage: "subdivision"},
		{name: "Paris client: continent EU", cands: ref, client: "10.3.0.1", want: []int{3}, scope: 16, stage: "continent"},
		{name: "IPv6 San Jose client", cands: ref, client: "2001:db8:1::5", want: []int{0}, scope: 48, stage: "city"},
		{name: "IPv4-mapped San Jose client", cands: ref, client: "::ffff:198.51.100.7", want: []int{0}, scope: 120, stage: "city"},
		{name: "unknown client: failover", cands: ref, client: "192.0.2.1", want: []int{0, 1, 2, 3}, scope: 6, stage: "failover"},
		{name: "country without city: country level", cands: []policy.GeoCandidate{{Country: "FR"}, {Country: "DE"}}, client: "10.8.0.1", want: []int{1}, scope: 28, stage: "country"},
		// The reference's "city-based" example; names compare without case.
		{name: "city by name", cands: []policy.GeoCandidate{{City: "Paris"}, {City: "new york"}}, client: "10.2.0.1", want: []int{1}, scope: 16, stage: "city"},
		{name: "city by name, no match: failover", cands: []policy.GeoCandidate{{City: "Paris"}, {City: "New York"}}, client: "10.4.0.1", want: []int{0, 1}, scope: 16, stage: "failover"},
		{name: "a city of another country does not match", cands: []policy.GeoCandidate{{City: "San Jose", Country: "CR"}, {Country: "US", Priority: 1}}, client: "198.51.100.7", want: []int{1}, scope: 24, stage: "country"},
		{name: "a subdivision of another country does not match", cands: []policy.GeoCandidate{{Subdivision: "CA", Country: "ES"}, {Continent: "NA", Priority: 1}}, client: "198.51.100.7", want: []int{1}, scope: 24, stage: "continent"},
		{name: "failover takes the best priority", cands: []policy.GeoCandidate{{Country: "FR", Priority: 2}, {Country: "DE", Priority: 1}, {Country: "JP", Priority: 1}}, client: "10.4.0.1", want: []int{1, 2}, scope: 16, stage: "failover"},
	})
}

func TestGeoIPDistance(t *testing.T) {
	// The reference's "distance-based with coordinates" example, with a third site.
	ref := []policy.GeoCandidate{sanJose, oakland, newYork}
	runCases(t, testutil.World(t, "city"), []selCase{
		{name: "nearest", cands: ref, client: "198.51.100.7", want: []int{0}, scope: 24, stage: "nearest"},
		{name: "nearest down: next nearest", cands: ref, down: []int{0}, client: "198.51.100.7", want: []int{1}, scope: 24, stage: "nearest"},
		{name: "Seattle client: Oakland", cands: ref, client: "10.1.0.1", want: []int{1}, scope: 16, stage: "nearest"},
		{name: "east coast", cands: ref, client: "10.4.0.1", want: []int{2}, scope: 16, stage: "nearest"},
		{name: "IPv6 client", cands: []policy.GeoCandidate{newYork, paris}, client: "2001:db8:3::1", want: []int{1}, scope: 48, stage: "nearest"},
		{name: "same site, same priority: all", cands: []policy.GeoCandidate{newYork, paris, paris}, client: "10.3.0.1", want: []int{1, 2}, scope: 16, stage: "nearest"},
		{name: "same site: best priority", cands: []policy.GeoCandidate{newYork, at(paris, policy.GeoCandidate{Priority: 2}), at(paris, policy.GeoCandidate{Priority: 1}), at(paris, policy.GeoCandidate{Priority: 1})},
			client: "10.3.0.1", want: []int{2, 3}, scope: 16, stage: "nearest"},
		{name: "client without coordinates: hierarchy", cands: []policy.GeoCandidate{newYork, {Country: "FR"}}, client: "10.7.0.1", want: []int{1}, scope: 16, stage: "country"},
		{name: "client without coordinates, no hierarchy: failover", cands: ref, client: "10.7.0.1", want: []int{0, 1, 2}, scope: 16, stage: "failover"},
		{name: "coordinates win over a city match", cands: []policy.GeoCandidate{{City: "Paris"}, newYork}, client: "10.3.0.1", want: []int{1}, scope: 16, stage: "nearest"},
		{name: "every site with coordinates down: hierarchy", cands: []policy.GeoCandidate{paris, {Country: "FR"}, {Country: "US"}}, down: []int{0}, client: "10.3.0.1", want: []int{1}, scope: 16, stage: "country"},
		{name: "unknown client: failover", cands: ref, client: "192.0.2.1", want: []int{0, 1, 2}, scope: 6, stage: "failover"},
	})
}

func TestGeoIPCountryDB(t *testing.T) {
	// The reference's "country-based" example.
	ref := []policy.GeoCandidate{{Country: "FR"}, {Country: "US"}}
	runCases(t, testutil.World(t, "country"), []selCase{
		{name: "FR", cands: ref, client: "192.0.2.1", want: []int{0}, scope: 24, stage: "country"},
		{name: "US", cands: ref, client: "203.0.113.1", want: []int{1}, scope: 24, stage: "country"},
		{name: "DE: failover", cands: ref, client: "10.8.0.1", want: []int{0, 1}, scope: 16, stage: "failover"},
		{name: "continent", cands: []policy.GeoCandidate{{Continent: "AS"}, {Continent: "EU"}}, client: "10.8.200.1", want: []int{1}, scope: 16, stage: "continent"},
		{name: "IPv6", cands: []policy.GeoCandidate{{Country: "JP"}, {Country: "US"}}, client: "2001:db8:9::1", want: []int{0}, scope: 48, stage: "country"},
		{name: "coordinates without a city database: failover", cands: []policy.GeoCandidate{paris, newYork}, client: "192.0.2.1", want: []int{0, 1}, scope: 0, stage: "failover"},
	})
}

func TestGeoIPASN(t *testing.T) {
	// The reference's "ASN-based" example.
	ref := []policy.GeoCandidate{{ASN: 12345}, {ASN: 67890}}
	runCases(t, testutil.World(t, "asn"), []selCase{
		{name: "AS12345", cands: ref, client: "192.0.2.1", want: []int{0}, scope: 25, stage: "asn"},
		{name: "AS67890", cands: ref, client: "203.0.113.200", want: []int{1}, scope: 24, stage: "asn"},
		{name: "other AS: failover", cands: ref, client: "10.9.0.1", want: []int{0, 1}, scope: 16, stage: "failover"},
		{name: "not in the database: failover", cands: ref, client: "192.0.2.200", want: []int{0, 1}, scope: 25, stage: "failover"},
		{name: "first match only", cands: []policy.GeoCandidate{{ASN: 1}, {ASN: 64500}, {ASN: 64500}}, client: "10.9.0.1", want: []int{1}, scope: 16, stage: "asn"},
		{name: "first healthy match", cands: []policy.GeoCandidate{{ASN: 1}, {ASN: 64500}, {ASN: 64500}}, down: []int{1}, client: "10.9.0.1", want: []int{2}, scope: 16, stage: "asn"},
		{name: "alike but for the ASN step", cands: []policy.GeoCandidate{{ASN: 64500}, {ASN: 64500}}, client: "10.9.0.1", want: []int{0}, scope: 16, stage: "asn"},
		{name: "alike, other AS", cands: []policy.GeoCandidate{{ASN: 64500}, {ASN: 64500}}, client: "203.0.113.1", want: []int{0, 1}, scope: 24, stage: "failover"},
	})
}

func TestGeoIPLocationMap(t *testing.T) {
	// The reference's "custom-location-based" example, with locations that match its map.
	ref := []policy.GeoCandidate{{Location: "eu-west"}, {Location: "us-east"}}
	runCases(t, testutil.World(t, "map"), []selCase{
		{name: "eu-west", cands: ref, client: "10.0.0.5", want: []int{0}, scope: 24, stage: "location"},
		{name: "us-east", cands: ref, client: "192.168.1.9", want: []int{1}, scope: 24, stage: "location"},
		{name: "location names compare without case", cands: []policy.GeoCandidate{{Location: "EU-West"}, {Location: "us-east"}}, client: "10.0.0.5", want: []int{0}, scope: 24, stage: "location"},
		{name: "not in the map: failover", cands: ref, client: "172.16.0.1", want: []int{0, 1}, scope: 2, stage: "failover"},
		{name: "IPv6", cands: []policy.GeoCandidate{{Location: "eu-west"}, {Location: "ap-east"}}, client: "2001:db8:9::1", want: []int{1}, scope: 48, stage: "location"},
		{name: "location down: failover", cands: ref, down: []int{0}, client: "10.0.0.5", want: []int{1}, scope: 0, stage: "same answer"},
		{name: "geo fields without databases: failover", cands: []policy.GeoCandidate{{Country: "FR"}, {City: "Paris", Priority: 1}}, client: "10.3.0.1", want: []int{0}, scope: 0, stage: "failover"},
	})
}

func TestGeoIPOrder(t *testing.T) {
	// Every source: city, country, ASN, map, failover, in that order.
	cands := []policy.GeoCandidate{{Country: "JP"}, {ASN: 64500}, {ASN: 64500}, {Location: "ap-east"}, {Priority: 5}}
	runCases(t, testutil.World(t, "city country asn map"), []selCase{
		{name: "country database", cands: cands, client: "10.9.8.7", want: []int{0}, scope: 16, stage: "country"},
		{name: "ASN, first match", cands: cands, down: []int{0}, client: "10.9.8.7", want: []int{1}, scope: 16, stage: "asn"},
		{name: "ASN, next match", cands: cands, down: []int{0, 1}, client: "10.9.8.7", want: []int{2}, scope: 16, stage: "asn"},
		{name: "location map: the scope is the longest network read", cands: cands, down: []int{0, 1, 2}, client: "10.9.8.7", want: []int{3}, scope: 24, stage: "location"},
		{name: "failover", cands: cands, client: "203.0.113.5", want: []int{0, 1, 2, 3}, scope: 24, stage: "failover"},
		{name: "location map after the databases", cands: []policy.GeoCandidate{{Country: "US", Location: "us-east"}, {Country: "FR", Location: "eu-west"}}, client: "10.0.0.7", want: []int{1}, scope: 24, stage: "location"},
		{name: "city database before the map", cands: []policy.GeoCandidate{{Country: "FR"}, {Location: "us-east"}, {Priority: 1}}, client: "10.3.3.3", want: []int{0}, scope: 16, stage: "country"},
		{name: "map after the city database", cands: []policy.GeoCandidate{{Country: "FR"}, {Location: "us-east"}, {Priority: 1}}, down: []int{0}, client: "10.3.3.3", want: []int{1}, scope: 24, stage: "location"},
		{name: "a database read without deciding bounds the scope", cands: []policy.GeoCandidate{{Country: "FR"}, {Country: "US"}}, client: "10.8.0.1", want: []int{0, 1}, scope: 28, stage: "failover"},
		{name: "databases no candidate needs are not read", cands: []policy.GeoCandidate{{Location: "eu-west"}, {Location: "us-east"}}, client: "10.8.0.1", want: []int{0, 1}, scope: 16, stage: "failover"},
		{name: "IPv6 through the country database", cands: cands, client: "2001:db8:9::1", want: []int{0}, scope: 48, stage: "country"},
	})
}

func TestGeoIPAffinity(t *testing.T) {
	// The reference's geoip_affinity example, with a second French site.
	ref := []policy.GeoCandidate{at(seattle, policy.GeoCandidate{Country: "US"}), at(newYork, policy.GeoCandidate{Country: "US"}), at(paris, policy.GeoCandidate{Country: "FR"}), at(lyon, policy.GeoCandidate{Country: "FR"})}
	aff := config.ModeGeoIPAffinity
	runCases(t, testutil.World(t, "city"), []selCase{
		{name: "Chicago: New York", mode: aff, cands: ref, client: "10.4.0.1", want: []int{1}, scope: 16, stage: "nearest"},
		{name: "San Jose: Seattle", mode: aff, cands: ref, client: "198.51.100.7", want: []int{0}, scope: 24, stage: "nearest"},
		{name: "US client nearer Paris: New York", mode: aff, cands: ref, client: "10.6.0.1", want: []int{1}, scope: 16, stage: "nearest"},
		{name: "US client nearer Paris, New York down: Seattle", mode: aff, cands: ref, down: []int{1}, client: "10.6.0.1", want: []int{0}, scope: 16, stage: "failover"},
		{name: "US down: global nearest", mode: aff, cands: ref, down: []int{0, 1}, client: "10.6.0.1", want: []int{2}, scope: 16, stage: "nearest"},
		{name: "geoip mode sends the same client to Paris", cands: ref, client: "10.6.0.1", want: []int{2}, scope: 16, stage: "nearest"},
		{name: "Paris client", mode: aff, cands: ref, client: "10.3.0.1", want: []int{2}, scope: 16, stage: "nearest"},
		{name: "IPv6 Paris client", mode: aff, cands: ref, client: "2001:db8:3::1", want: []int{2}, scope: 48, stage: "nearest"},
		{name: "IPv4-mapped client", mode: aff, cands: ref, client: "::ffff:10.4.0.1", want: []int{1}, scope: 112, stage: "nearest"},
		{name: "client without coordinates: failover in the group", mode: aff, cands: ref, client: "10.7.0.1", want: []int{2, 3}, scope: 16, stage: "failover"},
		{name: "failover in the group takes its best priority", mode: aff,
			cands:  []policy.GeoCandidate{ref[0], ref[1], at(paris, policy.GeoCandidate{Country: "FR", Priority: 2}), at(lyon, policy.GeoCandidate{Country: "FR", Priority: 1})},
			client: "10.7.0.1", want: []int{3}, scope: 16, stage: "failover"},
		{name: "unknown client: global failover", mode: aff, cands: ref, client: "192.0.2.1", want: []int{0, 1, 2, 3}, scope: 6, stage: "failover"},
		{name: "city level", mode: aff, cands: []policy.GeoCandidate{{City: "Chicago", Priority: 3}, at(newYork, policy.GeoCandidate{Country: "US"})}, client: "10.4.0.1", want: []int{0}, scope: 16, stage: "failover"},
		{name: "continent level", mode: aff, cands: []policy.GeoCandidate{at(paris, policy.GeoCandidate{Continent: "EU"}), at(newYork, policy.GeoCandidate{Country: "US"})}, client: "10.7.0.1", want: []int{0}, scope: 16, stage: "failover"},
		{name: "group without coordinates, client with: failover in the group", mode: aff,
			cands: []policy.GeoCandidate{{Country: "US", Priority: 1}, {Country: "US"}, at(paris, policy.GeoCandidate{Country: "FR"})}, client: "10.4.0.1", want: []int{1}, scope: 16, stage: "failover"},
		{name: "coordinates win within the group", mode: aff,
			cands: []policy.GeoCandidate{{Country: "US"}, at(newYork, policy.GeoCandidate{Country: "US", Priority: 1}), at(paris, policy.GeoCandidate{Country: "FR"})}, client: "10.4.0.1", want: []int{1}, scope: 16, stage: "nearest"},
	})
}

func TestGeoIPAffinityPinning(t *testing.T) {
	cands := []policy.GeoCandidate{at(seattle, policy.GeoCandidate{Country: "US", Location: "eu-west"}), at(newYork, policy.GeoCandidate{Country: "US"}), at(paris, policy.GeoCandidate{Country: "FR"})}
	aff := config.ModeGeoIPAffinity
	runCases(t, testutil.World(t, "city map"), []selCase{
		{name: "pinned", mode: aff, cands: cands, client: "10.0.0.5", want: []int{0}, scope: 24, stage: "failover"},
		// Only candidate 0 has a location: with it down, the map is not read.
		{name: "pinned group down: hierarchy, then global", mode: aff, cands: cands, down: []int{0}, client: "10.0.0.5", want: []int{1, 2}, scope: 16, stage: "failover"},
		{name: "not pinned: hierarchy", mode: aff, cands: cands, client: "10.4.0.1", want: []int{1}, scope: 16, stage: "nearest"},
		{name: "pinned group of two sites: nearest within", mode: aff,
			cands: []policy.GeoCandidate{at(seattle, policy.GeoCandidate{Location: "us-east"}), at(newYork, policy.GeoCandidate{Location: "us-east"}), paris}, client: "192.168.1.1", want: []int{0, 1}, scope: 24, stage: "failover"},
	})
	// A client the city database places: the pinned group picks by distance.
	runCases(t, testutil.World(t, "city map"), []selCase{
		{name: "pinned Paris client, two sites", mode: aff,
			cands: []policy.GeoCandidate{at(seattle, policy.GeoCandidate{Location: "us-east"}), at(newYork, policy.GeoCandidate{Location: "us-east"}), paris}, client: "10.3.3.1", want: []int{1}, scope: 24, stage: "nearest"},
		{name: "pinned Paris client, pinned sites down", mode: aff,
			cands: []policy.GeoCandidate{at(seattle, policy.GeoCandidate{Location: "us-east"}), at(newYork, policy.GeoCandidate{Location: "us-east"}), paris, lyon}, down: []int{0, 1}, client: "10.3.3.1", want: []int{2}, scope: 16, stage: "nearest"},
	})
}

func TestGeoIPAffinityCountryDB(t *testing.T) {
	aff := config.ModeGeoIPAffinity
	runCases(t, testutil.World(t, "country"), []selCase{
		{name: "country", mode: aff, cands: []policy.GeoCandidate{{Country: "DE"}, {Country: "JP"}}, client: "10.9.0.1", want: []int{1}, scope: 16, stage: "failover"},
		{name: "continent", mode: aff, cands: []policy.GeoCandidate{{Continent: "EU"}, {Continent: "AS"}}, client: "10.8.0.1", want: []int{0}, scope: 16, stage: "failover"},
		{name: "no coordinates source: failover in the group", mode: aff, cands: []policy.GeoCandidate{at(paris, policy.GeoCandidate{Continent: "EU"}), at(lyon, policy.GeoCandidate{Continent: "EU"}), {Continent: "AS"}}, client: "10.8.0.1", want: []int{0, 1}, scope: 16, stage: "failover"},
	})
}

func TestSelectWithoutSources(t *testing.T) {
	cands := []policy.GeoCandidate{{Healthy: true, Country: "FR", Priority: 1}, {Healthy: true, Country: "US"}, {Healthy: true, Location: "x"}}
	for _, mode := range []config.Mode{config.ModeGeoIP, config.ModeGeoIPAffinity} {
		table := policy.PrepareGeo(mode, cands)
		var loc geo.Location
		var src *geo.Sources
		src.Lookup(netip.MustParseAddr("192.0.2.1"), &loc)
		if got, scope := table.Select(src, &loc, nil); !slices.Equal(got, []int{1, 2}) || scope != 0 {
			t.Errorf("%s: Select = %v /%d", mode, got, scope)
		}
	}
}

func TestSelectScopeZeroWhenTheAnswerCannotDepend(t *testing.T) {
	src := testutil.World(t, "city country asn map")
	alike := policy.GeoCandidate{Healthy: true, Country: "US", City: "Chicago", Location: "eu-west", Lat: 1, Lon: 2, HasCoords: true}
	tests := []struct {
		name  string
		cands []policy.GeoCandidate
		want  []int
	}{
		{"none", nil, nil},
		{"none healthy", []policy.GeoCandidate{{Country: "US"}, {Country: "FR"}}, nil},
		{"one healthy", []policy.GeoCandidate{{Country: "US"}, {Healthy: true, Country: "FR"}}, []int{1}},
		{"alike", []policy.GeoCandidate{alike, {Country: "JP"}, alike}, []int{0, 2}},
	}
	for _, tt := range tests {
		for _, mode := range []config.Mode{config.ModeGeoIP, config.ModeGeoIPAffinity} {
			table := policy.PrepareGeo(mode, tt.cands)
			for _, client := range []string{"10.4.0.1", "10.0.0.1", "10.9.8.7", "2001:db8:3::1"} {
				got, scope := table.Select(src, testutil.Lookup(src, client), nil)
				if !slices.Equal(got, tt.want) || scope != 0 {
					t.Errorf("%s %s %s: Select = %v /%d, want %v /0", tt.name, mode, client, got, scope, tt.want)
				}
			}
		}
	}
}

func TestSelectAppendsToDst(t *testing.T) {
	src := testutil.World(t, "city")
	table := policy.PrepareGeo(config.ModeGeoIP, []policy.GeoCandidate{{Healthy: true, Country: "US"}, {Healthy: true, Country: "FR"}})
	got, _ := table.Select(src, testutil.Lookup(src, "10.3.0.1"), []int{7})
	if !slices.Equal(got, []int{7, 1}) {
		t.Errorf("Select = %v, want [7 1]", got)
	}
}

// selectOnStack answers client the way a query does: the Location and the answer's buffer are
// the caller's locals, and the sources travel with the Location as in the answer package. Both
// locals stay on the stack only if Select lets none of src, loc and dst's array escape: escape
// analysis does not tell a struct's fields apart, so src escaping takes &loc with it.
func selectOnStack(src *geo.Sources, table *policy.GeoTable, client netip.Addr) (n, scope int) {
	var buf [16]int
	var loc geo.Location
	c := struct {
		src *geo.Sources
		loc *geo.Location
	}{src, &loc}
	c.src.Lookup(client, c.loc)
	picks, scope := table.Select(c.src, c.loc, buf[:0])
	return len(picks), scope
}

// TestSelectKeepsCallerLocalsOnStack checks, from the caller's side, that neither dst's backing
// array nor the Location escapes through Select, for every kind of client in both modes.
func TestSelectKeepsCallerLocalsOnStack(t *testing.T) {
	src := testutil.World(t, "city country asn map")
	clients := make([]netip.Addr, len(testutil.WorldClients))
	for i, c := range testutil.WorldClients {
		clients[i] = netip.MustParseAddr(c)
	}
	for _, mode := range []config.Mode{config.ModeGeoIP, config.ModeGeoIPAffinity} {
		table := policy.PrepareGeo(mode, benchCandidates())
		for _, c := range clients {
			selectOnStack(src, table, c) // fills the record cache of Lookup
		}
		n := testing.AllocsPerRun(100, func() {
			for _, c := range clients {
				selectOnStack(src, table, c)
			}
		})
		if n != 0 {
			t.Errorf("%s: a query with its Location and buffer on the stack allocates %v times per run", mode, n)
		}
	}
}

func TestPrepareRejectsOtherModes(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Prepare(failover) did not panic")
		}
	}()
	policy.PrepareGeo(config.ModeFailover, nil)
}

func TestExplain(t *testing.T) {
	src := testutil.World(t, "city country map")
	cands := []policy.GeoCandidate{
		{Healthy: false, Country: "US", Subdivision: "CA", City: "San Jose"},
		{Healthy: true, Country: "US", Subdivision: "CA", City: "Oakland"},
		{Healthy: true, Continent: "NA"},
	}
	ex := policy.PrepareGeo(config.ModeGeoIP, cands).Explain(src, testutil.Lookup(src, "198.51.100.7"))
	want := `geoip for 198.51.100.7: [1], scope /24
  nearest (city database): no healthy candidate sets the fields this step compares
  city (city database, 198.51.100.0/24) "San Jose": skipped 0: not healthy, or disabled; no healthy candidate matches
  subdivision (city database, 198.51.100.0/24) "CA": matched [1]; skipped 0: not healthy, or disabled`
	if got := ex.String(); got != want {
		t.Errorf("Explain:\n%s\nwant:\n%s", got, want)
	}

	affCands := []policy.GeoCandidate{
		at(seattle, policy.GeoCandidate{Healthy: true, Country: "US"}),
		at(newYork, policy.GeoCandidate{Healthy: true, Country: "US"}),
		at(paris, policy.GeoCandidate{Healthy: true, Country: "FR", Location: "eu-west"}),
	}
	ex = policy.PrepareGeo(config.ModeGeoIPAffinity, affCands).Explain(src, testutil.Lookup(src, "10.4.0.1"))
	want = `geoip_affinity for 10.4.0.1: [1], scope /16
  location (location map, 10.4.0.0/14): the client is in no subnet of the map
  city (city database, 10.4.0.0/16) "Chicago": no healthy candidate matches
  subdivision (city database, 10.4.0.0/16) "IL": no healthy candidate matches
  country (city database, 10.4.0.0/16) "US": matched [0 1]; narrowed to these candidates
  nearest (city database, 10.4.0.0/16, within country) "41.8781,-87.6298": matched [1]; 1144 km away`
	if got := ex.String(); got != want {
		t.Errorf("Explain:\n%s\nwant:\n%s", got, want)
	}
	if ex.Mode != config.ModeGeoIPAffinity || ex.Client != netip.MustParseAddr("10.4.0.1") || ex.Steps[4].Group != "country" {
		t.Errorf("Explanation = %+v", ex)
	}

	ex = policy.PrepareGeo(config.ModeGeoIP, cands).Explain(nil, testutil.Lookup(nil, "192.0.2.1"))
	if s := ex.String(); !strings.Contains(s, "lookup (city database): not configured") ||
		!strings.Contains(s, "location (location map): not configured") || !strings.HasSuffix(s, "failover: matched [1 2]") {
		t.Errorf("Explain without sources:\n%s", s)
	}
}

// TestStoreReloadUnderQueries runs lookups and selections while the sources are reloaded; the
// race detector checks the swap.
func TestStoreReloadUnderQueries(t *testing.T) {
	opts := testutil.WorldOptions(t, "city country asn map")
	st, err := geo.NewStore(opts, 0)
	if err != nil {
		t.Fatal(err)
	}
	cityDB, err := os.ReadFile(opts.CityDB)
	if err != nil {
		t.Fatal(err)
	}
	table := policy.PrepareGeo(config.ModeGeoIP, []policy.GeoCandidate{
		{Healthy: true, City: "Paris", Country: "FR"},
		{Healthy: true, Country: "US", Lat: 40.7, Lon: -74, HasCoords: true},
	})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			var loc geo.Location
			dst := make([]int, 0, 4)
			for {
				select {
				case <-stop:
					return
				default:
				}
				src := st.Sources()
				src.Lookup(netip.MustParseAddr("10.3.0.1"), &loc)
				if out, _ := table.Select(src, &loc, dst[:0]); len(out) != 1 || out[0] != 1 {
					t.Errorf("Select = %v", out)
					return
				}
			}
		})
	}
	for range 20 {
		testutil.ReplaceFile(t, opts.CityDB, cityDB)
		if err := st.Reload(); err != nil {
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
}
