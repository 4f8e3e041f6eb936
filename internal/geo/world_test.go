package geo_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// The test world. Clients: 198.51.100.0/24 San Jose; 10.1/16 Seattle; 10.2/16 New York;
// 10.3/16 Paris; 10.4/16 Chicago; 10.5/16 Los Angeles; 10.6/16 a US network located in the
// Atlantic, nearer Paris than Seattle; 10.7/16 Lyon without coordinates; 10.8.0.0/28 Germany
// without a city; 2001:db8:1::/48 San Jose and 2001:db8:3::/48 Paris.
var cityNets = []testutil.GeoNetwork{
	{Prefix: "198.51.100.0/24", City: "San Jose", Subdivision: "CA", Country: "US", Continent: "NA", Lat: 37.3382, Lon: -121.8863},
	{Prefix: "10.1.0.0/16", City: "Seattle", Subdivision: "WA", Country: "US", Continent: "NA", Lat: 47.6062, Lon: -122.3321},
	{Prefix: "10.2.0.0/16", City: "New York", Subdivision: "NY", Country: "US", Continent: "NA", Lat: 40.7128, Lon: -74.0060},
	{Prefix: "10.3.0.0/16", City: "Paris", Subdivision: "IDF", Country: "FR", Continent: "EU", Lat: 48.8566, Lon: 2.3522},
	{Prefix: "10.4.0.0/16", City: "Chicago", Subdivision: "IL", Country: "US", Continent: "NA", Lat: 41.8781, Lon: -87.6298},
	{Prefix: "10.5.0.0/16", City: "Los Angeles", Subdivision: "CA", Country: "US", Continent: "NA", Lat: 34.0522, Lon: -118.2437},
	{Prefix: "10.6.0.0/16", Country: "US", Continent: "NA", Lat: 50, Lon: -10},
	{Prefix: "10.7.0.0/16", City: "Lyon", Subdivision: "ARA", Country: "FR", Continent: "EU"},
	{Prefix: "10.8.0.0/28", Country: "DE", Continent: "EU"},
	{Prefix: "2001:db8:1::/48", City: "San Jose", Subdivision: "CA", Country: "US", Continent: "NA", Lat: 37.3382, Lon: -121.8863},
	{Prefix: "2001:db8:3::/48", City: "Paris", Subdivision: "IDF", Country: "FR", Continent: "EU", Lat: 48.8566, Lon: 2.3522},
}

var countryNets = []testutil.GeoNetwork{
	{Prefix: "192.0.2.0/24", Country: "FR", Continent: "EU"},
	{Prefix: "203.0.113.0/24", Country: "US", Continent: "NA"},
	{Prefix: "10.8.0.0/16", Country: "DE", Continent: "EU"},
	{Prefix: "10.9.0.0/16", Country: "JP", Continent: "AS"},
	{Prefix: "2001:db8:9::/48", Country: "JP", Continent: "AS"},
}

var asnNets = []testutil.ASNNetwork{
	{Prefix: "10.9.0.0/16", ASN: 64500, Org: "Example Transit"},
	{Prefix: "192.0.2.0/25", ASN: 12345},
	{Prefix: "203.0.113.0/24", ASN: 67890},
	{Prefix: "2001:db8::/40", ASN: 64501},
}

const worldMap = `subnets:
  - subnet: 10.0.0.0/24
    location: eu-west
  - subnet: 192.168.1.0/24
    location: us-east
  - subnet: 10.9.8.0/24
    location: ap-east
  - subnet: 10.3.3.0/24
    location: us-east
  - subnet: 2001:db8:9::/48
    location: ap-east
`

// worldOptions writes the sources named in which ("city", "country", "asn", "map") and returns
// options naming them.
func worldOptions(t testing.TB, which string) config.GeoIPOptions {
	t.Helper()
	var o config.GeoIPOptions
	for _, w := range strings.Fields(which) {
		switch w {
		case "city":
			o.CityDB = testutil.WriteCityDB(t, cityNets)
		case "country":
			o.CountryDB = testutil.WriteCountryDB(t, countryNets)
		case "asn":
			o.ASNDB = testutil.WriteASNDB(t, asnNets)
		case "map":
			o.CustomMap = writeFile(t, "locations.yml", worldMap)
		default:
			t.Fatalf("unknown source %q", w)
		}
	}
	return o
}

// world opens the sources named in which.
func world(t testing.TB, which string) *geo.Sources {
	t.Helper()
	src, err := geo.Open(worldOptions(t, which))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func lookup(src *geo.Sources, addr string) *geo.Location {
	var loc geo.Location
	src.Lookup(netip.MustParseAddr(addr), &loc)
	return &loc
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
