package testutil

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
	"go4.org/netipx"
)

// GeoNetwork is one network of a City or Country test database, in the GeoIP2 layout. Empty
// strings are left out of the record, as MaxMind leaves out what it does not know.
type GeoNetwork struct {
	// Prefix is the network in CIDR form, IPv4 ("198.51.100.0/24") or IPv6 ("2001:db8::/48");
	// host bits must be zero.
	Prefix string
	// City is the English name (city.names.en); City databases only.
	City string
	// Subdivision is the ISO code of the first subdivision (subdivisions[0].iso_code); City
	// databases only.
	Subdivision string
	// Country is the ISO 3166-1 alpha-2 code (country.iso_code).
	Country string
	// Continent is the two-letter continent code (continent.code).
	Continent string
	// Lat and Lon are location.latitude and location.longitude, written when either is non-zero;
	// City databases only.
	Lat, Lon float64
}

// ASNNetwork is one network of an ASN test database, in the GeoLite2-ASN layout.
type ASNNetwork struct {
	Prefix string // CIDR, IPv4 or IPv6, host bits zero
	ASN    uint32 // autonomous_system_number
	Org    string // autonomous_system_organization; left out when empty
}

// WriteCityDB writes a "GeoIP2-City" database holding nets into a new temporary directory and
// returns its path. Test networks (10.0.0.0/8, 192.0.2.0/24, 2001:db8::/32, ...) are allowed.
func WriteCityDB(t testing.TB, nets []GeoNetwork) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "GeoIP2-City.mmdb")
	if err := WriteCityDBFile(path, nets); err != nil {
		t.Fatal(err)
	}
	return path
}

// WriteCityDBFile writes a "GeoIP2-City" database holding nets to path, for programs (the
// benchmarks) that have no testing.TB.
func WriteCityDBFile(path string, nets []GeoNetwork) error {
	recs := make([]mmdbRecord, len(nets))
	for i, n := range nets {
		m := geoMap(n)
		if n.City != "" {
			m["city"] = mmdbtype.Map{"names": mmdbtype.Map{"en": mmdbtype.String(n.City)}}
		}
		if n.Subdivision != "" {
			m["subdivisions"] = mmdbtype.Slice{mmdbtype.Map{"iso_code": mmdbtype.String(n.Subdivision)}}
		}
		if n.Lat != 0 || n.Lon != 0 {
			m["location"] = mmdbtype.Map{
				"latitude":        mmdbtype.Float64(n.Lat),
				"longitude":       mmdbtype.Float64(n.Lon),
				"accuracy_radius": mmdbtype.Uint16(20),
			}
		}
		recs[i] = mmdbRecord{n.Prefix, m}
	}
	return writeMMDBFile(path, "GeoIP2-City", recs)
}

// WriteCountryDB writes a "GeoIP2-Country" database holding the Country and Continent of nets
// (their other fields are ignored) into a new temporary directory and returns its path.
func WriteCountryDB(t testing.TB, nets []GeoNetwork) string {
	t.Helper()
	recs := make([]mmdbRecord, len(nets))
	for i, n := range nets {
		recs[i] = mmdbRecord{n.Prefix, geoMap(n)}
	}
	return writeMMDB(t, "GeoIP2-Country", recs)
}

// WriteASNDB writes a "GeoLite2-ASN" database holding nets into a new temporary directory and
// returns its path.
func WriteASNDB(t testing.TB, nets []ASNNetwork) string {
	t.Helper()
	recs := make([]mmdbRecord, len(nets))
	for i, n := range nets {
		m := mmdbtype.Map{"autonomous_system_number": mmdbtype.Uint32(n.ASN)}
		if n.Org != "" {
			m["autonomous_system_organization"] = mmdbtype.String(n.Org)
		}
		recs[i] = mmdbRecord{n.Prefix, m}
	}
	return writeMMDB(t, "GeoLite2-ASN", recs)
}

// geoMap returns the country and continent part of a GeoIP2 record.
func geoMap(n GeoNetwork) mmdbtype.Map {
	m := mmdbtype.Map{}
	if n.Country != "" {
		m["country"] = mmdbtype.Map{"iso_code": mmdbtype.String(n.Country)}
	}
	if n.Continent != "" {
		m["continent"] = mmdbtype.Map{"code": mmdbtype.String(n.Continent)}
	}
	return m
}

// mmdbRecord is one network and its data.
type mmdbRecord struct {
	prefix string
	data   mmdbtype.Map
}

// writeMMDB writes an IPv6 database (which answers IPv4 lookups too) of the given type into a
// new temporary directory and returns its path.
func writeMMDB(t testing.TB, dbType string, recs []mmdbRecord) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), dbType+".mmdb")
	if err := writeMMDBFile(path, dbType, recs); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeMMDBFile writes an IPv6 database (which answers IPv4 lookups too) of the given type to
// path.
func writeMMDBFile(path, dbType string, recs []mmdbRecord) error {
	tree, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType:            dbType,
		Description:             map[string]string{"en": "Meridian test database"},
		Languages:               []string{"en"},
		IncludeReservedNetworks: true,
		RecordSize:              28,
	})
	if err != nil {
		return fmt.Errorf("mmdbwriter: %w", err)
	}
	for _, r := range recs {
		p, err := netip.ParsePrefix(r.prefix)
		if err != nil {
			return fmt.Errorf("%s test database: %w", dbType, err)
		}
		if p != p.Masked() {
			return fmt.Errorf("%s test database: %s has host bits set", dbType, r.prefix)
		}
		if err := tree.Insert(netipx.PrefixIPNet(p), r.data); err != nil {
			return fmt.Errorf("%s test database: insert %s: %w", dbType, r.prefix, err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := tree.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
