package testutil

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Prometheus is a running Prometheus server of a test.
type Prometheus struct {
	// URL is the server's base URL, http://127.0.0.1:PORT.
	URL string
	p   *process
}

// StartPrometheus runs Debian's prometheus for the test on a free 127.0.0.1 port, scraping
// the /metrics of each target (host:port on loopback) every 250 ms as job "test", with its
// data in a temporary directory. It is stopped when the test ends. The test is skipped when
// prometheus is not installed (Debian package prometheus; make deps installs it).
func StartPrometheus(t testing.TB, targets ...string) *Prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (Debian package prometheus)")
	}
	dir := t.TempDir()
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = fmt.Sprintf("%q", tg)
	}
	conf := fmt.Sprintf(`global:
  scrape_interval: 250ms
  evaluation_interval: 250ms
scrape_configs:
  - job_name: test
    scrape_interval: 250ms
    scrape_timeout: 200ms
    static_configs:
      - targets: [%s]
`, strings.Join(quoted, ", "))
	path := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	port := FreePort(t)
	pr := &Prometheus{URL: fmt.Sprintf("http://127.0.0.1:%d", port)}
	pr.p = startProcess(t, exec.Command(bin, "--config.file="+path, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--log.level=warn"))
	client := &http.Client{Timeout: 500 * time.Millisecond}
	pr.p.waitFor(t, "prometheus", 30*time.Second, func() bool {
		resp, err := client.Get(pr.URL + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return pr
}

// Sample is one series of an instant query's answer: its labels and value.
type Sample struct {
	Labels map[string]string
	Value  string
}

// Query runs the PromQL expr at the present and returns its samples.
func (p *Prometheus) Query(t testing.TB, expr string) []Sample {
	t.Helper()
	resp, err := http.Get(p.URL + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Status != "success" {
		t.Fatalf("query %s: %v %s", expr, err, out.Error)
	}
	samples := make([]Sample, len(out.Data.Result))
	for i, r := range out.Data.Result {
		samples[i] = Sample{Labels: r.Metric, Value: fmt.Sprint(r.Value[1])}
	}
	return samples
}

// Logs returns what the server wrote so far.
func (p *Prometheus) Logs() string { return p.p.logs.String() }

// ServeGauge serves a gauge called name, which the test sets, on a loopback /metrics (for
// Prometheus to scrape), until the test ends. It returns the gauge and the server's host:port.
func ServeGauge(t testing.TB, name string) (prometheus.Gauge, string) {
	t.Helper()
	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "set by the test"})
	reg.MustRegister(g)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	return g, l.Addr().String()
}
