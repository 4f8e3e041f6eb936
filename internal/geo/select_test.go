package geo_test

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
)

// selCase is one selection: the candidates (all healthy but those in down), the client and
// the expected answer, scope and deciding stage.
type selCase struct {
	name   string
	mode   config.Mode // geoip when empty
	cands  []geo.Candidate
	down   []int
	client string
	want   []int
	scope  int
	stage  string // the Stage of the last explained step, when set
}

func (c selCase) table() *geo.Table {
	cands := slices.Clone(c.cands)
	for i := range cands {
		cands[i].Healthy = !slices.Contains(c.down, i)
	}
	mode := c.mode
	if mode == "" {
		mode = config.ModeGeoIP
	}
	return geo.Prepare(mode, cands)
}

// runCases checks Select, and that Explain agrees with it, for every case against src.
func runCases(t *testing.T, src *geo.Sources, cases []selCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			table := c.table()
			loc := lookup(src, c.client)
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
	sanJose = geo.Candidate{Lat: 37.3382, Lon: -121.8863, HasCoords: true}
	oakland = geo.Candidate{Lat: 37.8044, Lon: -122.2711, HasCoords: true}
	seattle = geo.Candidate{Lat: 47.6062, Lon: -122.3321, HasCoords: true}
	newYork = geo.Candidate{Lat: 40.7128, Lon: -74.0060, HasCoords: true}
	paris   = geo.Candidate{Lat: 48.8566, Lon: 2.3522, HasCoords: true}
	lyon    = geo.Candidate{Lat: 45.7640, Lon: 4.8357, HasCoords: true}
)

// at returns c placed like place.
func at(place geo.Candidate, c geo.Candidate) geo.Candidate {
	c.Lat, c.Lon, c.HasCoords = place.Lat, place.Lon, place.HasCoords
	return c
}

func TestGeoIPCityHierarchy(t *testing.T) {
	// The reference's "GeoIP city behavior" example.
	ref := []geo.Candidate{
		{Country: "US", Subdivision: "CA", City: "San Jose"},
		{Country: "US", Subdivision: "CA", City: "Oakland"},
		{Country: "CA", Subdivision: "BC", Continent: "NA"},
		{Continent: "EU"},
	}
	runCases(t, world(t, "city"), []selCase{
		{name: "San Jose client gets the city match", cands: ref, client: "198.51.100.7", want: []int{0}, scope: 24, stage: "city"},
		{name: "city down: subdivision CA", cands: ref, down: []int{0}, client: "198.51.100.7", want: []int{1}, scope: 24, stage: "subdivision"},
		{name: "US down: continent NA", cands: ref, down: []int{0, 1}, client: "198.51.100.7", want: []int{2}, scope: 24, stage: "continent"},
		{name: "only one healthy: no source read", cands: ref, down: []int{0, 1, 2}, client: "198.51.100.7", want: []int{3}, scope: 0, stage: "same answer"},
		{name: "all subdivision matches", cands: ref, client: "10.5.0.1", want: []int{0, 1}, scope: 16, stage: "subdivision"},
		{name: "Paris client: continent EU", cands: ref, client: "10.3.0.1", want: []int{3}, scope: 16, stage: "continent"},
		{name: "IPv6 San Jose client", cands: ref, client: "2001:db8:1::5", want: []int{0}, scope: 48, stage: "city"},
		{name: "IPv4-mapped San Jose client", cands: ref, client: "::ffff:198.51.100.7", want: []int{0}, scope: 120, stage: "city"},
		{name: "unknown client: failover", cands: ref, client: "192.0.2.1", want: []int{0, 1, 2, 3}, scope: 6, stage: "failover"},
		{name: "country without city: country level", cands: []geo.Candidate{{Country: "FR"}, {Country: "DE"}}, client: "10.8.0.1", want: []int{1}, scope: 28, stage: "country"},
		// The reference's "city-based" example; names compare without case.
		{name: "city by name", cands: []geo.Candidate{{City: "Paris"}, {City: "new york"}}, client: "10.2.0.1", want: []int{1}, scope: 16, stage: "city"},
		{name: "city by name, no match: failover", cands: []geo.Candidate{{City: "Paris"}, {City: "New York"}}, client: "10.4.0.1", want: []int{0, 1}, scope: 16, stage: "failover"},
		{name: "a city of another country does not match", cands: []geo.Candidate{{City: "San Jose", Country: "CR"}, {Country: "US", Priority: 1}}, client: "198.51.100.7", want: []int{1}, scope: 24, stage: "country"},
		{name: "a subdivision of another country does not match", cands: []geo.Candidate{{Subdivision: "CA", Country: "ES"}, {Continent: "NA", Priority: 1}}, client: "198.51.100.7", want: []int{1}, scope: 24, stage: "continent"},
		{name: "failover takes the best priority", cands: []geo.Candidate{{Country: "FR", Priority: 2}, {Country: "DE", Priority: 1}, {Country: "JP", Priority: 1}}, client: "10.4.0.1", want: []int{1, 2}, scope: 16, stage: "failover"},
	})
}

