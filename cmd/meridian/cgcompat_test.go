package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// The CoreDNS-GSLB compatibility suite: a configuration written as CoreDNS-GSLB's documentation
// writes it (its Corefile syntax and full example, docs/configuration.md; its records, modes and
// health-check pages; coredns/gslb_config.example.com.yml), changed only where a test must
// change it (loopback addresses, free ports, temporary paths, 1 s intervals), is checked with
// meridian check and served by the real binary, and answers as CoreDNS-GSLB documents.

// cgCorefile is CoreDNS-GSLB's Corefile with every option it documents. %[1]d is the DNS port
// and %[2]s the directory of the other files.
const cgCorefile = `.:%[1]d {
    bind 127.0.0.1
    gslb {
        zones {
            gslb.example.com.   %[2]s/gslb_config.example.com.yml
            test.org.           %[2]s/gslb_config.test.org.yml
        }
        max_stagger_start "120s"
        resolution_idle_timeout "3600s"   # Duration before slow healthcheck
        healthcheck_idle_multiplier 10
        batch_size_start 100
        geoip_maxmind {
            country_db %[2]s/GeoLite2-Country.mmdb
        }
        geoip_maxmind asn %[2]s/GeoLite2-ASN.mmdb
        geoip_city_maxmind_db %[2]s/GeoLite2-City.mmdb
        geoip_custom_db %[2]s/location_map.yml
        use_edns_csubnet
        api_enable false
        disable_txt
        healthcheck_profiles %[2]s/healthcheck_profiles.yml
        state_persist_enable
        state_persist_path %[2]s/state/gslb-state.json
        state_persist_interval "1s"
        state_max_age "60s"
    }
}
`

// cgProfiles is the global profiles file of CoreDNS-GSLB's configuration page, with a skipped
// certificate check (the test server's certificate is self-signed) and a 1 s timeout.
const cgProfiles = `healthcheck_profiles:
  https_default:
    type: http
    params:
      enable_tls: true
      port: 443
      uri: /
      expected_code: 200
      timeout: 1s
      skip_tls_verify: true
      host: "localhost"
`

// cgZone is the zone file of gslb.example.com., one record per behaviour of CoreDNS-GSLB's
// records and modes pages. %[1]s is the address whose port 443 has the HTTPS server, %[2]d the
// port of the plain HTTP server on 127.0.0.1 and %[3]d that of the TCP listener on 127.0.0.1.
const cgZone = `healthcheck:
  rise: 1
  fall: 1

defaults:
  record_ttl: 30
  scrape_interval: 1s
  scrape_retries: 1
  alpn: [h3, h2]

healthcheck_profiles:
  http_plain:
    type: http
    params:
      enable_tls: false
      port: %[2]d
      uri: "/"
      method: "GET"
      host: "localhost"
      expected_code: 200

records:
  webapp.gslb.example.com.:
    owner: "admin"
    description: "Dynamic DNS responses based on backend status"
    mode: "failover"
    backends:
    - address: "%[1]s"
      description: "webapp10"
      location: "eu-west-1"
      enable: true
      priority: 1
      timeout: 1s
      healthchecks:
        - https_default
        - type: http
          params:
            uri: "/"
            skip_tls_verify: true
    - address: "127.0.0.1"
      description: "webapp11"
      enable: true
      priority: 2
      healthchecks: [ http_plain ]

  api.gslb.example.com.:
    mode: "failover"
    failover_policy:
      mode: "fail-specific"
      fallback_ips: ["192.0.2.1", "2001:db8::1"]
    backends:
      - address: "127.0.0.1"
        priority: 1
        healthchecks: [{type: tcp, params: {port: %[3]d, timeout: "1s"}}]
      - address: "127.0.0.2"
        priority: 2
        healthchecks: [{type: tcp, params: {port: %[3]d, timeout: "1s"}}]

  rr.gslb.example.com.:
    mode: "roundrobin"
    svcb_alpn: [h2]
    backends:
      - address: "127.0.0.21"
        healthchecks: &custom
          - type: custom
            params:
              script: 'test "$BACKEND_ADDRESS" = 127.0.0.21'
              timeout: 1s
      - address: "127.0.0.22"
        healthchecks: *custom

  closed.gslb.example.com.:
    mode: "roundrobin"
    failover_policy:
      mode: "fail-closed"
      rcode: "NXDOMAIN"
    backends:
      - {address: "127.0.0.31", healthchecks: *custom}
      - {address: "127.0.0.32", healthchecks: *custom}

  cdn.gslb.example.com.:
    mode: "failover"
    fallback_policy:
      mode: "fail-specific"
      fallback_cname: "backup.cdn.example.net"
    backends:
      - {address: "127.0.0.41", healthchecks: *custom}

  random.gslb.example.com.:
    mode: "random"
    backends:
      - address: "127.0.0.1"
        healthchecks: &lua
          - type: lua
            params:
              timeout: 1s
              script: |
                local body = http_get("http://" .. backend.address .. ":%[2]d/health", 1)
                if body == "green" then
                  return true
                end
                return false
      - address: "127.0.0.2"
        healthchecks: *lua

  weighted.gslb.example.com.:
    mode: "weighted"
    backends:
      - address: "10.0.2.1"
        weight: 8
      - address: "10.0.2.2"
        weight: 2

  sticky.gslb.example.com.:
    mode: "ip-hash"
    hash_order: text
    backends:
      - address: "10.0.0.9"
      - address: "10.0.0.10"
      - address: "10.0.0.100"
`

