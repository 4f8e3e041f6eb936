package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// cgMetricLabels are the metrics of CoreDNS-GSLB (its docs/observability.md and metrics.go)
// with their label names, which its Grafana dashboard (dashboards/gslb-observability.json)
// and its route-health-injection script (rhi/gslb-health.sh) read. The Redis series exist
// without cluster mode too, at 0.
var cgMetricLabels = []struct {
	name   string
	labels []string
}{
	{"gslb_healthcheck_total", []string{"address", "name", "result", "type"}},
	{"gslb_healthcheck_duration_seconds", []string{"address", "type"}},
	{"gslb_healthcheck_failures_total", []string{"address", "reason", "type"}},
	{"gslb_record_resolution_total", []string{"name", "result"}},
	{"gslb_record_resolution_duration_seconds", []string{"name", "result"}},
	{"gslb_record_health_status", []string{"name"}},
	{"coredns_gslb_record_health_status", []string{"fqdn"}},
	{"gslb_backend_health_status", []string{"address", "name"}},
	{"gslb_backend_healthcheck_status", []string{"address", "name", "type"}},
	{"gslb_config_reload_total", []string{"result"}},
	{"gslb_backend_active", []string{"name"}},
	{"gslb_backend_selected_total", []string{"address", "name"}},
	{"gslb_healthchecks_total", nil},
	{"gslb_backends_total", nil},
	{"gslb_records_total", nil},
	{"gslb_zones_total", nil},
	{"gslb_version_info", []string{"version"}},
	{"gslb_redis_connected", nil},
	{"gslb_redis_errors_total", []string{"operation"}},
	{"gslb_redis_operations_total", []string{"operation", "result"}},
}

// metricsPage fetches a Prometheus text page.
func metricsPage(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return body
}

// series is a parsed scrape: each series' value by "name{label=value,...}", labels sorted.
type series map[string]float64

