package geo_test

import (
	"errors"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

func TestLookup(t *testing.T) {
	src := testutil.World(t, "city country asn map")
	tests := []struct {
		addr string
		want geo.Location
	}{
		{"198.51.100.7", geo.Location{
			City:    geo.CityInfo{Match: geo.Match{Found: true, Bits: 24}, Name: "San Jose", Subdivision: "CA", Country: "US", Continent: "NA", Lat: 37.3382, Lon: -121.8863, HasCoords: true},
			Country: geo.CountryInfo{Match: geo.Match{Bits: 6}}, // 198.0.0.0/6 holds none of its networks
			ASN:     geo.ASNInfo{Match: geo.Match{Bits: 6}},
			Map:     geo.MapInfo{Match: geo.Match{Bits: 6}},
		}},
		// IPv4-mapped: looked up as IPv4, lengths in the IPv6 family.
		{"::ffff:198.51.100.7", geo.Location{
			City:    geo.CityInfo{Match: geo.Match{Found: true, Bits: 120}, Name: "San Jose", Subdivision: "CA", Country: "US", Continent: "NA", Lat: 37.3382, Lon: -121.8863, HasCoords: true},
			Country: geo.CountryInfo{Match: geo.Match{Bits: 102}},
			ASN:     geo.ASNInfo{Match: geo.Match{Bits: 102}},
			Map:     geo.MapInfo{Match: geo.Match{Bits: 102}},
		}},
		{"10.9.8.7", geo.Location{
			City:    geo.CityInfo{Match: geo.Match{Bits: 16}},
			Country: geo.CountryInfo{Match: geo.Match{Found: true, Bits: 16}, Country: "JP", Continent: "AS"},
			ASN:     geo.ASNInfo{Match: geo.Match{Found: true, Bits: 16}, Number: 64500},
			Map:     geo.MapInfo{Match: geo.Match{Found: true, Bits: 24}, Subnet: netip.MustParsePrefix("10.9.8.0/24"), Location: "ap-east"},
		}},
		{"10.8.0.1", geo.Location{
			City:    geo.CityInfo{Match: geo.Match{Found: true, Bits: 28}, Country: "DE", Continent: "EU"},
			Country: geo.CountryInfo{Match: geo.Match{Found: true, Bits: 16}, Country: "DE", Continent: "EU"},
			ASN:     geo.ASNInfo{Match: geo.Match{Bits: 16}},
			Map:     geo.MapInfo{Match: geo.Match{Bits: 16}},
		}},
		{"2001:db8:9:1::1", geo.Location{
			City:    geo.CityInfo{Match: geo.Match{Bits: 45}},
			Country: geo.CountryInfo{Match: geo.Match{Found: true, Bits: 48}, Country: "JP", Continent: "AS"},
			ASN:     geo.ASNInfo{Match: geo.Match{Found: true, Bits: 40}, Number: 64501},
			Map:     geo.MapInfo{Match: geo.Match{Found: true, Bits: 48}, Subnet: netip.MustParsePrefix("2001:db8:9::/48"), Location: "ap-east"},
		}},
		{"2001:db8:3::1", geo.Location{
			City:    geo.CityInfo{Match: geo.Match{Found: true, Bits: 48}, Name: "Paris", Subdivision: "IDF", Country: "FR", Continent: "EU", Lat: 48.8566, Lon: 2.3522, HasCoords: true},
			Country: geo.CountryInfo{Match: geo.Match{Bits: 45}},
			ASN:     geo.ASNInfo{Match: geo.Match{Found: true, Bits: 40}, Number: 64501},
			Map:     geo.MapInfo{Match: geo.Match{Bits: 45}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			got := testutil.Lookup(src, tt.addr)
			tt.want.Addr = netip.MustParseAddr(tt.addr)
			if *got != tt.want {
				t.Errorf("Lookup(%s)\n got %+v\nwant %+v", tt.addr, *got, tt.want)
			}
			// A second lookup answers from the cache, alike.
			if again := testutil.Lookup(src, tt.addr); *again != *got {
				t.Errorf("second Lookup(%s) = %+v", tt.addr, *again)
			}
		})
	}
}

func TestLookupWithoutSources(t *testing.T) {
	var nilSources *geo.Sources
	empty, err := geo.Open(config.GeoIPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []*geo.Sources{nilSources, empty} {
		loc := geo.Location{City: geo.CityInfo{Name: "stale"}}
		src.Lookup(netip.MustParseAddr("192.0.2.1"), &loc)
		if loc != (geo.Location{Addr: netip.MustParseAddr("192.0.2.1")}) {
			t.Errorf("Lookup without sources = %+v", loc)
		}
		if src.Files() != nil || src.Has(geo.SourceCity) {
			t.Errorf("Files() = %v, Has(city) = %v", src.Files(), src.Has(geo.SourceCity))
		}
	}
}

func TestLookupInvalidAndZonedAddress(t *testing.T) {
	src := testutil.World(t, "city map")
	var loc geo.Location
	src.Lookup(netip.Addr{}, &loc)
	if loc != (geo.Location{}) {
		t.Errorf("Lookup(invalid) = %+v", loc)
	}
	src.Lookup(netip.MustParseAddr("2001:db8:3::1%eth0"), &loc)
	if !loc.City.Found || loc.City.Name != "Paris" {
		t.Errorf("Lookup(zoned) = %+v", loc)
	}
}

func TestLookupDoesNotAllocate(t *testing.T) {
	src := testutil.World(t, "city country asn map")
	addrs := []netip.Addr{netip.MustParseAddr("198.51.100.7"), netip.MustParseAddr("10.9.8.7"),
		netip.MustParseAddr("2001:db8:9::1"), netip.MustParseAddr("::ffff:10.3.0.1"), netip.MustParseAddr("203.0.113.4")}
	var loc geo.Location
	for _, a := range addrs {
		src.Lookup(a, &loc) // warm the caches
	}
	n := testing.AllocsPerRun(200, func() {
		for _, a := range addrs {
			src.Lookup(a, &loc)
		}
	})
	if n != 0 {
		t.Errorf("Lookup allocates %v times per run after warm-up", n)
	}
}

func TestOpenErrors(t *testing.T) {
	city := testutil.WriteCityDB(t, testutil.WorldCityNets)
	asn := testutil.WriteASNDB(t, testutil.WorldASNNets)
	garbage := testutil.WriteFile(t, "garbage.mmdb", "not a database")
	badMap := testutil.WriteFile(t, "map.yml", "subnets:\n  - subnet: 10.0.0.1/24\n    location: x\n")
	missing := filepath.Join(t.TempDir(), "missing.mmdb")
	tests := []struct {
		name string
		opts config.GeoIPOptions
		want []string
	}{
		{"missing file", config.GeoIPOptions{CityDB: missing}, []string{"geoip_maxmind city_db " + missing, "no such file"}},
		{"not a database", config.GeoIPOptions{CountryDB: garbage}, []string{"geoip_maxmind country_db " + garbage, "invalid MaxMind DB"}},
		{"ASN database as city_db", config.GeoIPOptions{CityDB: asn}, []string{"geoip_maxmind city_db " + asn, `database type "GeoLite2-ASN" is not one of City, Enterprise`}},
		{"city database as asn_db", config.GeoIPOptions{CityDB: city, ASNDB: city}, []string{"geoip_maxmind asn_db " + city, `"GeoIP2-City" is not one of ASN, ISP`}},
		{"missing map", config.GeoIPOptions{CityDB: city, CustomMap: missing}, []string{"geoip_custom: open " + missing}},
		{"bad map", config.GeoIPOptions{CustomMap: badMap}, []string{badMap + ":2:13: subnets[0].subnet: 10.0.0.1/24 has host bits set: the subnet is 10.0.0.0/24"}},
		{"every broken source is reported", config.GeoIPOptions{CityDB: missing, CountryDB: garbage, CustomMap: badMap}, []string{
			"geoip_maxmind city_db " + missing, "geoip_maxmind country_db " + garbage, badMap + ":2:13:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := geo.Open(tt.opts)
			if err == nil {
				src.Close()
				t.Fatal("Open succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestOpenAcceptsCityDatabaseAsCountryDB(t *testing.T) {
	city := testutil.WriteCityDB(t, testutil.WorldCityNets)
	src, err := geo.Open(config.GeoIPOptions{CountryDB: city})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if loc := testutil.Lookup(src, "10.3.0.1"); !loc.Country.Found || loc.Country.Country != "FR" || loc.Country.Continent != "EU" {
		t.Errorf("Lookup = %+v", loc.Country)
	}
}

func TestFiles(t *testing.T) {
	opts := testutil.WorldOptions(t, "city asn map")
	src, err := geo.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if got, want := src.Files(), []string{opts.CityDB, opts.ASNDB, opts.CustomMap}; !slices.Equal(got, want) {
		t.Errorf("Files() = %v, want %v", got, want)
	}
	for _, s := range []geo.Source{geo.SourceCity, geo.SourceASN, geo.SourceMap} {
		if !src.Has(s) {
			t.Errorf("Has(%v) = false", s)
		}
	}
	if src.Has(geo.SourceCountry) {
		t.Error("Has(country database) = true")
	}
}

func TestStoreReload(t *testing.T) {
	opts := testutil.WorldOptions(t, "city map")
	st, err := geo.NewStore(opts, 0)
	if err != nil {
		t.Fatal(err)
	}
	first := st.Sources()
	if loc := testutil.Lookup(first, "10.0.0.1"); loc.Map.Location != "eu-west" {
		t.Fatalf("map location %q", loc.Map.Location)
	}

	// A good change is swapped in.
	testutil.ReplaceFile(t, opts.CustomMap, []byte("subnets:\n  - subnet: 10.0.0.0/8\n    location: moved\n"))
	if err := st.Reload(); err != nil {
		t.Fatal(err)
	}
	second := st.Sources()
	if second == first {
		t.Fatal("Reload did not swap the sources")
	}
	if loc := testutil.Lookup(second, "10.0.0.1"); loc.Map.Location != "moved" || loc.Map.Bits != 8 {
		t.Errorf("after reload: %+v", loc.Map)
	}
	// The replaced sources still answer: nobody closed them under a running query.
	if loc := testutil.Lookup(first, "10.3.0.1"); loc.City.Name != "Paris" {
		t.Errorf("old sources: %+v", loc.City)
	}

	// A bad map keeps the current sources.
	testutil.ReplaceFile(t, opts.CustomMap, []byte("subnets:\n  - subnet: nonsense\n    location: x\n"))
	err = st.Reload()
	var list config.ErrorList
	if err == nil || !errors.As(err, &list) || !strings.Contains(err.Error(), opts.CustomMap+":2:") {
		t.Errorf("Reload with a bad map: %v", err)
	}
	if st.Sources() != second {
		t.Error("a failed Reload replaced the sources")
	}

	// So does a bad database.
	testutil.ReplaceFile(t, opts.CustomMap, []byte("subnets: []\n"))
	testutil.ReplaceFile(t, opts.CityDB, []byte("garbage"))
	if err := st.Reload(); err == nil || !strings.Contains(err.Error(), opts.CityDB) {
		t.Errorf("Reload with a bad database: %v", err)
	}
	if st.Sources() != second {
		t.Error("a failed Reload replaced the sources")
	}
}

func TestNewStoreError(t *testing.T) {
	if _, err := geo.NewStore(config.GeoIPOptions{ASNDB: filepath.Join(t.TempDir(), "none.mmdb")}, 0); err == nil {
		t.Error("NewStore with a missing database succeeded")
	}
}

// BenchmarkLookup is one Lookup in the four sources, with the records cached.
func BenchmarkLookup(b *testing.B) {
	src := testutil.World(b, "city country asn map")
	addrs := make([]netip.Addr, len(testutil.WorldClients))
	var loc geo.Location
	for i, c := range testutil.WorldClients {
		addrs[i] = netip.MustParseAddr(c)
		src.Lookup(addrs[i], &loc)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		src.Lookup(addrs[i%len(addrs)], &loc)
	}
}

// TestStoreMapLimit checks that a location map over the Store's limit is refused, at the start
// and at a reload, which keeps the current sources.
func TestStoreMapLimit(t *testing.T) {
	opts := testutil.WorldOptions(t, "city map")
	small := []byte("subnets:\n  - subnet: 10.0.0.0/8\n    location: small\n")
	testutil.ReplaceFile(t, opts.CustomMap, small)
	limit := int64(len(small))
	st, err := geo.NewStore(opts, limit)
	if err != nil {
		t.Fatal(err)
	}
	first := st.Sources()
	testutil.ReplaceFile(t, opts.CustomMap, append(small, "  - subnet: 10.1.0.0/16\n    location: big\n"...))
	want := opts.CustomMap + ": file too big: more than max_file_size " + config.FormatSize(limit)
	if err := st.Reload(); err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, config.ErrFileTooBig) {
		t.Errorf("Reload of a map over the limit: %v, want %q", err, want)
	}
	if st.Sources() != first {
		t.Error("a refused map replaced the sources")
	}
	if _, err := geo.NewStore(opts, limit); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("NewStore with a map over the limit: %v, want %q", err, want)
	}
}
