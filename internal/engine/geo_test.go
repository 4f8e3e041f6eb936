package engine

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

func TestGeoSourcesFollowTheirFiles(t *testing.T) {
	dir := t.TempDir()
	zone := filepath.Join(dir, "zone.yml")
	if err := os.WriteFile(zone, []byte("records:\n  geo.example.org.:\n    mode: geoip\n    backends:\n      - {address: 10.0.0.1, country: US}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	country := filepath.Join(dir, "country.mmdb")
	// install replaces the database by rename, as geoipupdate does.
	install := func(path string) {
		t.Helper()
		if err := os.Rename(path, country); err != nil {
			t.Fatal(err)
		}
	}
	install(testutil.WriteCountryDB(t, []testutil.GeoNetwork{{Prefix: "198.51.100.0/24", Country: "US", Continent: "NA"}}))
	opts := config.DefaultOptions()
	opts.Zones = []config.ZoneSource{{Origin: "example.org.", File: zone}}
	opts.GeoIP.CountryDB = country
	log := &testutil.Log{}
	e, err := New(opts, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	client := netip.MustParseAddr("198.51.100.1")
	countryOf := func() string {
		var loc geo.Location
		e.Geo().Lookup(client, &loc)
		return loc.Country.Country
	}
	if got := countryOf(); got != "US" {
		t.Fatalf("client in %q, want US", got)
	}

	install(testutil.WriteCountryDB(t, []testutil.GeoNetwork{{Prefix: "198.51.100.0/24", Country: "FR", Continent: "EU"}}))
	testutil.Eventually(t, 5*time.Second, func() bool { return countryOf() == "FR" }, "the new database was not loaded: client in %q", countryOf())

	// A broken file is reported and the current data keeps serving.
	broken := filepath.Join(t.TempDir(), "broken.mmdb")
	if err := os.WriteFile(broken, []byte("not a database"), 0o644); err != nil {
		t.Fatal(err)
	}
	install(broken)
	testutil.Eventually(t, 5*time.Second, func() bool { return strings.Contains(log.String(), "geoip reload failed") }, "the broken database was not reported:\n%s", log.String())
	if got := countryOf(); got != "FR" {
		t.Fatalf("client in %q after a broken update, want the previous data (FR)", got)
	}
}

func TestCheckReportsGeoSources(t *testing.T) {
	dir := t.TempDir()
	zone := filepath.Join(dir, "zone.yml")
	if err := os.WriteFile(zone, []byte("records:\n  geo.example.org.:\n    mode: geoip\n    backends:\n      - {address: 10.0.0.1, location: eu}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	locmap := filepath.Join(dir, "map.yml")
	if err := os.WriteFile(locmap, []byte("subnets:\n  - subnet: 10.0.0.1/8\n    location: eu\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := config.DefaultOptions()
	opts.Zones = []config.ZoneSource{{Origin: "example.org.", File: zone}}
	opts.GeoIP.CustomMap = locmap
	_, _, err := Check(opts)
	if err == nil || !strings.Contains(err.Error(), "map.yml:2:") {
		t.Fatalf("check: %v, want the map's error with its position", err)
	}
}