func parseSeries(t *testing.T, page []byte) (series, map[string]*dto.MetricFamily) {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("the scrape does not parse: %v", err)
	}
	out := series{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
			out[name+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return out, fams
}

// TestCoreDNSGSLBMetrics scrapes a running meridian and checks that every metric of
// CoreDNS-GSLB is there with its labels and meaning, and that the condition of CoreDNS-GSLB's
// route-health-injection script, run as the script runs it, announces a healthy record and
// withdraws an unhealthy one.
func TestCoreDNSGSLBMetrics(t *testing.T) {
	t.Parallel()
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go acceptAndClose(up)
	closed := testutil.FreePort(t)
	yaml := fmt.Sprintf(`
records:
  webapp.example.org.:
    mode: failover
    scrape_interval: 100ms
    scrape_timeout: 100ms
    backends:
      - {address: 127.0.0.1, priority: 1, rise: 1, healthchecks: [{type: tcp, params: {port: %d}}]}
      - {address: 127.0.0.2, priority: 2, fall: 1, healthchecks: [{type: tcp, params: {port: %d}}]}
      - {address: 127.0.0.4, priority: 3, enable: false}
  down.example.org.:
    scrape_interval: 100ms
    backends:
      - {address: 127.0.0.3, fall: 1, healthchecks: [{type: exec, params: {command: /bin/false}}]}
`, up.Addr().(*net.TCPAddr).Port, closed)
	dir := t.TempDir()
	zone := filepath.Join(dir, "db.example.org.yml")
	if err := os.WriteFile(zone, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	metricsPort := testutil.FreePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	s := testutil.Start(t, dir, func(port int) string {
		return fmt.Sprintf(".:%d {\n bind 127.0.0.1\n prometheus 127.0.0.1:%d\n gslb {\n  zone example.org. %s\n  coredns_gslb_metrics\n }\n}\n", port, metricsPort, zone)
	})

	// Wait for the health checks to decide, then query.
	healthy := func() bool {
		got, _ := parseSeries(t, metricsPage(t, url))
		return got[`gslb_backend_health_status{address=127.0.0.1,name=webapp.example.org.}`] == 1 &&
			got[`gslb_healthcheck_total{address=127.0.0.2,name=webapp.example.org.,result=fail,type=tcp}`] > 0 &&
			got[`gslb_healthcheck_total{address=127.0.0.3,name=down.example.org.,result=fail,type=exec}`] > 0
	}
	testutil.Eventually(t, 10*time.Second, healthy, "the checks did not decide:\n%s", metricsPage(t, url))
	for range 3 {
		if got := addresses(s.Query(t, "udp", "webapp.example.org", dns.TypeA)); !slices.Equal(got, []string{"127.0.0.1"}) {
			t.Fatalf("webapp.example.org. A = %v", got)
		}
	}
	page := metricsPage(t, url)
	got, fams := parseSeries(t, page)

	// Every metric, with its labels.
	for _, m := range cgMetricLabels {
		f := fams[m.name]
		if f == nil || len(f.GetMetric()) == 0 {
			t.Errorf("no series of %s", m.name)
			continue
		}
		for _, sm := range f.GetMetric() {
			var names []string
			for _, l := range sm.GetLabel() {
				names = append(names, l.GetName())
			}
			if !slices.Equal(names, m.labels) {
				t.Errorf("%s has labels %v, want %v", m.name, names, m.labels)
			}
		}
	}

	// Their meaning.
	for _, c := range []struct {
		series string
		want   float64
	}{
		{`gslb_record_health_status{name=webapp.example.org.}`, 1},
		{`gslb_record_health_status{name=down.example.org.}`, 0},
		{`coredns_gslb_record_health_status{fqdn=webapp.example.org.}`, 1},
		{`coredns_gslb_record_health_status{fqdn=down.example.org.}`, 0},
		{`gslb_backend_health_status{address=127.0.0.1,name=webapp.example.org.}`, 1},
		{`gslb_backend_health_status{address=127.0.0.2,name=webapp.example.org.}`, 0},
		{`gslb_backend_health_status{address=127.0.0.4,name=webapp.example.org.}`, 2},
		{`gslb_backend_healthcheck_status{address=127.0.0.1,name=webapp.example.org.,type=tcp}`, 1},
		{`gslb_backend_healthcheck_status{address=127.0.0.2,name=webapp.example.org.,type=tcp}`, 0},
		{`gslb_backend_active{name=webapp.example.org.}`, 1},
		{`gslb_backend_active{name=down.example.org.}`, 0},
		{`gslb_record_resolution_total{name=webapp.example.org.,result=success}`, 3},
		{`gslb_record_resolution_total{name=webapp.example.org.,result=fail}`, 0},
		{`gslb_record_resolution_duration_seconds{name=webapp.example.org.,result=success}`, 3}, // the sample count
		{`gslb_backend_selected_total{address=127.0.0.1,name=webapp.example.org.}`, 3},
		{`gslb_backend_selected_total{address=127.0.0.2,name=webapp.example.org.}`, 0},
		{`gslb_healthchecks_total{}`, 3},
		{`gslb_backends_total{}`, 4},
		{`gslb_records_total{}`, 2},
		{`gslb_zones_total{}`, 1},
		{`gslb_config_reload_total{result=failure}`, 0},
	} {
		if v, ok := got[c.series]; !ok || v != c.want {
			t.Errorf("%s = %v (present: %v), want %v", c.series, v, ok, c.want)
		}
	}
	out, err := exec.Command(testutil.Binary(t), "version").Output()
	version, _, _ := strings.Cut(strings.TrimPrefix(string(out), "meridian "), "\n")
	if v := got[`gslb_version_info{version=`+version+`}`]; err != nil || v != 1 {
		t.Errorf("gslb_version_info of version %q = %v (%v)", version, v, err)
	}
	for _, c := range []string{
		`gslb_healthcheck_total{address=127.0.0.1,name=webapp.example.org.,result=success,type=tcp}`,
		`gslb_healthcheck_failures_total{address=127.0.0.2,reason=connection,type=tcp}`,
		`gslb_healthcheck_failures_total{address=127.0.0.3,reason=protocol,type=exec}`,
		`gslb_healthcheck_duration_seconds{address=127.0.0.1,type=tcp}`,
	} {
		if got[c] <= 0 {
			t.Errorf("%s = %v, want more than 0", c, got[c])
		}
	}

	// The route-health-injection script's condition: its grep and awk over the page, run by
	// bash as the script runs them, give 1 for a healthy record (announce) and 0 otherwise.
	rhi := func(zone string) string {
		cmd := exec.Command("bash", "-c", `grep "^coredns_gslb_record_health_status{.*fqdn=\"$ZONE\".*}" | awk '{print $2}'`)
		cmd.Env = append(os.Environ(), "ZONE="+zone)
		cmd.Stdin = bytes.NewReader(page)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("the script's pipeline for %s: %v", zone, err)
		}
		return strings.TrimSpace(string(out))
	}
	if v := rhi("webapp.example.org."); v != "1" {
		t.Errorf("the RHI condition for the healthy record is %q, want 1 (announce)", v)
	}
	if v := rhi("down.example.org."); v != "0" {
		t.Errorf("the RHI condition for the unhealthy record is %q, want 0 (withdraw)", v)
	}
}
