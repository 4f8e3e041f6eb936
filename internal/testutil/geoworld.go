package testutil

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
)

// WorldCityNets are the networks of the city database of the test world that the geo data
// sources' and the geo modes' tests share. Clients: 198.51.100.0/24 San Jose; 10.1/16 Seattle;
// 10.2/16 New York; 10.3/16 Paris; 10.4/16 Chicago; 10.5/16 Los Angeles; 10.6/16 a US network
// located in the Atlantic, nearer Paris than Seattle; 10.7/16 Lyon without coordinates;
// 10.8.0.0/28 Germany without a city; 2001:db8:1::/48 San Jose and 2001:db8:3::/48 Paris.
var WorldCityNets = []GeoNetwork{
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

// WorldClients are clients of the test world of every kind: placed with coordinates, placed without, known only
// to the country and ASN databases, in the map, unknown, IPv6 and IPv4-mapped.
var WorldClients = []string{"198.51.100.7", "10.4.0.1", "10.6.0.1", "10.7.0.1", "10.9.8.7",
	"10.0.0.5", "203.0.113.9", "192.0.2.1", "2001:db8:3::1", "2001:db8:9::1", "::ffff:10.1.0.1"}

// WorldCountryNets are the networks of the test world's country database.
var WorldCountryNets = []GeoNetwork{
	{Prefix: "192.0.2.0/24", Country: "FR", Continent: "EU"},
	{Prefix: "203.0.113.0/24", Country: "US", Continent: "NA"},
	{Prefix: "10.8.0.0/16", Country: "DE", Continent: "EU"},
	{Prefix: "10.9.0.0/16", Country: "JP", Continent: "AS"},
	{Prefix: "2001:db8:9::/48", Country: "JP", Continent: "AS"},
}

// WorldASNNets are the networks of the test world's ASN database.
var WorldASNNets = []ASNNetwork{
	{Prefix: "10.9.0.0/16", ASN: 64500, Org: "Example Transit"},
	{Prefix: "192.0.2.0/25", ASN: 12345},
	{Prefix: "203.0.113.0/24", ASN: 67890},
	{Prefix: "2001:db8::/40", ASN: 64501},
}

// WorldMap is the test world's location map.
const WorldMap = `subnets:
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

// WorldOptions writes the test world's sources named in which ("city", "country", "asn",
// "map") and returns options naming them.
func WorldOptions(t testing.TB, which string) config.GeoIPOptions {
	t.Helper()
	var o config.GeoIPOptions
	for _, w := range strings.Fields(which) {
		switch w {
		case "city":
			o.CityDB = WriteCityDB(t, WorldCityNets)
		case "country":
			o.CountryDB = WriteCountryDB(t, WorldCountryNets)
		case "asn":
			o.ASNDB = WriteASNDB(t, WorldASNNets)
		case "map":
			o.CustomMap = WriteFile(t, "locations.yml", WorldMap)
		default:
			t.Fatalf("unknown source %q", w)
		}
	}
	return o
}

// World opens the test world's sources named in which, closed when the test ends.
func World(t testing.TB, which string) *geo.Sources {
	t.Helper()
	src, err := geo.Open(WorldOptions(t, which))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// WriteFile writes content to the file name in a temporary directory and returns its path.
func WriteFile(t testing.TB, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Lookup returns what src says about addr.
func Lookup(src *geo.Sources, addr string) *geo.Location {
	var loc geo.Location
	src.Lookup(netip.MustParseAddr(addr), &loc)
	return &loc
}

// ReplaceFile writes content next to path and renames it over path, as updaters do.
func ReplaceFile(t testing.TB, path string, content []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, content, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