func TestGeoIPDistance(t *testing.T) {
	// The reference's "distance-based with coordinates" example, with a third site.
	ref := []geo.Candidate{sanJose, oakland, newYork}
	runCases(t, world(t, "city"), []selCase{
		{name: "nearest", cands: ref, client: "198.51.100.7", want: []int{0}, scope: 24, stage: "nearest"},
		{name: "nearest down: next nearest", cands: ref, down: []int{0}, client: "198.51.100.7", want: []int{1}, scope: 24, stage: "nearest"},
		{name: "Seattle client: Oakland", cands: ref, client: "10.1.0.1", want: []int{1}, scope: 16, stage: "nearest"},
		{name: "east coast", cands: ref, client: "10.4.0.1", want: []int{2}, scope: 16, stage: "nearest"},
		{name: "IPv6 client", cands: []geo.Candidate{newYork, paris}, client: "2001:db8:3::1", want: []int{1}, scope: 48, stage: "nearest"},
		{name: "same site, same priority: all", cands: []geo.Candidate{newYork, paris, paris}, client: "10.3.0.1", want: []int{1, 2}, scope: 16, stage: "nearest"},
		{name: "same site: best priority", cands: []geo.Candidate{newYork, at(paris, geo.Candidate{Priority: 2}), at(paris, geo.Candidate{Priority: 1}), at(paris, geo.Candidate{Priority: 1})},
			client: "10.3.0.1", want: []int{2, 3}, scope: 16, stage: "nearest"},
		{name: "client without coordinates: hierarchy", cands: []geo.Candidate{newYork, {Country: "FR"}}, client: "10.7.0.1", want: []int{1}, scope: 16, stage: "country"},
		{name: "client without coordinates, no hierarchy: failover", cands: ref, client: "10.7.0.1", want: []int{0, 1, 2}, scope: 16, stage: "failover"},
		{name: "coordinates win over a city match", cands: []geo.Candidate{{City: "Paris"}, newYork}, client: "10.3.0.1", want: []int{1}, scope: 16, stage: "nearest"},
		{name: "every site with coordinates down: hierarchy", cands: []geo.Candidate{paris, {Country: "FR"}, {Country: "US"}}, down: []int{0}, client: "10.3.0.1", want: []int{1}, scope: 16, stage: "country"},
		{name: "unknown client: failover", cands: ref, client: "192.0.2.1", want: []int{0, 1, 2}, scope: 6, stage: "failover"},
	})
}

func TestGeoIPCountryDB(t *testing.T) {
	// The reference's "country-based" example.
	ref := []geo.Candidate{{Country: "FR"}, {Country: "US"}}
	runCases(t, world(t, "country"), []selCase{
		{name: "FR", cands: ref, client: "192.0.2.1", want: []int{0}, scope: 24, stage: "country"},
		{name: "US", cands: ref, client: "203.0.113.1", want: []int{1}, scope: 24, stage: "country"},
		{name: "DE: failover", cands: ref, client: "10.8.0.1", want: []int{0, 1}, scope: 16, stage: "failover"},
		{name: "continent", cands: []geo.Candidate{{Continent: "AS"}, {Continent: "EU"}}, client: "10.8.200.1", want: []int{1}, scope: 16, stage: "continent"},
		{name: "IPv6", cands: []geo.Candidate{{Country: "JP"}, {Country: "US"}}, client: "2001:db8:9::1", want: []int{0}, scope: 48, stage: "country"},
		{name: "coordinates without a city database: failover", cands: []geo.Candidate{paris, newYork}, client: "192.0.2.1", want: []int{0, 1}, scope: 0, stage: "failover"},
	})
}