// cgGeoZone is the zone file of test.org., the geo modes of CoreDNS-GSLB's modes page, with
// each geo field a single value where that page also writes lists (country: [ "FR" ]), which
// Meridian refuses (docs/migrating-from-coredns-gslb.md#the-compatibility-suite).
const cgGeoZone = `records:
  geo.test.org.:
    mode: "geoip"
    backends:
      - {address: "10.0.0.1", country: "FR"}
      - {address: "10.0.0.2", country: "US", subdivision: "CA", city: "San Jose"}
      - {address: "10.0.0.3", asn: "AS64500"}
  near.test.org.:
    mode: geoip_affinity
    backends:
      - {address: "10.1.0.1", location: "eu-west-1", latitude: 48.8566, longitude: 2.3522}
      - {address: "10.1.0.2", location: "us-east-1", latitude: 40.7128, longitude: -74.0060}
`

// cgLocationMap is the location map of CoreDNS-GSLB's configuration page. Its pages write each
// location as a list (location: ["eu-west-1"]), which Meridian refuses ("must be a location
// name, not a list"): the suite writes the names alone, as the migration guide says.
const cgLocationMap = `subnets:
  - subnet: "192.0.2.0/24"
    location: "eu-west-1"
  - subnet: "198.18.0.0/24"
    location: "us-east-1"
`

// cgSetup is the configuration of the suite and the servers its checks reach.
type cgSetup struct {
	dir      string
	httpsIP  string // the failover record's priority 1: HTTPS on port 443
	https    *httptest.Server
	tcp      net.Listener // the api record's TCP check
	corefile func(port int) string
}

// listen443 listens on port 443 of a loopback address not in use, for http checks that take
// CoreDNS-GSLB's default port. It skips the test where binding 443 is not permitted.
func listen443(t *testing.T) net.Listener {
	t.Helper()
	for i := range 50 {
		ip := netip.AddrFrom4([4]byte{127, 45, byte(os.Getpid() >> 8), byte(os.Getpid() + i)})
		l, err := net.Listen("tcp", netip.AddrPortFrom(ip, 443).String())
		if errors.Is(err, syscall.EACCES) {
			t.Skip("binding port 443 needs root or CAP_NET_BIND_SERVICE")
		}
		if err == nil {
			return l
		}
	}
	t.Fatal("no loopback address with port 443 free")
	return nil
}

