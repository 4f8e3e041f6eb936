package engine

import (
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/statefile"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// stateOptions returns a block with a state file in dir and one record whose backend
// 127.0.0.1 passes its tcp check and 127.0.0.2 fails it.
func stateOptions(t *testing.T, dir string) config.Options {
	t.Helper()
	up := testutil.ServeTCP(t, "127.0.0.1:0", func(net.Conn) {})
	closed, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	file := filepath.Join(dir, "example.org.yml")
	yaml := fmt.Sprintf(`records:
  www.example.org.:
    scrape_interval: 100ms
    scrape_timeout: 50ms
    backends:
      - {address: 127.0.0.1, healthchecks: [{type: tcp, params: {port: %d}}]}
      - {address: 127.0.0.2, healthchecks: [{type: tcp, params: {port: %d}}]}
`, up.Addr().(*net.TCPAddr).Port, closed.Addr().(*net.TCPAddr).Port)
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := config.DefaultOptions()
	opts.Zones = []config.ZoneSource{{Origin: "example.org.", File: file}}
	opts.State = config.StateOptions{Enable: true, Path: filepath.Join(dir, "state", "state.json"), Interval: time.Hour, MaxAge: time.Minute}
	return opts
}

const upKey, downKey = "www.example.org.|127.0.0.1|0", "www.example.org.|127.0.0.2|0"

// states returns the health words of e's backends, by key, as queries see them.
func states(e *Engine) map[string]health.Status {
	out := map[string]health.Status{}
	for _, r := range e.Snapshot().Records() {
		for _, b := range r.Backends {
			out[b.Key()] = b.State.Status()
		}
	}
	return out
}

var probed = map[string]health.Status{upKey: health.Up, downKey: health.Down}

// TestStateFileAcrossRestarts: an engine that stops writes its backends' health; the engine of
// the next process (another registry) starts from it before any probe, unless the file is
// older than state_max_age or corrupt.
func TestStateFileAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	opts := stateOptions(t, dir)
	first := open(t, NewRegistry(), newLoad(), opts)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return maps.Equal(states(first), probed) }, "probes did not settle: %v", states(first))
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}

	log := &testutil.Log{}
	next, err := NewRegistry().Open(newLoad(), opts, log)
	if err != nil {
		t.Fatal(err)
	}
	if got := states(next); !maps.Equal(got, probed) {
		t.Errorf("after a restart, before any probe, the backends are %v, want %v\n%s", got, probed, log)
	}
	if n := gauge(t, "coredns_gslb_state_file_restored_backends"); n != 2 {
		t.Errorf("restored backends gauge %v, want 2", n)
	}
	_ = next.Stop() // never started: writes what it started from

	l, err := statefile.Read(opts.State.Path, time.Minute, time.Now())
	if err != nil || !maps.Equal(l.States, probed) {
		t.Fatalf("state file holds %+v (%v), want %v", l, err, probed)
	}
	// A start that fails before its configuration loads keeps the file as it was.
	broken := opts
	broken.Zones = []config.ZoneSource{{Origin: "example.org.", File: filepath.Join(dir, "missing.yml")}}
	if _, err := NewRegistry().Open(newLoad(), broken, &testutil.Log{}); err == nil {
		t.Fatal("a missing zone file did not fail the start")
	}
	if l, err := statefile.Read(opts.State.Path, time.Minute, time.Now()); err != nil || !maps.Equal(l.States, probed) {
		t.Fatalf("after a failed start the state file holds %+v (%v), want %v", l, err, probed)
	}
	for name, write := range map[string]func() error{
		"older than state_max_age": func() error {
			f := statefile.Take(time.Now().Add(-2*time.Minute), nil, next.health)
			f.Backends = map[string]statefile.Entry{upKey: {Status: "up"}, downKey: {Status: "down"}}
			return statefile.Write(opts.State.Path, f)
		},
		"corrupt": func() error { return os.WriteFile(opts.State.Path, []byte(`{"version": 1, "backe`), 0o644) },
	} {
		t.Run(name, func(t *testing.T) {
			if err := write(); err != nil {
				t.Fatal(err)
			}
			log := &testutil.Log{}
			e, err := NewRegistry().Open(newLoad(), opts, log)
			if err != nil {
				t.Fatalf("a %s state file fails the start: %v", name, err)
			}
			defer e.Stop()
			want := map[string]health.Status{upKey: health.Unknown, downKey: health.Unknown}
			if got := states(e); !maps.Equal(got, want) {
				t.Errorf("with a %s state file the backends start %v, want unknown", name, got)
			}
			if log.Count("every probed backend starts unknown") != 1 {
				t.Errorf("no one line about the %s file:\n%s", name, log)
			}
			if n := gauge(t, "coredns_gslb_state_file_restored_backends"); n != 0 {
				t.Errorf("restored backends gauge %v after a %s file, want 0", n, name)
			}
		})
	}
}

