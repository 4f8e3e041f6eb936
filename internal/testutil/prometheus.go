package testutil

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Prometheus is a Prometheus server (Debian's prometheus package) scraping targets every
// second, on a free loopback port.
type Prometheus struct {
	URL  string
	proc *process
}

// StartPrometheus starts Prometheus scraping the metrics endpoints targets (host:port); it
// stops with the test.
func StartPrometheus(t testing.TB, targets ...string) *Prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus is not installed (make deps installs Debian's)")
	}
	dir := t.TempDir()
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = fmt.Sprintf("%q", tg)
	}
	cfg := fmt.Sprintf("global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n  - job_name: meridian\n    static_configs: [{targets: [%s]}]\n", strings.Join(quoted, ", "))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	p := &Prometheus{URL: "http://" + addr}
	p.proc = startProcess(t, exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr))
	p.proc.waitFor(t, "prometheus", 30*time.Second, func() bool {
		resp, err := http.Get(p.URL + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return p
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