func TestGeoIPASN(t *testing.T) {
	// The reference's "ASN-based" example.
	ref := []geo.Candidate{{ASN: 12345}, {ASN: 67890}}
	runCases(t, world(t, "asn"), []selCase{
		{name: "AS12345", cands: ref, client: "192.0.2.1", want: []int{0}, scope: 25, stage: "asn"},
		{name: "AS67890", cands: ref, client: "203.0.113.200", want: []int{1}, scope: 24, stage: "asn"},
		{name: "other AS: failover", cands: ref, client: "10.9.0.1", want: []int{0, 1}, scope: 16, stage: "failover"},
		{name: "not in the database: failover", cands: ref, client: "192.0.2.200", want: []int{0, 1}, scope: 25, stage: "failover"},
		{name: "first match only", cands: []geo.Candidate{{ASN: 1}, {ASN: 64500}, {ASN: 64500}}, client: "10.9.0.1", want: []int{1}, scope: 16, stage: "asn"},
		{name: "first healthy match", cands: []geo.Candidate{{ASN: 1}, {ASN: 64500}, {ASN: 64500}}, down: []int{1}, client: "10.9.0.1", want: []int{2}, scope: 16, stage: "asn"},
		{name: "alike but for the ASN step", cands: []geo.Candidate{{ASN: 64500}, {ASN: 64500}}, client: "10.9.0.1", want: []int{0}, scope: 16, stage: "asn"},
		{name: "alike, other AS", cands: []geo.Candidate{{ASN: 64500}, {ASN: 64500}}, client: "203.0.113.1", want: []int{0, 1}, scope: 24, stage: "failover"},
	})
}

func TestGeoIPLocationMap(t *testing.T) {
	// The reference's "custom-location-based" example, with locations that match its map.
	ref := []geo.Candidate{{Location: "eu-west"}, {Location: "us-east"}}
	runCases(t, world(t, "map"), []selCase{
		{name: "eu-west", cands: ref, client: "10.0.0.5", want: []int{0}, scope: 24, stage: "location"},
		{name: "us-east", cands: ref, client: "192.168.1.9", want: []int{1}, scope: 24, stage: "location"},
		{name: "location names compare without case", cands: []geo.Candidate{{Location: "EU-West"}, {Location: "us-east"}}, client: "10.0.0.5", want: []int{0}, scope: 24, stage: "location"},
		{name: "not in the map: failover", cands: ref, client: "172.16.0.1", want: []int{0, 1}, scope: 2, stage: "failover"},
		{name: "IPv6", cands: []geo.Candidate{{Location: "eu-west"}, {Location: "ap-east"}}, client: "2001:db8:9::1", want: []int{1}, scope: 48, stage: "location"},
		{name: "location down: failover", cands: ref, down: []int{0}, client: "10.0.0.5", want: []int{1}, scope: 0, stage: "same answer"},
		{name: "geo fields without databases: failover", cands: []geo.Candidate{{Country: "FR"}, {City: "Paris", Priority: 1}}, client: "10.3.0.1", want: []int{0}, scope: 0, stage: "failover"},
	})
}