// gauge returns the value of the gauge called name in the default registry.
func gauge(t *testing.T, name string) float64 {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// TestStateFileAcrossCorefileReloads: during a reload whose new engine gets a health manager of
// its own (its options changed), one writer writes the file for both; the new manager starts
// from the running one's state, and once the old engine stops the new one keeps the file.
func TestStateFileAcrossCorefileReloads(t *testing.T) {
	dir := t.TempDir()
	opts := stateOptions(t, dir)
	r := NewRegistry()
	old := open(t, r, newLoad(), opts)
	start(t, old)
	testutil.Eventually(t, 5*time.Second, func() bool { return maps.Equal(states(old), probed) }, "probes did not settle: %v", states(old))

	opts.MaxStaggerStart = time.Minute // a new manager
	cur := open(t, r, newLoad(), opts)
	if cur.health == old.health {
		t.Fatal("the reloaded engine shares the old manager: the test needs a new one")
	}
	if got := states(cur); !maps.Equal(got, probed) {
		t.Errorf("the new manager starts at %v, want the running one's %v", got, probed)
	}
	start(t, cur)
	if len(r.files) != 1 {
		t.Errorf("%d state file writers during the overlap, want one", len(r.files))
	}
	if err := old.Stop(); err != nil {
		t.Fatal(err)
	}
	if len(r.files) != 1 {
		t.Errorf("the state file has %d writers after the old engine stopped, want one", len(r.files))
	}
	if err := os.Remove(opts.State.Path); err != nil {
		t.Fatal(err)
	}
	if err := cur.Stop(); err != nil {
		t.Fatal(err)
	}
	if l, err := statefile.Read(opts.State.Path, time.Minute, time.Now()); err != nil || !maps.Equal(l.States, probed) {
		t.Errorf("the last engine's stop wrote %+v (%v), want %v", l, err, probed)
	}
	if len(r.files) != 0 {
		t.Errorf("%d writers left after every engine stopped", len(r.files))
	}
}

// TestStateFileIgnoredInClusterMode: with cluster mode on, the file neither seeds nor is
// written, and one line says so.
func TestStateFileIgnoredInClusterMode(t *testing.T) {
	dir := t.TempDir()
	opts := stateOptions(t, dir)
	if err := statefile.Write(opts.State.Path, &statefile.File{Version: statefile.Version, WrittenAt: time.Now(),
		Backends: map[string]statefile.Entry{upKey: {Status: "up"}, downKey: {Status: "down"}}}); err != nil {
		t.Fatal(err)
	}
	rs := testutil.StartRedis(t) // a fleet without results yet
	opts.Cluster = config.ClusterOptions{Enable: true, Addrs: []string{rs.Addr}, KeyPrefix: "state-test:"}
	log := &testutil.Log{}
	e, err := NewRegistry().Open(newLoad(), opts, log)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	if got := states(e); got[upKey] != health.Unknown || got[downKey] != health.Unknown {
		t.Errorf("in cluster mode the state file seeded %v", got)
	}
	if log.Count("state_persist_enable is ignored in cluster mode") != 1 {
		t.Errorf("no line about the ignored state file:\n%s", log)
	}
}

// TestStateOptionsChangedByAReload: a reload that keeps the health manager keeps its state file
// settings too, and says so.
func TestStateOptionsChangedByAReload(t *testing.T) {
	dir := t.TempDir()
	opts := stateOptions(t, dir)
	r := NewRegistry()
	first := open(t, r, newLoad(), opts)
	defer first.Stop()
	opts.State.Path = filepath.Join(dir, "elsewhere.json")
	log := &testutil.Log{}
	next, err := r.Open(newLoad(), opts, log)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Stop()
	if next.health != first.health || next.shared.writer.Path() != first.opts.State.Path {
		t.Errorf("the reload changed the manager or its state file (%s)", next.shared.writer.Path())
	}
	if log.Count("the state_* options changed") != 1 {
		t.Errorf("no line about the changed options:\n%s", log)
	}
}
