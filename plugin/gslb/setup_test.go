package gslb

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/config"
)

func TestParseBlock(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		keys    []string
		root    string
		check   func(t *testing.T, b Block)
		wantErr string
	}{
		{
			name:  "zone lines and every option",
			input: "gslb {\n zone Example.ORG a.yml\n zone example.net. /abs/b.yml\n fallthrough in-addr.arpa.\n use_edns_csubnet\n enable_txt\n max_stagger_start 60s\n batch_size_start 50\n resolution_idle_timeout 30m\n healthcheck_idle_multiplier 5\n healthcheck_profiles profiles.yml\n}",
			root:  "/etc/meridian",
			check: func(t *testing.T, b Block) {
				o := b.Options
				want := []config.ZoneSource{{Origin: "example.org.", File: "/etc/meridian/a.yml"}, {Origin: "example.net.", File: "/abs/b.yml"}}
				if len(o.Zones) != 2 || o.Zones[0] != want[0] || o.Zones[1] != want[1] {
					t.Errorf("zones %v, want %v", o.Zones, want)
				}
				if !o.UseEDNSClientSubnet || !o.EnableTXT || o.MaxStaggerStart != time.Minute || o.BatchSizeStart != 50 ||
					o.ResolutionIdleTimeout != 30*time.Minute || o.HealthcheckIdleMultiplier != 5 ||
					o.HealthcheckProfilesFile != "/etc/meridian/profiles.yml" {
					t.Errorf("options %+v", o)
				}
				if !b.Fall.Through("1.2.3.in-addr.arpa.") || b.Fall.Through("www.example.org.") {
					t.Errorf("fallthrough zones wrong: %v", b.Fall)
				}
			},
		},
		{
			name:  "defaults",
			input: "gslb {\n zone example.org. a.yml\n}",
			check: func(t *testing.T, b Block) {
				if got, want := b.Options, config.DefaultOptions(); got.MaxStaggerStart != want.MaxStaggerStart ||
					got.BatchSizeStart != want.BatchSizeStart || got.EnableTXT || got.UseEDNSClientSubnet {
					t.Errorf("options %+v, want defaults", got)
				}
				if b.Fall.Through("x.example.org.") {
					t.Error("fallthrough is on without the option")
				}
			},
		},
		{
			name:  "short form takes the server block's zone",
			input: "gslb records.yml",
			keys:  []string{"example.org:1053"},
			check: func(t *testing.T, b Block) {
				if len(b.Options.Zones) != 1 || b.Options.Zones[0].Origin != "example.org." || b.Options.Zones[0].File != "records.yml" {
					t.Errorf("zones %v", b.Options.Zones)
				}
			},
		},
		{
			name:  "short form with a zone",
			input: "gslb records.yml example.com",
			keys:  []string{"."},
			check: func(t *testing.T, b Block) {
				if b.Options.Zones[0].Origin != "example.com." {
					t.Errorf("zones %v", b.Options.Zones)
				}
			},
		},
		{
			name:  "CoreDNS-GSLB zones block and disable_txt",
			input: "gslb {\n zones {\n  example.org. a.yml\n  test.org. b.yml\n }\n enable_txt\n disable_txt\n}",
			check: func(t *testing.T, b Block) {
				if len(b.Options.Zones) != 2 || b.Options.Zones[1].Origin != "test.org." || b.Options.EnableTXT {
					t.Errorf("options %+v", b.Options)
				}
			},
		},
		{
			name:  "geoip sources",
			input: "gslb {\n zone example.org. a.yml\n geoip_maxmind city_db GeoLite2-City.mmdb\n geoip_maxmind country_db /db/country.mmdb\n geoip_maxmind asn_db asn.mmdb\n geoip_custom location_map.yml\n}",
			root:  "/etc/meridian",
			check: func(t *testing.T, b Block) {
				want := config.GeoIPOptions{CityDB: "/etc/meridian/GeoLite2-City.mmdb", CountryDB: "/db/country.mmdb", ASNDB: "/etc/meridian/asn.mmdb", CustomMap: "/etc/meridian/location_map.yml"}
				if b.Options.GeoIP != want {
					t.Errorf("geoip %+v, want %+v", b.Options.GeoIP, want)
				}
			},
		},
		{
			name:  "state file options",
			input: "gslb {\n zone example.org. a.yml\n state_persist_enable true\n state_persist_path state/gslb.json\n state_persist_interval 10s\n state_max_age 2m\n}",
			root:  "/etc/meridian",
			check: func(t *testing.T, b Block) {
				want := config.StateOptions{Enable: true, Path: "/etc/meridian/state/gslb.json", Interval: 10 * time.Second, MaxAge: 2 * time.Minute}
				if b.Options.State != want {
					t.Errorf("state %+v, want %+v", b.Options.State, want)
				}
			},
		},
		{
			name:  "state file defaults",
			input: "gslb {\n zone example.org. a.yml\n state_persist_enable\n}",
			check: func(t *testing.T, b Block) {
				want := config.StateOptions{Enable: true, Path: "/var/lib/coredns-gslb/state.json", Interval: 30 * time.Second, MaxAge: time.Minute}
				if b.Options.State != want {
					t.Errorf("state %+v, want %+v", b.Options.State, want)
				}
			},
		},
		{
			name:  "max_file_size",
			input: "gslb {\n zone example.org. a.yml\n max_file_size 64M\n}",
			check: func(t *testing.T, b Block) {
				if b.Options.MaxFileSize != 64<<20 {
					t.Errorf("max_file_size %d, want %d", b.Options.MaxFileSize, 64<<20)
				}
			},
		},
		{
			name:  "max_file_size default",
			input: "gslb {\n zone example.org. a.yml\n}",
			check: func(t *testing.T, b Block) {
				if b.Options.MaxFileSize != 0 {
					t.Errorf("max_file_size %d, want 0 (config.DefaultMaxFileSize)", b.Options.MaxFileSize)
				}
			},
		},
		{name: "max_file_size not a size", input: "gslb {\n zone example.org. a.yml\n max_file_size 1.5M\n}", wantErr: `Testfile:3 - Error during parsing: max_file_size: "1.5M" is not a size`},
		{name: "max_file_size zero", input: "gslb {\n zone example.org. a.yml\n max_file_size 0\n}", wantErr: `Testfile:3 - Error during parsing: max_file_size: "0" is not a size`},
		{name: "max_file_size arity", input: "gslb {\n zone example.org. a.yml\n max_file_size\n}", wantErr: "max_file_size: want one argument"},
		{name: "state_persist_enable not a bool", input: "gslb {\n zone example.org. a.yml\n state_persist_enable yes please\n}", wantErr: "Testfile:3 - Error during parsing: state_persist_enable: want at most one argument"},
		{name: "state_persist_interval too short", input: "gslb {\n zone example.org. a.yml\n state_persist_interval 10ms\n}", wantErr: "Testfile:3 - Error during parsing: state_persist_interval: 10ms is shorter than 1s"},
		{name: "state_max_age not a duration", input: "gslb {\n zone example.org. a.yml\n state_max_age old\n}", wantErr: "Testfile:3 - Error during parsing: state_max_age:"},
		{name: "state_persist_path arity", input: "gslb {\n zone example.org. a.yml\n state_persist_path\n}", wantErr: "state_persist_path: want one argument"},
		{name: "geoip_maxmind unknown type", input: "gslb {\n zone example.org. a.yml\n geoip_maxmind isp_db x.mmdb\n}", wantErr: `Testfile:3 - Error during parsing: geoip_maxmind: unknown database type "isp_db"`},
		{name: "geoip_maxmind twice", input: "gslb {\n zone example.org. a.yml\n geoip_maxmind city_db a.mmdb\n geoip_maxmind city_db b.mmdb\n}", wantErr: "Testfile:4 - Error during parsing: geoip_maxmind: the city_db database is given twice"},
		{name: "geoip_maxmind arity", input: "gslb {\n zone example.org. a.yml\n geoip_maxmind city_db\n}", wantErr: "want 'geoip_maxmind city_db|country_db|asn_db PATH'"},
		{name: "geoip_custom arity", input: "gslb {\n zone example.org. a.yml\n geoip_custom\n}", wantErr: "geoip_custom: want one argument"},
		{name: "unknown option names its line", input: "gslb {\n zone example.org. a.yml\n frobnicate on\n}", wantErr: `Testfile:3 - Error during parsing: unknown option "frobnicate"`},
		{name: "no zones", input: "gslb", keys: []string{"."}, wantErr: "no zones"},
		{name: "bad duration", input: "gslb {\n zone example.org. a.yml\n max_stagger_start soon\n}", wantErr: "Testfile:3"},
		{name: "bad count", input: "gslb {\n zone example.org. a.yml\n batch_size_start 0\n}", wantErr: "not a positive integer"},
		{name: "zone line arity", input: "gslb {\n zone example.org.\n}", wantErr: "want 'zone ORIGIN FILE'"},
		{name: "duplicate zone names its line", input: "gslb {\n zone example.org. a.yml\n zone EXAMPLE.org b.yml\n}", wantErr: "Testfile:3 - Error during parsing: zone example.org. is listed twice (first at line 2)"},
		{name: "zone of the short form listed again", input: "gslb a.yml example.org {\n zone example.org. b.yml\n}", wantErr: "Testfile:2 - Error during parsing: zone example.org. is listed twice (first at line 1)"},
		{name: "admin API without authentication names its line", input: "gslb {\n zone example.org. a.yml\n api_enable\n api_listen_addr 0.0.0.0\n}", wantErr: "Testfile:3 - Error during parsing: admin API on 0.0.0.0:8080: refusing to serve"},
		{name: "short form with several server zones", input: "gslb a.yml", keys: []string{"a.org.", "b.org."}, wantErr: "needs exactly one zone"},
		{name: "gslb twice", input: "gslb a.yml a.org\ngslb b.yml b.org", wantErr: "only be used once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b, ok := parseBlockWant(t, tt.input, tt.keys, tt.root, tt.wantErr); ok {
				tt.check(t, b)
			}
		})
	}
}