func TestGeoIPOrder(t *testing.T) {
	// Every source: city, country, ASN, map, failover, in that order.
	cands := []geo.Candidate{{Country: "JP"}, {ASN: 64500}, {ASN: 64500}, {Location: "ap-east"}, {Priority: 5}}
	runCases(t, world(t, "city country asn map"), []selCase{
		{name: "country database", cands: cands, client: "10.9.8.7", want: []int{0}, scope: 16, stage: "country"},
		{name: "ASN, first match", cands: cands, down: []int{0}, client: "10.9.8.7", want: []int{1}, scope: 16, stage: "asn"},
		{name: "ASN, next match", cands: cands, down: []int{0, 1}, client: "10.9.8.7", want: []int{2}, scope: 16, stage: "asn"},
		{name: "location map: the scope is the longest network read", cands: cands, down: []int{0, 1, 2}, client: "10.9.8.7", want: []int{3}, scope: 24, stage: "location"},
		{name: "failover", cands: cands, client: "203.0.113.5", want: []int{0, 1, 2, 3}, scope: 24, stage: "failover"},
		{name: "location map after the databases", cands: []geo.Candidate{{Country: "US", Location: "us-east"}, {Country: "FR", Location: "eu-west"}}, client: "10.0.0.7", want: []int{1}, scope: 24, stage: "location"},
		{name: "city database before the map", cands: []geo.Candidate{{Country: "FR"}, {Location: "us-east"}, {Priority: 1}}, client: "10.3.3.3", want: []int{0}, scope: 16, stage: "country"},
		{name: "map after the city database", cands: []geo.Candidate{{Country: "FR"}, {Location: "us-east"}, {Priority: 1}}, down: []int{0}, client: "10.3.3.3", want: []int{1}, scope: 24, stage: "location"},
		{name: "a database read without deciding bounds the scope", cands: []geo.Candidate{{Country: "FR"}, {Country: "US"}}, client: "10.8.0.1", want: []int{0, 1}, scope: 28, stage: "failover"},
		{name: "databases no candidate needs are not read", cands: []geo.Candidate{{Location: "eu-west"}, {Location: "us-east"}}, client: "10.8.0.1", want: []int{0, 1}, scope: 16, stage: "failover"},
		{name: "IPv6 through the country database", cands: cands, client: "2001:db8:9::1", want: []int{0}, scope: 48, stage: "country"},
	})
}

func TestGeoIPAffinity(t *testing.T) {
	// The reference's geoip_affinity example, with a second French site.
	ref := []geo.Candidate{at(seattle, geo.Candidate{Country: "US"}), at(newYork, geo.Candidate{Country: "US"}), at(paris, geo.Candidate{Country: "FR"}), at(lyon, geo.Candidate{Country: "FR"})}
	aff := config.ModeGeoIPAffinity
	runCases(t, world(t, "city"), []selCase{
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
			cands:  []geo.Candidate{ref[0], ref[1], at(paris, geo.Candidate{Country: "FR", Priority: 2}), at(lyon, geo.Candidate{Country: "FR", Priority: 1})},
			client: "10.7.0.1", want: []int{3}, scope: 16, stage: "failover"},
		{name: "unknown client: global failover", mode: aff, cands: ref, client: "192.0.2.1", want: []int{0, 1, 2, 3}, scope: 6, stage: "failover"},
		{name: "city level", mode: aff, cands: []geo.Candidate{{City: "Chicago", Priority: 3}, at(newYork, geo.Candidate{Country: "US"})}, client: "10.4.0.1", want: []int{0}, scope: 16, stage: "failover"},
		{name: "continent level", mode: aff, cands: []geo.Candidate{at(paris, geo.Candidate{Continent: "EU"}), at(newYork, geo.Candidate{Country: "US"})}, client: "10.7.0.1", want: []int{0}, scope: 16, stage: "failover"},
		{name: "group without coordinates, client with: failover in the group", mode: aff,
			cands: []geo.Candidate{{Country: "US", Priority: 1}, {Country: "US"}, at(paris, geo.Candidate{Country: "FR"})}, client: "10.4.0.1", want: []int{1}, scope: 16, stage: "failover"},
		{name: "coordinates win within the group", mode: aff,
			cands: []geo.Candidate{{Country: "US"}, at(newYork, geo.Candidate{Country: "US", Priority: 1}), at(paris, geo.Candidate{Country: "FR"})}, client: "10.4.0.1", want: []int{1}, scope: 16, stage: "nearest"},
	})
}

