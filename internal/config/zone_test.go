package config

import (
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"
)

func sharedProfiles(t testing.TB) map[string]HealthCheck {
	t.Helper()
	shared, err := LoadProfiles("testdata/profiles.yml")
	if err != nil {
		t.Fatal(err)
	}
	return shared
}

func loadTestZone(t *testing.T, file string) *Zone {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	z, err := ParseZone(file, data, "Example.ORG", sharedProfiles(t), 42)
	if err != nil {
		t.Fatalf("ParseZone(%s):\n%v", file, err)
	}
	return z
}

func parseString(t *testing.T, yml string) *Zone {
	t.Helper()
	z, err := ParseZone("zone.yml", []byte(yml), "example.org", sharedProfiles(t), 7)
	if err != nil {
		t.Fatalf("ParseZone:\n%v", err)
	}
	return z
}

func addrs(r Record) []string {
	var out []string
	for _, b := range r.Backends {
		out = append(out, b.Address)
	}
	return out
}

func eq(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

// TestSelectionModeExamples loads every YAML example of the selection-modes reference.
func TestSelectionModeExamples(t *testing.T) {
	tests := []struct {
		file  string
		name  string
		mode  Mode
		addrs []string
		check func(t *testing.T, r Record)
	}{
		{"failover.yml", "app.example.org.", ModeFailover, []string{"10.0.0.1", "10.0.0.2"}, func(t *testing.T, r Record) {
			eq(t, "priorities", []int{int(r.Backends[0].Priority), int(r.Backends[1].Priority)}, []int{1, 2})
		}},
		{"roundrobin.yml", "app.example.org.", ModeRoundRobin, []string{"10.0.0.1", "10.0.0.2"}, nil},
		{"random.yml", "app.example.org.", ModeRandom, []string{"10.0.0.1", "10.0.0.2"}, nil},
		{"geoip_coords.yml", "webapp.example.org.", ModeGeoIP, []string{"172.16.0.10", "172.16.0.11"}, func(t *testing.T, r Record) {
			b := r.Backends[0]
			eq(t, "coords", []any{b.Labels().HasCoords, b.Labels().Latitude, b.Labels().Longitude}, []any{true, 37.3382, -121.8863})
			eq(t, "description", b.Labels().Description, "webapp10")
			eq(t, "record description", r.Settings().Description, "GeoIP nearest-backend routing based on MaxMind city coordinates")
			eq(t, "check", []any{b.Checks().HealthChecks[0].Profile, b.Checks().HealthChecks[0].Type, b.Checks().HealthChecks[0].Params.Map()["port"]},
				[]any{"https_default", "http", 443})
			eq(t, "rise/fall from profile", []int{b.Checks().Rise, b.Checks().Fall}, []int{2, 4})
		}},
		{"geoip_city.yml", "webapp.example.org.", ModeGeoIP, []string{"172.16.0.10", "172.16.0.11", "172.16.0.12", "172.16.0.13"}, func(t *testing.T, r Record) {
			b := r.Backends[0]
			eq(t, "geo", []string{b.Labels().Country, b.Labels().Subdivision, b.Labels().City}, []string{"US", "CA", "San Jose"})
			eq(t, "continent", r.Backends[2].Labels().Continent, "NA")
			eq(t, "no coords", b.Labels().HasCoords, false)
			eq(t, "no checks", r.Backends[3].Checks().HealthChecks, []HealthCheck(nil))
			eq(t, "default rise/fall", []int{r.Backends[3].Checks().Rise, r.Backends[3].Checks().Fall}, []int{DefaultRise, DefaultFall})
		}},
		{"geoip_location.yml", "app.example.org.", ModeGeoIP, []string{"10.0.0.1", "192.168.1.1"}, func(t *testing.T, r Record) {
			eq(t, "location", r.Backends[1].Labels().Location, "eu-west-2")
		}},
		{"geoip_country.yml", "app.example.org.", ModeGeoIP, []string{"10.0.0.1", "20.0.0.1"}, func(t *testing.T, r Record) {
			eq(t, "country", r.Backends[0].Labels().Country, "FR")
		}},
		{"geoip_cityname.yml", "app.example.org.", ModeGeoIP, []string{"10.0.0.1", "20.0.0.1"}, func(t *testing.T, r Record) {
			eq(t, "city", r.Backends[1].Labels().City, "New York")
		}},
		{"geoip_asn.yml", "app.example.org.", ModeGeoIP, []string{"10.0.0.1", "20.0.0.1"}, func(t *testing.T, r Record) {
			eq(t, "asn", []uint32{r.Backends[0].Labels().ASN, r.Backends[1].Labels().ASN}, []uint32{12345, 67890})
		}},
		{"geoip_affinity.yml", "app.example.org.", ModeGeoIPAffinity, []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}, func(t *testing.T, r Record) {
			b := r.Backends[2]
			eq(t, "paris", []any{b.Labels().Country, b.Labels().HasCoords, b.Labels().Latitude, b.Labels().Longitude}, []any{"FR", true, 48.8566, 2.3522})
		}},
		{"weighted.yml", "app.example.org.", ModeWeighted, []string{"10.0.0.1", "10.0.0.2"}, func(t *testing.T, r Record) {
			eq(t, "weights", []int{int(r.Backends[0].Weight), int(r.Backends[1].Weight)}, []int{8, 2})
		}},
		{"iphash.yml", "app.example.org.", ModeIPHash, []string{"10.0.0.1", "10.0.0.2"}, nil},
		{"fail_closed.yml", "webapp.example.org.", ModeRoundRobin, []string{"172.16.0.10", "172.16.0.11"}, func(t *testing.T, r Record) {
			eq(t, "fallback", r.Settings().Fallback, Fallback{Mode: FallbackFailClosed, Rcode: 3})
		}},
		{"fail_specific_ips.yml", "api.example.org.", ModeFailover, []string{"172.16.0.20", "172.16.0.21"}, func(t *testing.T, r Record) {
			eq(t, "fallback", r.Settings().Fallback, Fallback{Mode: FallbackFailSpecific,
				IPs: []netip.Addr{netip.MustParseAddr("1.2.3.4"), netip.MustParseAddr("2001:db8::1")}})
		}},
		{"fail_specific_cname.yml", "api.example.org.", ModeFailover, []string{"172.16.0.20", "172.16.0.21"}, func(t *testing.T, r Record) {
			eq(t, "fallback", r.Settings().Fallback, Fallback{Mode: FallbackFailSpecific, CNAME: "backup.cdn.cloudflare.net."})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			z := loadTestZone(t, tt.file)
			if len(z.Records) != 1 {
				t.Fatalf("got %d records, want 1", len(z.Records))
			}
			r := z.Records[0]
			eq(t, "name", r.Name, tt.name)
			eq(t, "mode", r.Mode, tt.mode)
			eq(t, "addresses", addrs(r), tt.addrs)
			eq(t, "ttl", r.TTL, uint32(DefaultRecordTTL))
			eq(t, "scrape", []time.Duration{r.Settings().ScrapeInterval, r.Settings().ScrapeTimeout}, []time.Duration{DefaultScrapeInterval, DefaultScrapeTimeout})
			eq(t, "retries", r.Settings().ScrapeRetries, DefaultScrapeRetries)
			if tt.file[:4] != "fail" {
				eq(t, "fallback", r.Settings().Fallback, Fallback{Mode: FallbackFailOpen})
			}
			for _, b := range r.Backends {
				if !b.Enable || !b.IP.IsValid() || b.IsHost() {
					t.Errorf("backend %s: enable=%v ip=%v", b.Address, b.Enable, b.IP)
				}
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

func TestFullZone(t *testing.T) {
	z := loadTestZone(t, "full.yml")
	eq(t, "origin", z.Origin, "example.org.")
	eq(t, "SOA", z.SOA, SOA{TTL: 3600, MName: "ns-a.example.org.", RName: "dns-admin.example.org.", Serial: 2024010101,
		Refresh: 7200, Retry: 3600, Expire: 1209600, Minimum: 30})
	eq(t, "NS", z.NS, []string{"ns-a.example.org.", "ns-b.example.net."})
	var names []string
	for _, r := range z.Records {
		names = append(names, r.Name)
	}
	eq(t, "sorted names", names, []string{"*.apps.example.org.", "example.org.", "www.example.org."})

	apps, apex, www := z.Records[0], z.Records[1], z.Records[2]
	// Defaults apply where the record is silent; a record's own key wins.
	eq(t, "www mode", www.Mode, ModeWeighted)
	eq(t, "apps mode (default)", apps.Mode, ModeRoundRobin)
	eq(t, "ttl (default, quoted)", []uint32{www.TTL, apps.TTL}, []uint32{60, 60})
	eq(t, "owner", []string{www.Settings().Owner, apps.Settings().Owner}, []string{"platform", "platform"})
	eq(t, "www scrape", []time.Duration{www.Settings().ScrapeInterval, www.Settings().ScrapeTimeout}, []time.Duration{30 * time.Second, 5 * time.Second})
	eq(t, "apex scrape", []time.Duration{apex.Settings().ScrapeInterval, apex.Settings().ScrapeTimeout}, []time.Duration{time.Minute, 20 * time.Second})
	eq(t, "retries", apex.Settings().ScrapeRetries, 2)
	eq(t, "alpn", www.Settings().ALPN, []string{"h2", "http/1.1"})
	eq(t, "www fallback", www.Settings().Fallback, Fallback{Mode: FallbackFailSpecific, CNAME: "backup.example.net."})
	eq(t, "apps fallback (default)", apps.Settings().Fallback, Fallback{Mode: FallbackFailClosed, Rcode: 2})
	eq(t, "www pos", www.Pos, At("full.yml", 32, 3))

	b0, b1, b2 := www.Backends[0], www.Backends[1], www.Backends[2]
	eq(t, "b0", []any{b0.Port, b0.Weight, b0.Priority, b0.Enable}, []any{uint16(443), int32(0), int32(0), true})
	// The file's own https_default wins over the shared one; tcp_default comes from shared.
	eq(t, "b0 checks", []string{b0.Checks().HealthChecks[0].Pos.File(), b0.Checks().HealthChecks[1].Pos.File()}, []string{"full.yml", "testdata/profiles.yml"})
	eq(t, "b0 params", b0.Checks().HealthChecks[0].Params.Map(), map[string]any{"port": 8443, "uri": "/healthz",
		"headers": map[string]any{"Host": "app.example.org"}, "codes": []any{200, 204}, "ratio": 0.5})
	eq(t, "b0 rise/fall (max of checks, default)", []int{b0.Checks().Rise, b0.Checks().Fall}, []int{3, DefaultFall})
	eq(t, "b1 unmapped", []any{b1.Address, b1.IP, b1.Weight, b1.Priority}, []any{"::ffff:10.0.0.2", netip.MustParseAddr("10.0.0.2"), int32(-3), int32(4)})
	eq(t, "b1 legacy check", []any{b1.Checks().HealthChecks[0].Type, b1.Checks().HealthChecks[0].Params.Map()["script"]}, []any{"custom", "/usr/local/bin/check.sh"})
	eq(t, "b1 inline check", []any{b1.Checks().HealthChecks[1].Profile, b1.Checks().HealthChecks[1].Type, b1.Checks().HealthChecks[1].Fall}, []any{"", "tcp", int32(9)})
	eq(t, "b1 rise (own) fall (max)", []int{b1.Checks().Rise, b1.Checks().Fall}, []int{7, 9})
	eq(t, "b2 host", []any{b2.Address, b2.IsHost(), b2.Labels().ASN}, []any{"cdn.example.net.", true, uint32(64500)})
	eq(t, "b2 geo", []any{b2.Labels().Continent, b2.Labels().Country, b2.Labels().Subdivision, b2.Labels().City, b2.Labels().HasCoords, b2.Labels().Latitude, b2.Labels().Longitude},
		[]any{"OC", "AU", "NSW", "Sydney", true, -33.9, 151.2})
	eq(t, "b2 flags", []any{b2.AssumeHealthy, b2.Passive, b2.Labels().Description}, []any{true, true, "cdn"})

	// An anchored backend, reused with a merge key and an overriding port.
	eq(t, "apps backend", []any{apps.Backends[0].Port, apps.Backends[0].Enable, apps.Backends[0].Labels().Tags}, []any{uint16(8080), false, []string{"edge"}})
	eq(t, "apex merged", []any{apex.Backends[1].Address, apex.Backends[1].Port, apex.Backends[1].Enable}, []any{"2001:db8::10", uint16(9090), false})
}

func TestGeneratedSOA(t *testing.T) {
	for _, tt := range []struct {
		name, origin, yml string
		soa               SOA
		ns                []string
	}{
		{"absent", "Example.Org", "records: {}", SOA{TTL: 3600, MName: "ns1.example.org.", RName: "hostmaster.example.org.",
			Serial: 99, Refresh: 7200, Retry: 3600, Expire: 1209600, Minimum: 60}, []string{"ns1.example.org."}},
		{"ns sets mname", "example.org.", "ns: [a.example.net]", SOA{TTL: 3600, MName: "a.example.net.", RName: "hostmaster.example.org.",
			Serial: 99, Refresh: 7200, Retry: 3600, Expire: 1209600, Minimum: 60}, []string{"a.example.net."}},
		{"partial soa", "example.org", "soa: {mname: NS9.example.org, retry: 10, ttl: 5}", SOA{TTL: 5, MName: "ns9.example.org.",
			RName: "hostmaster.example.org.", Serial: 99, Refresh: 7200, Retry: 10, Expire: 1209600, Minimum: 60}, []string{"ns9.example.org."}},
		{"root zone", ".", "", SOA{TTL: 3600, MName: "ns1.", RName: "hostmaster.", Serial: 99, Refresh: 7200, Retry: 3600,
			Expire: 1209600, Minimum: 60}, []string{"ns1."}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			z, err := ParseZone("z.yml", []byte(tt.yml), tt.origin, nil, 99)
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "SOA", z.SOA, tt.soa)
			eq(t, "NS", z.NS, tt.ns)
			if len(z.Records) != 0 {
				t.Errorf("records = %v", z.Records)
			}
		})
	}
}

func TestDefaultsAndProfiles(t *testing.T) {
	z := parseString(t, `
healthcheck_profiles:
  tcp_default: {type: TCP, params: {port: 8080}, fall: 6}
defaults:
  mode: ip-hash
  record_ttl: 300
  scrape_timeout: 2s
  description: from defaults
records:
  a.example.org:
    record_ttl: 0
    scrape_interval: 2
    backends:
      - address: 10.0.0.1
        healthchecks: [tcp_default, https_default]
  B.example.org.:
    mode: failover
    description: ~
    backends:
      - address: 10.0.0.1
        fall: 1
        healthchecks: [https_default]
`)
	a, b := z.Records[0], z.Records[1]
	eq(t, "names", []string{a.Name, b.Name}, []string{"a.example.org.", "b.example.org."})
	eq(t, "modes", []Mode{a.Mode, b.Mode}, []Mode{ModeIPHash, ModeFailover})
	eq(t, "ttl", []uint32{a.TTL, b.TTL}, []uint32{0, 300})
	eq(t, "null means unset: default description", b.Settings().Description, "from defaults")
	eq(t, "a scrape", []time.Duration{a.Settings().ScrapeInterval, a.Settings().ScrapeTimeout}, []time.Duration{2 * time.Second, 2 * time.Second})
	eq(t, "local profile wins", []any{a.Backends[0].Checks().HealthChecks[0].Type, a.Backends[0].Checks().HealthChecks[0].Params.Map()["port"]}, []any{"tcp", 8080})
	eq(t, "a rise/fall", []int{a.Backends[0].Checks().Rise, a.Backends[0].Checks().Fall}, []int{2, 6})
	eq(t, "b rise/fall", []int{b.Backends[0].Checks().Rise, b.Backends[0].Checks().Fall}, []int{2, 1})
}

func TestScrapeTimeoutDefaultsToInterval(t *testing.T) {
	z := parseString(t, "records: {x.example.org: {scrape_interval: 3s, backends: [{address: 10.0.0.1}]}}")
	eq(t, "timeout", z.Records[0].Settings().ScrapeTimeout, 3*time.Second)
}

func TestParseMode(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{"failover", "failover", ""},
		{" RoundRobin ", "roundrobin", ""},
		{"GEOIP_AFFINITY", "geoip_affinity", ""},
		{"round-robin", "", `unknown mode "round-robin"; did you mean "roundrobin"?`},
		{"iphash", "", `unknown mode "iphash"; did you mean "ip-hash"?`},
		{"geoip-affinity", "", `unknown mode "geoip-affinity"; did you mean "geoip_affinity"?`},
		{"failvoer", "", `unknown mode "failvoer"; did you mean "failover"?`},
		{"weigthed", "", `unknown mode "weigthed"; did you mean "weighted"?`},
		{"nearest", "", `unknown mode "nearest" (valid: failover, roundrobin, random, weighted, ip-hash, consistent-hash, geoip, geoip_affinity, chain)`},
	} {
		m, err := ParseMode(tt.in)
		if tt.err == "" {
			if err != nil || string(m) != tt.want {
				t.Errorf("ParseMode(%q) = %q, %v; want %q", tt.in, m, err, tt.want)
			}
			continue
		}
		if err == nil || len(err.Error()) < len(tt.err) || err.Error()[:len(tt.err)] != tt.err {
			t.Errorf("ParseMode(%q) error = %v; want prefix %q", tt.in, err, tt.err)
		}
	}
}

func TestCanonicalName(t *testing.T) {
	for in, want := range map[string]string{"WWW.Example.Org": "www.example.org.", "a.b.": "a.b.", "": ".", ".": ".", " X ": "x.", "\u212a.org": "\u212a.org."} {
		eq(t, "CanonicalName("+in+")", CanonicalName(in), want)
	}
	// A name already canonical is returned as it is, with no copy.
	in := strings.Repeat("label.", 8)
	if got := CanonicalName(in); unsafe.StringData(got) != unsafe.StringData(in) {
		t.Error("a canonical name is copied")
	}
	if testing.AllocsPerRun(10, func() { _ = CanonicalName(in) }) != 0 {
		t.Error("a canonical name allocates")
	}
}

func TestLoadZone(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "zone.yml")
	if err := os.WriteFile(file, []byte("records: {www.example.org: {backends: [{address: 10.0.0.1}]}}"), 0o600); err != nil {
		t.Fatal(err)
	}
	mtime := time.Unix(1700000000, 0)
	if err := os.Chtimes(file, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	z, err := LoadZone(ZoneSource{Origin: "example.org.", File: file}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "serial", z.SOA.Serial, uint32(1700000000))
	eq(t, "file", z.File, file)

	if _, err := LoadZone(ZoneSource{Origin: "example.org.", File: filepath.Join(dir, "missing.yml")}, nil, 0); err == nil {
		t.Error("LoadZone of a missing file: no error")
	}
	if _, err := LoadProfiles(filepath.Join(dir, "missing.yml")); err == nil {
		t.Error("LoadProfiles of a missing file: no error")
	}
}