// parseBlockWant parses the Corefile input with ParseBlock. With wantErr, it checks that the
// error contains it and reports false; otherwise it fails on an error and reports true.
func parseBlockWant(t *testing.T, input string, keys []string, root, wantErr string) (Block, bool) {
	t.Helper()
	return parseBlockPortWant(t, input, keys, root, 0, wantErr)
}

// parseBlockPortWant is parseBlockWant for a server block listening on port.
func parseBlockPortWant(t *testing.T, input string, keys []string, root string, port int, wantErr string) (Block, bool) {
	t.Helper()
	c := caddy.NewTestController("dns", input)
	c.ServerBlockKeys = keys
	b, err := ParseBlock(c, root, port)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want one containing %q", err, wantErr)
		}
		return b, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return b, true
}

// TestGeoIPSpellings checks that each way CoreDNS-GSLB's documentation writes the GeoIP sources
// names the same files as Meridian's own spelling.
func TestGeoIPSpellings(t *testing.T) {
	all := config.GeoIPOptions{CityDB: "/g/city.mmdb", CountryDB: "/g/country.mmdb", ASNDB: "/g/asn.mmdb", CustomMap: "/g/map.yml"}
	tests := []struct {
		name, options string
		want          config.GeoIPOptions
		wantErr       string
	}{
		{name: "ours", options: "geoip_maxmind city_db city.mmdb\n geoip_maxmind country_db country.mmdb\n geoip_maxmind asn_db asn.mmdb\n geoip_custom map.yml", want: all},
		{name: "type names", options: "geoip_maxmind city city.mmdb\n geoip_maxmind country country.mmdb\n geoip_maxmind asn asn.mmdb\n geoip_custom_db map.yml", want: all},
		{name: "block", options: "geoip_maxmind {\n  country_db country.mmdb\n  city_db city.mmdb\n  asn asn.mmdb\n }\n geoip_custom map.yml", want: all},
		{name: "one-line city and asn", options: "geoip_maxmind country country.mmdb\n geoip_city_maxmind_db city.mmdb\n geoip_asn_maxmind_db asn.mmdb\n geoip_custom_db map.yml", want: all},
		{name: "block and line of one type", options: "geoip_maxmind {\n  city_db a.mmdb\n }\n geoip_maxmind city b.mmdb", wantErr: "Testfile:6 - Error during parsing: geoip_maxmind: the city_db database is given twice"},
		{name: "line and one-line spelling of one type", options: "geoip_maxmind asn_db a.mmdb\n geoip_asn_maxmind_db b.mmdb", wantErr: "Testfile:4 - Error during parsing: geoip_maxmind: the asn_db database is given twice"},
		{name: "empty block", options: "geoip_maxmind {\n }", wantErr: "Testfile:4 - Error during parsing: geoip_maxmind: want 'geoip_maxmind city_db|country_db|asn_db PATH' or a block"},
		{name: "bad type in block", options: "geoip_maxmind {\n  isp_db x.mmdb\n }", wantErr: `Testfile:4 - Error during parsing: geoip_maxmind: unknown database type "isp_db"`},
		{name: "block line arity", options: "geoip_maxmind {\n  city_db\n }", wantErr: "Testfile:4 - Error during parsing: geoip_maxmind: want 'TYPE PATH' in the block, got 0 arguments after city_db"},
		{name: "one-line spelling arity", options: "geoip_city_maxmind_db", wantErr: "geoip_city_maxmind_db: want one argument, got 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, ok := parseBlockWant(t, "gslb {\n zone example.org. a.yml\n "+tt.options+"\n}", nil, "/g", tt.wantErr)
			if ok && b.Options.GeoIP != tt.want {
				t.Errorf("geoip %+v, want %+v", b.Options.GeoIP, tt.want)
			}
		})
	}
}

func TestSetupFailsOnAnInvalidZoneFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(bad, []byte("records:\n  www.example.org.:\n    mode: round-robin\n    backends: [{address: 10.0.0.1}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := caddy.NewTestController("dns", "gslb "+bad+" example.org")
	err := setup(c)
	if err == nil || !strings.Contains(err.Error(), "bad.yml:3:11") || !strings.Contains(err.Error(), "roundrobin") {
		t.Fatalf("setup error %v, want the file position and a suggestion", err)
	}
}

func TestSetupErrorsNameTheirCorefileLine(t *testing.T) {
	dir := t.TempDir()
	zone := filepath.Join(dir, "zone.yml")
	if err := os.WriteFile(zone, []byte("records:\n  www.example.org.:\n    backends: [{address: 192.0.2.1}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	corefile := fmt.Sprintf("gslb {\n zone example.org. %s\n api_enable\n api_listen_port %d\n api_overrides_file %s\n}", zone, port, filepath.Join(dir, "o.json"))
	err = setup(caddy.NewTestController("dns", corefile))
	if err == nil || !strings.Contains(err.Error(), "Testfile:3 - Error during parsing: ") || !strings.Contains(err.Error(), strconv.Itoa(port)) {
		t.Fatalf("setup with the admin port in use: %v, want the api_* line and the port", err)
	}
	err = setup(caddy.NewTestController("dns", "\ngslb "+filepath.Join(dir, "missing.yml")+" example.org"))
	if err == nil || !strings.Contains(err.Error(), "Testfile:2 - Error during parsing: ") || !strings.Contains(err.Error(), "missing.yml") {
		t.Fatalf("setup with a missing zone file: %v, want the gslb line and the file", err)
	}
}
