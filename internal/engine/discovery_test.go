package engine

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// startDiscovery starts an engine serving zone as example.org., probing from the start, until
// the test ends.
func startDiscovery(t *testing.T, zone string) (*Engine, *testutil.Log) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "zone.yml")
	if err := os.WriteFile(file, []byte(zone), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := config.DefaultOptions()
	opts.Zones = []config.ZoneSource{{Origin: "example.org.", File: file}}
	opts.MaxStaggerStart = time.Millisecond
	log := &testutil.Log{}
	e, err := New(opts, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	return e, log
}

// TestDiscoveredBackendsKeepTheirHealth: discovered backends are probed with the block's
// checks, and a new set keeps the health (and its last change) of the backends it still has.
func TestDiscoveredBackendsKeepTheirHealth(t *testing.T) {
	port := func() int {
		return testutil.ServeTCP(t, "127.0.0.1:0", func(net.Conn) {}).Addr().(*net.TCPAddr).Port
	}
	a, b, c := port(), port(), port()
	var mu sync.Mutex
	body := fmt.Sprintf(`[{"address": "127.0.0.1", "port": %d}, {"address": "127.0.0.1", "port": %d}]`, a, b)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()

	zone := fmt.Sprintf(`records:
  www.example.org.:
    scrape_interval: 1h
    discovery:
      type: http
      endpoint: %s
      interval: 50ms
      healthchecks: [{type: tcp}]
      rise: 1
    backends: [{address: 10.0.0.1}]
`, srv.URL)
	e, _ := startDiscovery(t, zone)

	record := func() admin.Record { return e.Status()[0].Records[0] }
	states := func() map[int]admin.Backend {
		m := map[int]admin.Backend{}
		for _, ab := range record().Backends {
			m[ab.Port] = ab
		}
		return m
	}
	up := func(ports ...int) bool {
		s := states()
		for _, p := range ports {
			if s[p].State != "up" {
				return false
			}
		}
		return len(s) == len(ports)+1
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return up(a, b) }, "discovered backends are not up: %+v", states())
	before := states()[a]
	if before.Key != fmt.Sprintf("www.example.org.|127.0.0.1|%d", a) || before.LastChange.IsZero() {
		t.Fatalf("backend %+v", before)
	}

	mu.Lock()
	body = fmt.Sprintf(`[{"address": "127.0.0.1", "port": %d}, {"address": "127.0.0.1", "port": %d}]`, a, c)
	mu.Unlock()
	// The scrape interval is an hour: a backend that started over would stay unknown until its
	// first probe, which runs at once, and would have a new last change.
	testutil.Eventually(t, 10*time.Second, func() bool { return up(a, c) }, "the new set is not up: %+v", states())
	after := states()[a]
	if after.State != "up" || !after.LastChange.Equal(before.LastChange) {
		t.Errorf("the unchanged backend started over: before %+v, after %+v", before, after)
	}
	d := record().Discovery
	if d == nil || d.Type != "http" || d.Backends != 2 || d.Failing || d.LastSuccess == nil {
		t.Errorf("discovery status %+v", d)
	}
	if !slices.ContainsFunc(record().Backends, func(ab admin.Backend) bool { return ab.Address == "10.0.0.1" }) {
		t.Error("the static backend is gone")
	}
}

// TestEveryDiscoveredBackendHasTheBlocksChecks: each discovered backend compiles the block's
// checks with their parameters (the engine releases a check's parameters once compiled, so
// backends must not share them).
func TestEveryDiscoveredBackendHasTheBlocksChecks(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`["10.9.0.1", "10.9.0.2", "10.9.0.3"]`))
	}))
	defer srv.Close()
	zone := fmt.Sprintf(`records:
  www.example.org.:
    discovery:
      type: http
      endpoint: %s
      interval: 50ms
      healthchecks: [{type: exec, params: {command: /bin/true}}]
      rise: 1
`, srv.URL)
	e, log := startDiscovery(t, zone)
	up := func() int {
		n := 0
		for _, ab := range e.Status()[0].Records[0].Backends {
			if ab.State == "up" {
				n++
			}
		}
		return n
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return up() == 3 }, "%d of 3 discovered backends up:\n%s", up(), log)
}

// TestCorefileReloadKeepsDiscoveredBackends: the engine of a new Corefile load starts with the
// sets the old one fetched, so that the discovered backends neither leave the answers nor lose
// their health while the new engine's first fetch runs.
func TestCorefileReloadKeepsDiscoveredBackends(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`["10.9.0.1"]`))
	}))
	defer srv.Close()
	opts := blockOptions(t, t.TempDir(), "example.org.")
	zone := fmt.Sprintf("records:\n  www.example.org.:\n    discovery: {type: http, endpoint: %s, interval: 50ms, healthchecks: [{type: exec, params: {command: /bin/true}}], rise: 1}\n", srv.URL)
	if err := os.WriteFile(opts.Zones[0].File, []byte(zone), 0o644); err != nil {
		t.Fatal(err)
	}
	opts.MaxStaggerStart = time.Millisecond
	r := NewRegistry()
	first := open(t, r, newLoad(), opts)
	start(t, first)
	state := func(e *Engine) string {
		for _, ab := range e.Status()[0].Records[0].Backends {
			return string(ab.State)
		}
		return "none"
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return state(first) == "up" }, "the discovered backend is %s", state(first))

	second := open(t, r, newLoad(), opts)
	if st := state(second); st != "up" {
		t.Errorf("the new load's first snapshot has the discovered backend %s, want up", st)
	}
	start(t, second)
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	if st := state(second); st != "up" {
		t.Errorf("after the old load stopped the discovered backend is %s, want up", st)
	}
}
