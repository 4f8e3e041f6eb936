package engine

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

func newTestEngine(t *testing.T, yaml string) (*Engine, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "zone.yml")
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := config.DefaultOptions()
	opts.Zones = []config.ZoneSource{{Origin: "example.org.", File: file}}
	e, err := New(opts, &testutil.Log{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() }) // a second Stop does nothing
	return e, file
}

// recordGauge returns the value of the record gauge desc of record in e's snapshot, as a
// scrape collects it.
func recordGauge(t *testing.T, e *Engine, desc *prometheus.Desc, record string) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 3*len(e.Snapshot().Records()))
	collectRecords(e.Snapshot(), map[string]bool{}, ch)
	close(ch)
	for m := range ch {
		var out dto.Metric
		if err := m.Write(&out); err != nil {
			t.Fatal(err)
		}
		if m.Desc() == desc && out.GetLabel()[0].GetValue() == record {
			return out.GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s series for %s", desc, record)
	return 0
}

func backendState(t *testing.T, e *Engine, record, addr string) *health.State {
	t.Helper()
	for _, r := range e.Snapshot().Records() {
		for _, b := range r.Backends {
			if r.Name() == record && b.Config.Address == addr {
				return b.State
			}
		}
	}
	t.Fatalf("no backend %s in %s", addr, record)
	return nil
}

const checked = `
records:
  www.example.org.:
    backends:
      - {address: 10.0.0.1, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.0.0.2, healthchecks: [{type: tcp, params: {port: 80}}]}
`

func TestReloadKeepsTheStateOfUnchangedBackends(t *testing.T) {
	e, file := newTestEngine(t, checked)
	backendState(t, e, "www.example.org.", "10.0.0.1").Set(health.Up)
	backendState(t, e, "www.example.org.", "10.0.0.2").Set(health.Down)

	changed := strings.Replace(checked, "10.0.0.2", "10.0.0.3", 1) + "    record_ttl: 5\n"
	if err := os.WriteFile(file, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.Reload(); err != nil {
		t.Fatal(err)
	}
	if st := backendState(t, e, "www.example.org.", "10.0.0.1").Status(); st != health.Up {
		t.Errorf("unchanged backend is %s after a reload, want up", st)
	}
	if v := recordGauge(t, e, recordHealthyDesc, "www.example.org."); v != 1 {
		t.Errorf("record_healthy = %v with a backend up, want 1", v)
	}
	if st := backendState(t, e, "www.example.org.", "10.0.0.3").Status(); st != health.Unknown {
		t.Errorf("new backend is %s, want unknown", st)
	}
	if st := e.health.State("www.example.org.|10.0.0.2|0").Status(); st != health.Unknown {
		t.Errorf("the removed backend's state (down) is still kept: %s", st)
	}
}

func TestInvalidReloadKeepsServing(t *testing.T) {
	e, file := newTestEngine(t, checked)
	before := e.Snapshot()
	if err := os.WriteFile(file, []byte("records:\n  www.example.org.:\n    mode: bogus\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := e.Reload()
	if err == nil || !strings.Contains(err.Error(), "zone.yml:3:11") {
		t.Fatalf("reload error %v, want the file position", err)
	}
	if e.Snapshot() != before {
		t.Fatal("an invalid file replaced the snapshot")
	}
}

func TestWatchReloadsOnChange(t *testing.T) {
	e, file := newTestEngine(t, checked)
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	before := e.Snapshot()
	if err := os.WriteFile(file, []byte(checked+"    record_ttl: 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.Snapshot() == before {
		if time.Now().After(deadline) {
			t.Fatal("the file change was not picked up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ttl := e.Snapshot().Records()[0].Config.TTL; ttl != 7 {
		t.Fatalf("TTL %d after reload, want 7", ttl)
	}
}

// BenchmarkLoad10kRecords measures a full load of 10,000 records (budget: under one second).
func BenchmarkLoad10kRecords(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("records:\n")
	for i := range 10000 {
		fmt.Fprintf(&sb, "  r%d.example.org.:\n    mode: failover\n    backends:\n      - {address: 10.%d.%d.1, priority: 1}\n      - {address: 10.%d.%d.2, priority: 2}\n", i, i/256, i%256, i/256, i%256)
	}
	file := filepath.Join(b.TempDir(), "zone.yml")
	if err := os.WriteFile(file, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	opts := config.DefaultOptions()
	opts.Zones = []config.ZoneSource{{Origin: "example.org.", File: file}}
	for b.Loop() {
		e, err := New(opts, &testutil.Log{})
		if err != nil {
			b.Fatal(err)
		}
		_ = e.Stop() // the engines that opened stay in the metrics' collector until stopped
	}
}

func TestOverridesDrainAndEnableBackends(t *testing.T) {
	// Both backends answer the TCP check: a listener on each loopback address, same port.
	l1, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l1.Close()
	port := l1.Addr().(*net.TCPAddr).Port
	l2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.2:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	e, _ := newTestEngine(t, fmt.Sprintf(`
records:
  www.example.org.:
    scrape_interval: 1s
    backends:
      - {address: 127.0.0.1, healthchecks: [{type: tcp, params: {port: %d}}]}
      - {address: 127.0.0.2, enable: false, healthchecks: [{type: tcp, params: {port: %d}}]}
`, port, port))
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	healthy := func() []string {
		var out []string
		for _, b := range e.Snapshot().Records()[0].View().Healthy[catalog.IPv4] {
			out = append(out, b.Config.Address)
		}
		return out
	}
	waitFor := func(want []string) {
		t.Helper()
		testutil.Eventually(t, 5*time.Second, func() bool { return slices.Equal(healthy(), want) }, "healthy backends %v, want %v", healthy(), want)
	}
	waitFor([]string{"127.0.0.1"})
	if st := backendState(t, e, "www.example.org.", "127.0.0.2").Status(); st != health.Unknown {
		t.Fatalf("the disabled backend is %s: it was probed", st)
	}

	// Enabling the disabled backend starts its probes; it is served once up.
	both := map[string]catalog.Override{"www.example.org.|127.0.0.2|0": catalog.ForceEnable}
	if err := e.SetOverrides(both); err != nil {
		t.Fatal(err)
	}
	waitFor([]string{"127.0.0.1", "127.0.0.2"})

	// Draining the first takes it out at once, and it stays out across a reload, still probed.
	drained := map[string]catalog.Override{"www.example.org.|127.0.0.1|0": catalog.ForceDisable, "www.example.org.|127.0.0.2|0": catalog.ForceEnable}
	if err := e.SetOverrides(drained); err != nil {
		t.Fatal(err)
	}
	if got := healthy(); !slices.Equal(got, []string{"127.0.0.2"}) {
		t.Fatalf("healthy right after the drain %v, want only 127.0.0.2", got)
	}
	if err := e.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := healthy(); !slices.Equal(got, []string{"127.0.0.2"}) {
		t.Fatalf("healthy after a reload %v, want the drain kept", got)
	}
	if st := backendState(t, e, "www.example.org.", "127.0.0.1").Status(); st != health.Up {
		t.Fatalf("the drained backend is %s, want its health still known (up)", st)
	}

	// No overrides: back to the configuration.
	if err := e.SetOverrides(nil); err != nil {
		t.Fatal(err)
	}
	waitFor([]string{"127.0.0.1"})
}

func TestExplainGivesEachBackendsLastResult(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := closed.Addr().(*net.TCPAddr).Port
	closed.Close() // nothing listens: the check is refused
	e, _ := newTestEngine(t, fmt.Sprintf(`
records:
  www.example.org.:
    scrape_interval: 1s
    backends:
      - {address: 127.0.0.1, healthchecks: [{type: tcp, params: {port: %d}}]}
`, port))
	s := downBackendStep(t, e)
	if !strings.Contains(s.Text, "down") || !strings.Contains(s.Text, "connection refused") || len(s.Backends) != 1 || s.Backends[0] != "www.example.org.|127.0.0.1|0" {
		t.Fatalf("backend step %+v, want its state, last result and key", s)
	}
}

// downBackendStep starts e, waits until the backend 127.0.0.1 of www.example.org. is down, and
// returns the step of an explanation that describes it.
func downBackendStep(t *testing.T, e *Engine) admin.Step {
	t.Helper()
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Stop() })
	testutil.Eventually(t, 5*time.Second, func() bool {
		return backendState(t, e, "www.example.org.", "127.0.0.1").Status() == health.Down
	}, "the backend did not go down")
	ex, err := e.Explain(context.Background(), admin.Query{Name: "www.example.org.", Type: "A", Client: netip.MustParseAddr("192.0.2.1")})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ex.Steps {
		if s.Stage == "IPv4 backend 127.0.0.1" {
			return s
		}
	}
	t.Fatalf("no step for the backend: %+v", ex.Steps)
	return admin.Step{}
}

func TestLoadLogsTheZonesWarningsOnce(t *testing.T) {
	file := filepath.Join(t.TempDir(), "zone.yml")
	yml := "records:\n  www.example.org.:\n    failover_policy: {mode: fail-closed}\n    backends: [{address: 10.0.0.1}]\n"
	if err := os.WriteFile(file, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := config.DefaultOptions()
	opts.Zones = []config.ZoneSource{{Origin: "example.org.", File: file}}
	log := &testutil.Log{}
	if _, err := New(opts, log); err != nil {
		t.Fatal(err)
	}
	want := "WARNING " + file + `:3:5: records["www.example.org."].failover_policy: failover_policy is deprecated: rename it fallback_policy`
	if n := log.Count(want); n != 1 {
		t.Fatalf("%d lines %q, want 1", n, want)
	}
}

// TestBackendTimeoutBoundsItsProbes checks that a backend's timeout replaces the record's
// scrape_timeout for its checks: a server that accepts and never answers times the probe out
// after the backend's 300ms, not the record's 2s.
func TestBackendTimeoutBoundsItsProbes(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		var held []net.Conn // kept open and unanswered until the listener closes
		for {
			c, err := silent.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	port := silent.Addr().(*net.TCPAddr).Port
	e, _ := newTestEngine(t, fmt.Sprintf(`
records:
  www.example.org.:
    scrape_interval: 3s
    scrape_timeout: 2s
    scrape_retries: 0
    backends:
      - {address: 127.0.0.1, timeout: 300ms, fall: 1, healthchecks: [{type: tcp, params: {port: %d, expect: pong}}]}
`, port))
	if s := downBackendStep(t, e); !strings.Contains(s.Text, "timeout after 300ms") {
		t.Fatalf("backend step %q, want a timeout after the backend's 300ms", s.Text)
	}
}

// TestScriptChecksSeeTheirBackend: the custom and lua checks are handed the backend's record
// and priority.
func TestScriptChecksSeeTheirBackend(t *testing.T) {
	e, _ := newTestEngine(t, `
records:
  www.example.org.:
    scrape_interval: 1s
    backends:
      - address: 127.0.0.1
        priority: 1
        healthchecks: &checks
          - {type: custom, params: {script: '[ "$BACKEND_FQDN" = www.example.org. ] && [ "$BACKEND_PRIORITY" = 2 ]'}}
          - {type: lua, params: {script: 'return backend.priority == 2'}}
      - {address: 127.0.0.2, priority: 2, healthchecks: *checks}
`)
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	testutil.Eventually(t, 5*time.Second, func() bool {
		return backendState(t, e, "www.example.org.", "127.0.0.1").Status() == health.Down &&
			backendState(t, e, "www.example.org.", "127.0.0.2").Status() == health.Up
	}, "the backend of priority 2 must be up, the other down")
}

// TestRecordGaugesFollowTheEngines: a scrape of the default registry has the record gauges of
// an engine that opened, from its records' current views, and none once it stopped.
func TestRecordGaugesFollowTheEngines(t *testing.T) {
	const record = "gauges.example.org."
	e, _ := newTestEngine(t, strings.ReplaceAll(checked, "www.example.org.", record))
	scrape := func() map[string]float64 {
		families, err := prometheus.DefaultGatherer.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, f := range families {
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "record" && l.GetValue() == record && m.GetGauge() != nil {
						out[f.GetName()] = m.GetGauge().GetValue()
					}
				}
			}
		}
		return out
	}
	tests := []struct {
		name  string
		state health.Status
		want  float64
	}{
		{"no backend up yet", health.Unknown, 0},
		{"a backend up", health.Up, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			backendState(t, e, record, "10.0.0.1").Set(tt.state)
			e.Snapshot().Records()[0].Refresh()
			got := scrape()
			if got["coredns_gslb_record_healthy"] != tt.want {
				t.Errorf("record_healthy = %v, want %v (%v)", got["coredns_gslb_record_healthy"], tt.want, got)
			}
			for _, name := range []string{"coredns_gslb_record_degraded", "coredns_gslb_record_failover"} {
				if v, ok := got[name]; !ok || v != 0 {
					t.Errorf("%s = %v (present %v), want 0", name, v, ok)
				}
			}
		})
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := scrape(); len(got) != 0 {
		t.Errorf("after Stop the scrape still has %v", got)
	}
}