// newCGSetup starts the backends' servers and writes CoreDNS-GSLB's files into a new directory.
func newCGSetup(t *testing.T) *cgSetup {
	t.Helper()
	s := &cgSetup{dir: t.TempDir()}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			_, _ = io.WriteString(w, "green")
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	s.https = httptest.NewUnstartedServer(ok)
	s.https.Listener.Close()
	s.https.Listener = listen443(t)
	s.https.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.https.StartTLS()
	t.Cleanup(s.https.Close)
	s.httpsIP = netip.MustParseAddrPort(s.https.Listener.Addr().String()).Addr().String()
	plain := httptest.NewServer(ok)
	t.Cleanup(plain.Close)
	plainPort := plain.Listener.Addr().(*net.TCPAddr).Port
	s.tcp = testutil.ServeTCP(t, "127.0.0.1:0", func(net.Conn) {})

	write := func(name, content string) { writeFile(t, s.dir, name, content) }
	write("gslb_config.example.com.yml", fmt.Sprintf(cgZone, s.httpsIP, plainPort, s.tcp.Addr().(*net.TCPAddr).Port))
	write("gslb_config.test.org.yml", cgGeoZone)
	write("healthcheck_profiles.yml", cgProfiles)
	write("location_map.yml", cgLocationMap)
	mustRename(t, testutil.WriteCountryDB(t, []testutil.GeoNetwork{{Prefix: "203.0.113.0/24", Country: "FR", Continent: "EU"}}), filepath.Join(s.dir, "GeoLite2-Country.mmdb"))
	mustRename(t, testutil.WriteCityDB(t, []testutil.GeoNetwork{{Prefix: "198.51.100.0/24", City: "San Jose", Subdivision: "CA", Country: "US", Continent: "NA", Lat: 37.33, Lon: -121.89}}), filepath.Join(s.dir, "GeoLite2-City.mmdb"))
	mustRename(t, testutil.WriteASNDB(t, []testutil.ASNNetwork{{Prefix: "100.64.0.0/24", ASN: 64500, Org: "Example"}}), filepath.Join(s.dir, "GeoLite2-ASN.mmdb"))
	s.corefile = func(port int) string { return fmt.Sprintf(cgCorefile, port, s.dir) }
	return s
}

func mustRename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// lineOf returns the 1-based line of the first line of the file that contains text.
func lineOf(t *testing.T, file, text string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, text) {
			return i + 1
		}
	}
	t.Fatalf("%s has no line with %q", file, text)
	return 0
}

// compatTopics returns the topics of the differences that check -compat printed, the part
// between the place and "CoreDNS-GSLB", with the addresses of the test made stable.
var compatLine = regexp.MustCompile(`^[^ ]+:\d+: (.+?): CoreDNS-GSLB `)

func compatTopics(out string) []string {
	var topics []string
	for _, l := range strings.Split(out, "\n") {
		if m := compatLine.FindStringSubmatch(l); m != nil {
			topics = append(topics, m[1])
		}
	}
	slices.Sort(topics)
	return topics
}

// cgClientQuery asks name/qtype for a client in subnet (EDNS Client Subnet).
func cgClientQuery(t *testing.T, s *testutil.Server, name string, qtype uint16, subnet string) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.SetEdns0(1232, false)
	if err := testutil.AddECS(m, subnet); err != nil {
		t.Fatal(err)
	}
	return s.Exchange(t, "udp", m)
}

// cgHashChoice is the backend CoreDNS-GSLB's modes page says ip-hash gives client: the
// backends sorted as text, and the one at FNV-1a 32 of the client's address text mod n.
func cgHashChoice(client string, backends []string, byText bool) string {
	sorted := slices.Clone(backends)
	if byText {
		slices.Sort(sorted)
	} else {
		slices.SortFunc(sorted, func(a, b string) int {
			return netip.MustParseAddr(a).Compare(netip.MustParseAddr(b))
		})
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(client))
	return sorted[h.Sum32()%uint32(len(sorted))]
}

