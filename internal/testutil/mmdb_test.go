package testutil

import (
	"net/netip"
	"testing"

	"github.com/oschwald/maxminddb-golang/v2"
)

func openMMDB(t *testing.T, path, wantType string) *maxminddb.Reader {
	t.Helper()
	r, err := maxminddb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if r.Metadata.DatabaseType != wantType {
		t.Errorf("database type %q, want %q", r.Metadata.DatabaseType, wantType)
	}
	if err := r.Verify(); err != nil {
		t.Errorf("verify: %v", err)
	}
	return r
}

func TestWriteCityDB(t *testing.T) {
	r := openMMDB(t, WriteCityDB(t, []GeoNetwork{
		{Prefix: "198.51.100.0/24", City: "San Jose", Subdivision: "CA", Country: "US", Continent: "NA", Lat: 37.33, Lon: -121.89},
		{Prefix: "10.1.0.0/16", Country: "FR", Continent: "EU"},
		{Prefix: "2001:db8:1::/48", City: "Paris", Country: "FR", Continent: "EU", Lat: 48.86, Lon: 2.35},
	}), "GeoIP2-City")

	type city struct {
		City struct {
			Names map[string]string `maxminddb:"names"`
		} `maxminddb:"city"`
		Subdivisions []struct {
			ISOCode string `maxminddb:"iso_code"`
		} `maxminddb:"subdivisions"`
		Country struct {
			ISOCode string `maxminddb:"iso_code"`
		} `maxminddb:"country"`
		Continent struct {
			Code string `maxminddb:"code"`
		} `maxminddb:"continent"`
		Location *struct {
			Latitude  float64 `maxminddb:"latitude"`
			Longitude float64 `maxminddb:"longitude"`
		} `maxminddb:"location"`
	}
	tests := []struct {
		addr, prefix, city, sub, country, continent string
		coords                                      bool
	}{
		{"198.51.100.7", "198.51.100.0/24", "San Jose", "CA", "US", "NA", true},
		{"::ffff:198.51.100.7", "198.51.100.0/24", "San Jose", "CA", "US", "NA", true},
		{"10.1.2.3", "10.1.0.0/16", "", "", "FR", "EU", false},
		{"2001:db8:1::5", "2001:db8:1::/48", "Paris", "", "FR", "EU", true},
	}
	for _, tt := range tests {
		res := r.Lookup(netip.MustParseAddr(tt.addr).Unmap())
		var c city
		if err := res.Decode(&c); err != nil {
			t.Fatal(err)
		}
		if !res.Found() || res.Prefix().String() != tt.prefix {
			t.Errorf("%s: found %v in %s, want %s", tt.addr, res.Found(), res.Prefix(), tt.prefix)
		}
		sub := ""
		if len(c.Subdivisions) > 0 {
			sub = c.Subdivisions[0].ISOCode
		}
		if c.City.Names["en"] != tt.city || sub != tt.sub || c.Country.ISOCode != tt.country ||
			c.Continent.Code != tt.continent || (c.Location != nil) != tt.coords {
			t.Errorf("%s: got %+v", tt.addr, c)
		}
	}
	if res := r.Lookup(netip.MustParseAddr("203.0.113.1")); res.Found() {
		t.Errorf("203.0.113.1 found in %s", res.Prefix())
	}
}

func TestWriteCountryDB(t *testing.T) {
	r := openMMDB(t, WriteCountryDB(t, []GeoNetwork{{Prefix: "192.0.2.0/24", Country: "DE", Continent: "EU", City: "ignored"}}), "GeoIP2-Country")
	var c struct {
		City    map[string]any `maxminddb:"city"`
		Country struct {
			ISOCode string `maxminddb:"iso_code"`
		} `maxminddb:"country"`
		Continent struct {
			Code string `maxminddb:"code"`
		} `maxminddb:"continent"`
	}
	if err := r.Lookup(netip.MustParseAddr("192.0.2.1")).Decode(&c); err != nil {
		t.Fatal(err)
	}
	if c.Country.ISOCode != "DE" || c.Continent.Code != "EU" || c.City != nil {
		t.Errorf("got %+v", c)
	}
}

func TestWriteASNDB(t *testing.T) {
	r := openMMDB(t, WriteASNDB(t, []ASNNetwork{{Prefix: "203.0.113.0/25", ASN: 64500, Org: "Example Net"}, {Prefix: "2001:db8::/32", ASN: 64501}}), "GeoLite2-ASN")
	var a struct {
		ASN uint32 `maxminddb:"autonomous_system_number"`
		Org string `maxminddb:"autonomous_system_organization"`
	}
	res := r.Lookup(netip.MustParseAddr("203.0.113.9"))
	if err := res.Decode(&a); err != nil {
		t.Fatal(err)
	}
	if a.ASN != 64500 || a.Org != "Example Net" || res.Prefix().Bits() != 25 {
		t.Errorf("got %+v in %s", a, res.Prefix())
	}
	a.Org = ""
	if err := r.Lookup(netip.MustParseAddr("2001:db8:ffff::1")).Decode(&a); err != nil {
		t.Fatal(err)
	}
	if a.ASN != 64501 || a.Org != "" {
		t.Errorf("got %+v", a)
	}
}