func TestGeoIPAffinityPinning(t *testing.T) {
	cands := []geo.Candidate{at(seattle, geo.Candidate{Country: "US", Location: "eu-west"}), at(newYork, geo.Candidate{Country: "US"}), at(paris, geo.Candidate{Country: "FR"})}
	aff := config.ModeGeoIPAffinity
	runCases(t, world(t, "city map"), []selCase{
		{name: "pinned", mode: aff, cands: cands, client: "10.0.0.5", want: []int{0}, scope: 24, stage: "failover"},
		// Only candidate 0 has a location: with it down, the map is not read.
		{name: "pinned group down: hierarchy, then global", mode: aff, cands: cands, down: []int{0}, client: "10.0.0.5", want: []int{1, 2}, scope: 16, stage: "failover"},
		{name: "not pinned: hierarchy", mode: aff, cands: cands, client: "10.4.0.1", want: []int{1}, scope: 16, stage: "nearest"},
		{name: "pinned group of two sites: nearest within", mode: aff,
			cands: []geo.Candidate{at(seattle, geo.Candidate{Location: "us-east"}), at(newYork, geo.Candidate{Location: "us-east"}), paris}, client: "192.168.1.1", want: []int{0, 1}, scope: 24, stage: "failover"},
	})
	// A client the city database places: the pinned group picks by distance.
	runCases(t, world(t, "city map"), []selCase{
		{name: "pinned Paris client, two sites", mode: aff,
			cands: []geo.Candidate{at(seattle, geo.Candidate{Location: "us-east"}), at(newYork, geo.Candidate{Location: "us-east"}), paris}, client: "10.3.3.1", want: []int{1}, scope: 24, stage: "nearest"},
		{name: "pinned Paris client, pinned sites down", mode: aff,
			cands: []geo.Candidate{at(seattle, geo.Candidate{Location: "us-east"}), at(newYork, geo.Candidate{Location: "us-east"}), paris, lyon}, down: []int{0, 1}, client: "10.3.3.1", want: []int{2}, scope: 16, stage: "nearest"},
	})
}

func TestGeoIPAffinityCountryDB(t *testing.T) {
	aff := config.ModeGeoIPAffinity
	runCases(t, world(t, "country"), []selCase{
		{name: "country", mode: aff, cands: []geo.Candidate{{Country: "DE"}, {Country: "JP"}}, client: "10.9.0.1", want: []int{1}, scope: 16, stage: "failover"},
		{name: "continent", mode: aff, cands: []geo.Candidate{{Continent: "EU"}, {Continent: "AS"}}, client: "10.8.0.1", want: []int{0}, scope: 16, stage: "failover"},
		{name: "no coordinates source: failover in the group", mode: aff, cands: []geo.Candidate{at(paris, geo.Candidate{Continent: "EU"}), at(lyon, geo.Candidate{Continent: "EU"}), {Continent: "AS"}}, client: "10.8.0.1", want: []int{0, 1}, scope: 16, stage: "failover"},
	})
}

func TestSelectWithoutSources(t *testing.T) {
	cands := []geo.Candidate{{Healthy: true, Country: "FR", Priority: 1}, {Healthy: true, Country: "US"}, {Healthy: true, Location: "x"}}
	for _, mode := range []config.Mode{config.ModeGeoIP, config.ModeGeoIPAffinity} {
		table := geo.Prepare(mode, cands)
		var loc geo.Location
		var src *geo.Sources
		src.Lookup(mustAddr("192.0.2.1"), &loc)
		if got, scope := table.Select(src, &loc, nil); !slices.Equal(got, []int{1, 2}) || scope != 0 {
			t.Errorf("%s: Select = %v /%d", mode, got, scope)
		}
	}
}

func TestSelectScopeZeroWhenTheAnswerCannotDepend(t *testing.T) {
	src := world(t, "city country asn map")
	alike := geo.Candidate{Healthy: true, Country: "US", City: "Chicago", Location: "eu-west", Lat: 1, Lon: 2, HasCoords: true}
	tests := []struct {
		name  string
		cands []geo.Candidate
		want  []int
	}{
		{"none", nil, nil},
		{"none healthy", []geo.Candidate{{Country: "US"}, {Country: "FR"}}, nil},
		{"one healthy", []geo.Candidate{{Country: "US"}, {Healthy: true, Country: "FR"}}, []int{1}},
		{"alike", []geo.Candidate{alike, {Country: "JP"}, alike}, []int{0, 2}},
	}
	for _, tt := range tests {
		for _, mode := range []config.Mode{config.ModeGeoIP, config.ModeGeoIPAffinity} {
			table := geo.Prepare(mode, tt.cands)
			for _, client := range []string{"10.4.0.1", "10.0.0.1", "10.9.8.7", "2001:db8:3::1"} {
				got, scope := table.Select(src, lookup(src, client), nil)
				if !slices.Equal(got, tt.want) || scope != 0 {
					t.Errorf("%s %s %s: Select = %v /%d, want %v /0", tt.name, mode, client, got, scope, tt.want)
				}
			}
		}
	}
}