func TestCoreDNSGSLBCompatibility(t *testing.T) {
	cg := newCGSetup(t)
	core := writeFile(t, cg.dir, "Corefile.check", cg.corefile(53))
	zoneFile := filepath.Join(cg.dir, "gslb_config.example.com.yml")

	t.Run("check", func(t *testing.T) {
		var out, errs strings.Builder
		if code := runCheck([]string{"-conf", core}, &out, &errs); code != 0 {
			t.Fatalf("meridian check: exit %d:\n%s%s", code, out.String(), errs.String())
		}
		text := out.String() + errs.String()
		// failover_policy is CoreDNS-GSLB's old name: accepted, with a warning at its line.
		for _, record := range []string{"api.gslb.example.com.", "closed.gslb.example.com."} {
			line := lineOf(t, zoneFile, record) + 2
			want := fmt.Sprintf("warning: %s:%d:5: records[%q].failover_policy: failover_policy is deprecated", zoneFile, line, record)
			if !strings.Contains(text, want) {
				t.Errorf("no warning %q:\n%s", want, text)
			}
		}
		// The zone sets fall 1 (the tests fail over on one probe): the timers' lint warns of it
		// at each backend (rule fall-one), and of nothing else.
		var others []string
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "warning:") && !strings.Contains(line, "failover_policy is deprecated") && !strings.HasSuffix(line, "(fall-one)") {
				others = append(others, line)
			}
		}
		if n := strings.Count(text, "(fall-one)"); n == 0 || len(others) > 0 {
			t.Errorf("%d fall-one warnings and %d others, want fall-one's and the 2 of failover_policy only:\n%s", n, len(others), text)
		}
	})

	t.Run("check the one-line geoip_maxmind", func(t *testing.T) {
		// The other spelling of the full example: "geoip_maxmind country FILE" for the block.
		block := fmt.Sprintf("geoip_maxmind {\n            country_db %s/GeoLite2-Country.mmdb\n        }", cg.dir)
		if !strings.Contains(cg.corefile(53), block) {
			t.Fatal("the Corefile has no geoip_maxmind block")
		}
		oneLine := strings.Replace(cg.corefile(53), block, "geoip_maxmind country "+cg.dir+"/GeoLite2-Country.mmdb", 1)
		var out, errs strings.Builder
		if code := runCheck([]string{"-conf", writeFile(t, cg.dir, "Corefile.oneline", oneLine)}, &out, &errs); code != 0 {
			t.Fatalf("meridian check: exit %d:\n%s%s", code, out.String(), errs.String())
		}
	})

	t.Run("check -compat", func(t *testing.T) {
		var out, errs strings.Builder
		if code := runCheck([]string{"-compat", "-conf", core}, &out, &errs); code != 0 {
			t.Fatalf("meridian check -compat: exit %d:\n%s%s", code, out.String(), errs.String())
		}
		// What remains different: CoreDNS-GSLB's metrics are opt-in, test.org. sets no alpn,
		// and one http check sets no host.
		want := []string{
			"alpn (2 records of test.org.)",
			"coredns_gslb_metrics",
			"webapp.gslb.example.com. backend " + cg.httpsIP + " http check host",
		}
		if got := compatTopics(out.String()); !slices.Equal(got, want) {
			t.Errorf("differences %q, want %q:\n%s", got, want, out.String())
		}
		if !strings.Contains(out.String(), fmt.Sprintf("OK, %d difference(s) from CoreDNS-GSLB", len(want))) {
			t.Errorf("no summary line:\n%s", out.String())
		}
	})

	t.Run("ctl validate", func(t *testing.T) {
		geo := filepath.Join(cg.dir, "gslb_config.test.org.yml")
		code, out, errOut := ctl(nil, "validate", geo, "--zone", "test.org")
		if code != 0 || !strings.Contains(out, "OK, zone test.org., 2 records") {
			t.Errorf("ctl validate %s: exit %d, %q %q", geo, code, out, errOut)
		}
	})

	s := testutil.Start(t, cg.dir, cg.corefile)
	answer := func(name string) []string { return addresses(s.Query(t, "udp", name, dns.TypeA)) }
	answersEventually := func(name string, want ...string) {
		t.Helper()
		testutil.Eventually(t, 8*time.Second, func() bool { return slices.Equal(answer(name), want) },
			"%s answers %v, want %v; logs:\n%s", name, answer(name), want, s.Logs())
	}

	t.Run("serving", func(t *testing.T) {
		// The CoreDNS-GSLB http check defaults (HTTPS on 443) and the profiles pass.
		answersEventually("webapp.gslb.example.com", cg.httpsIP)
		// A custom shell check sees BACKEND_ADDRESS: only 127.0.0.21 passes.
		answersEventually("rr.gslb.example.com", "127.0.0.21")
		// A lua check reaches backend.address with http_get: only 127.0.0.1 serves /health.
		answersEventually("random.gslb.example.com", "127.0.0.1")
		answersEventually("api.gslb.example.com", "127.0.0.1")

		// Fail-closed with NXDOMAIN, fail-specific with a CNAME.
		if r := s.Query(t, "udp", "closed.gslb.example.com", dns.TypeA); r.Rcode != dns.RcodeNameError || len(r.Answer) != 0 {
			t.Errorf("fail-closed record: rcode %s with %v, want NXDOMAIN and no answer", dns.RcodeToString[r.Rcode], r.Answer)
		}
		if got := answer("cdn.gslb.example.com"); !slices.Equal(got, []string{"CNAME backup.cdn.example.net."}) {
			t.Errorf("fail-specific CNAME record: %v", got)
		}

		// Weighted: one backend per answer, both of them over enough queries.
		seen := map[string]int{}
		for range 60 {
			got := answer("weighted.gslb.example.com")
			if len(got) != 1 || (got[0] != "10.0.2.1" && got[0] != "10.0.2.2") {
				t.Fatalf("weighted answer %v", got)
			}
			seen[got[0]]++
		}
		if seen["10.0.2.1"] <= seen["10.0.2.2"] || seen["10.0.2.2"] == 0 {
			t.Errorf("weighted 8:2 answered %v", seen)
		}

		// ip-hash with hash_order text: every client gets CoreDNS-GSLB's backend.
		backends := []string{"10.0.0.9", "10.0.0.10", "10.0.0.100"}
		differ := 0
		for i := range 16 {
			client := fmt.Sprintf("198.51.7.%d", i)
			want := cgHashChoice(client, backends, true)
			if want != cgHashChoice(client, backends, false) {
				differ++
			}
			if got := addresses(cgClientQuery(t, s, "sticky.gslb.example.com", dns.TypeA, client+"/32")); !slices.Equal(got, []string{want}) {
				t.Errorf("ip-hash client %s: %v, want CoreDNS-GSLB's %s", client, got, want)
			}
		}
		if differ == 0 {
			t.Fatal("no client of the test tells the text order from the value order")
		}

		// geoip by the client subnet: country_db (block form), city_db, asn_db, then the
		// location map for geoip_affinity.
		for _, c := range []struct{ name, subnet, want string }{
			{"geo.test.org", "203.0.113.0/24", "10.0.0.1"},
			{"geo.test.org", "198.51.100.0/24", "10.0.0.2"},
			{"geo.test.org", "100.64.0.0/24", "10.0.0.3"},
			{"near.test.org", "192.0.2.0/24", "10.1.0.1"},
			{"near.test.org", "198.18.0.0/24", "10.1.0.2"},
		} {
			if got := addresses(cgClientQuery(t, s, c.name, dns.TypeA, c.subnet)); !slices.Equal(got, []string{c.want}) {
				t.Errorf("%s for a client in %s: %v, want %s", c.name, c.subnet, got, c.want)
			}
		}

		// disable_txt: gslb answers no TXT.
		if r := s.Query(t, "udp", "webapp.gslb.example.com", dns.TypeTXT); len(r.Answer) != 0 {
			t.Errorf("TXT answered with disable_txt: %v", r.Answer)
		}

		// HTTPS answers carry the record's alpn: from defaults, and svcb_alpn.
		for name, want := range map[string][]string{"webapp.gslb.example.com": {"h3", "h2"}, "rr.gslb.example.com": {"h2"}} {
			var alpn []string
			for _, rr := range s.Query(t, "udp", name, dns.TypeHTTPS).Answer {
				if h, ok := rr.(*dns.HTTPS); ok {
					for _, kv := range h.Value {
						if a, ok := kv.(*dns.SVCBAlpn); ok {
							alpn = a.Alpn
						}
					}
				}
			}
			if !slices.Equal(alpn, want) {
				t.Errorf("HTTPS %s: alpn %v, want %v", name, alpn, want)
			}
		}

		// The state file is written at state_persist_path.
		statePath := filepath.Join(cg.dir, "state", "gslb-state.json")
		testutil.Eventually(t, 5*time.Second, func() bool {
			data, err := os.ReadFile(statePath)
			var state struct{ Backends map[string]json.RawMessage }
			return err == nil && json.Unmarshal(data, &state) == nil && state.Backends["webapp.gslb.example.com.|"+cg.httpsIP+"|0"] != nil
		}, "no state file with webapp's backend at %s", statePath)

		// Failover: priority 2 once priority 1's server stops; fail-specific's fallback_ips
		// once every backend is down.
		cg.https.Close()
		cg.tcp.Close()
		answersEventually("webapp.gslb.example.com", "127.0.0.1")
		answersEventually("api.gslb.example.com", "192.0.2.1")
	})
}
