package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/admin/admintest"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// sharesZone has a weighted record (3:1) and a geo record whose answers depend on the client's
// country.
const sharesZone = `records:
  www.example.org.:
    mode: weighted
    backends: [{address: 192.0.2.1, weight: 3}, {address: 192.0.2.2, weight: 1}]
  geo.example.org.:
    mode: geoip
    backends: [{address: 192.0.2.10, country: US}, {address: 192.0.2.20, country: FR}]
`

// TestTrafficSharesEndToEnd: with traffic_shares, the answers a meridian gives are counted by
// backend and, for the geo record, by the client's country (ECS); the admin API's shares follow
// the weights, the dashboard draws them in headless Chromium, and a real Prometheus scrapes the
// counters and the configured shares.
func TestTrafficSharesEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	city := testutil.WriteCityDB(t, []testutil.GeoNetwork{
		{Prefix: "198.51.100.0/24", City: "San Jose", Subdivision: "CA", Country: "US", Continent: "NA", Lat: 37.33, Lon: -121.89},
		{Prefix: "203.0.113.0/24", City: "Paris", Subdivision: "IDF", Country: "FR", Continent: "EU", Lat: 48.85, Lon: 2.35},
	})
	if err := os.WriteFile(filepath.Join(dir, "zone.yml"), []byte(sharesZone), 0o644); err != nil {
		t.Fatal(err)
	}
	api, metrics := testutil.FreePort(t), testutil.FreePort(t)
	srv := testutil.Start(t, dir, func(port int) string {
		return fmt.Sprintf(".:%d {\n bind 127.0.0.1\n prometheus 127.0.0.1:%d\n gslb {\n  zone example.org. %s\n  use_edns_csubnet\n  geoip_maxmind city_db %s\n  traffic_shares\n  api_enable\n  api_listen_port %d\n  api_overrides_file %s\n }\n}\n",
			port, metrics, filepath.Join(dir, "zone.yml"), city, api, filepath.Join(dir, "overrides.json"))
	})
	prom := testutil.StartPrometheus(t, fmt.Sprintf("127.0.0.1:%d", metrics))
	url := fmt.Sprintf("http://127.0.0.1:%d", api)

	const answers = 400
	for range answers {
		srv.Query(t, "udp", "www.example.org.", dns.TypeA)
	}
	for _, c := range []struct {
		subnet string
		n      int
	}{{"198.51.100.0", 30}, {"203.0.113.0", 10}} {
		for range c.n {
			m := new(dns.Msg)
			m.SetQuestion("geo.example.org.", dns.TypeA)
			m.SetEdns0(1232, false)
			m.IsEdns0().Option = []dns.EDNS0{&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: net.ParseIP(c.subnet).To4()}}
			srv.Exchange(t, "udp", m)
		}
	}

	// The keeper samples every ten seconds.
	byRecord := map[string]admin.RecordShares{}
	testutil.Eventually(t, 30*time.Second, func() bool {
		code, body := admintest.Call(t, http.DefaultClient, "GET", url+"/api/v1/shares", "")
		var list []admin.RecordShares
		if code != 200 || json.Unmarshal([]byte(body), &list) != nil {
			t.Fatalf("GET /api/v1/shares: %d %s", code, body)
		}
		for _, r := range list {
			byRecord[r.Record] = r
		}
		www := byRecord["www.example.org."]
		return len(www.Backends) == 2 && www.Backends[0].Actual != nil
	}, "no shares of www.example.org.: %v", byRecord)
	www := byRecord["www.example.org."]
	for i, want := range []float64{0.75, 0.25} {
		b := www.Backends[i]
		if b.Configured != want || math.Abs(*b.Actual-want) > 0.1 {
			t.Errorf("%s: configured %v, actual %v; want %v", b.Backend, b.Configured, *b.Actual, want)
		}
	}
	geo := byRecord["geo.example.org."]
	countries := map[string]admin.CountryShares{}
	for _, c := range geo.Countries {
		countries[c.Country] = c
	}
	if us, fr := countries["US"], countries["FR"]; len(countries) != 2 || us.Shares["geo.example.org.|192.0.2.10|0"] != 1 ||
		fr.Shares["geo.example.org.|192.0.2.20|0"] != 1 || us.TTLSeconds != 3*fr.TTLSeconds {
		t.Errorf("countries %+v", geo.Countries)
	}

	// A real Prometheus scrapes the counters, from which it computes the shares over any window,
	// the configured shares and the traffic by country.
	queries := map[string]func([]testutil.Sample) bool{
		`coredns_gslb_traffic_ttl_seconds_total{record="www.example.org."} / on(record) group_left sum by (record) (coredns_gslb_traffic_ttl_seconds_total{record="www.example.org."})`: func(s []testutil.Sample) bool { return len(s) == 2 },
		`coredns_gslb_traffic_share_configured{record="www.example.org.",backend="192.0.2.1"}`:                                                                                          func(s []testutil.Sample) bool { return len(s) == 1 && s[0].Value == "0.75" },
		`coredns_gslb_traffic_country_ttl_seconds_total{record="geo.example.org.",country="FR"}`:                                                                                        func(s []testutil.Sample) bool { return len(s) == 1 && s[0].Labels["backend"] == "192.0.2.20" },
	}
	for expr, ok := range queries {
		testutil.Eventually(t, 30*time.Second, func() bool { return ok(prom.Query(t, expr)) },
			"Prometheus answers %s with %+v", expr, lateQuery{prom, t, expr})
	}

	// The dashboard draws them under each record.
	b := admintest.NewBrowser(t)
	b.Do(chromedp.Navigate(url + "/"))
	shares := `tr.record[data-record="www.example.org."] details[data-field="shares"]`
	b.WaitFor(15*time.Second, func() bool { return b.Count(shares+` g.share polyline`) == 2 },
		func() string { return fmt.Sprintf("%d share lines", b.Count(shares+` g.share polyline`)) })
	if got := b.Text(shares + ` tr[data-key="www.example.org.|192.0.2.1|0"] td[data-field="configured"]`); got != "75%" {
		t.Errorf("configured share shown %q", got)
	}
	if n := b.Count(`tr.record[data-record="geo.example.org."] details[data-field="shares"] tr[data-country]`); n != 2 {
		t.Errorf("%d country rows, want 2", n)
	}
}

// lateQuery prints the answer of a Prometheus query when a failure message is formatted.
type lateQuery struct {
	p    *testutil.Prometheus
	t    *testing.T
	expr string
}

func (q lateQuery) String() string { return fmt.Sprintf("%+v", q.p.Query(q.t, q.expr)) }