func TestSelectAppendsToDst(t *testing.T) {
	src := world(t, "city")
	table := geo.Prepare(config.ModeGeoIP, []geo.Candidate{{Healthy: true, Country: "US"}, {Healthy: true, Country: "FR"}})
	got, _ := table.Select(src, lookup(src, "10.3.0.1"), []int{7})
	if !slices.Equal(got, []int{7, 1}) {
		t.Errorf("Select = %v, want [7 1]", got)
	}
}

// selectOnStack answers client the way a query does: the Location and the answer's buffer are
// the caller's locals, and the sources travel with the Location as in the answer package. Both
// locals stay on the stack only if Select lets none of src, loc and dst's array escape: escape
// analysis does not tell a struct's fields apart, so src escaping takes &loc with it.
func selectOnStack(src *geo.Sources, table *geo.Table, client netip.Addr) (n, scope int) {
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
	src := world(t, "city country asn map")
	clients := make([]netip.Addr, len(benchClients))
	for i, c := range benchClients {
		clients[i] = mustAddr(c)
	}
	for _, mode := range []config.Mode{config.ModeGeoIP, config.ModeGeoIPAffinity} {
		table := geo.Prepare(mode, benchCandidates())
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
	geo.Prepare(config.ModeFailover, nil)
}

func TestExplain(t *testing.T) {
	src := world(t, "city country map")
	cands := []geo.Candidate{
		{Healthy: false, Country: "US", Subdivision: "CA", City: "San Jose"},
		{Healthy: true, Country: "US", Subdivision: "CA", City: "Oakland"},
		{Healthy: true, Continent: "NA"},
	}
	ex := geo.Prepare(config.ModeGeoIP, cands).Explain(src, lookup(src, "198.51.100.7"))
	want := `geoip for 198.51.100.7: [1], scope /24
  nearest (city database): no healthy candidate sets the fields this step compares
  city (city database, 198.51.100.0/24) "San Jose": skipped 0: not healthy, or disabled; no healthy candidate matches
  subdivision (city database, 198.51.100.0/24) "CA": matched [1]; skipped 0: not healthy, or disabled`
	if got := ex.String(); got != want {
		t.Errorf("Explain:\n%s\nwant:\n%s", got, want)
	}

	affCands := []geo.Candidate{
		at(seattle, geo.Candidate{Healthy: true, Country: "US"}),
		at(newYork, geo.Candidate{Healthy: true, Country: "US"}),
		at(paris, geo.Candidate{Healthy: true, Country: "FR", Location: "eu-west"}),
	}
	ex = geo.Prepare(config.ModeGeoIPAffinity, affCands).Explain(src, lookup(src, "10.4.0.1"))
	want = `geoip_affinity for 10.4.0.1: [1], scope /16
  location (location map, 10.4.0.0/14): the client is in no subnet of the map
  city (city database, 10.4.0.0/16) "Chicago": no healthy candidate matches
  subdivision (city database, 10.4.0.0/16) "IL": no healthy candidate matches
  country (city database, 10.4.0.0/16) "US": matched [0 1]; narrowed to these candidates
  nearest (city database, 10.4.0.0/16, within country) "41.8781,-87.6298": matched [1]; 1144 km away`
	if got := ex.String(); got != want {
		t.Errorf("Explain:\n%s\nwant:\n%s", got, want)
	}
	if ex.Mode != config.ModeGeoIPAffinity || ex.Client != mustAddr("10.4.0.1") || ex.Steps[4].Group != "country" {
		t.Errorf("Explanation = %+v", ex)
	}

	ex = geo.Prepare(config.ModeGeoIP, cands).Explain(nil, lookup(nil, "192.0.2.1"))
	if s := ex.String(); !strings.Contains(s, "lookup (city database): not configured") ||
		!strings.Contains(s, "location (location map): not configured") || !strings.HasSuffix(s, "failover: matched [1 2]") {
		t.Errorf("Explain without sources:\n%s", s)
	}
}
