package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// probeDelay is how long the backends take to answer their http checks: for that long after a
// start, no probe has a result, and answers come from what the instance started with.
const probeDelay = 3 * time.Second

// slowHTTP serves on a free port of ip, answering every request with code after probeDelay.
func slowHTTP(t *testing.T, ip string, code int) int {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(probeDelay):
			w.WriteHeader(code)
		case <-r.Context().Done():
		}
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// TestStateFileAcrossRestart restarts a standalone instance whose backends take seconds to
// answer their checks, one up and one down. Stopped with SIGTERM, it saves their health; started
// again, its very first answers hold the up backend alone, before any probe could answer. When
// the file is older than state_max_age, the restarted instance answers by its fallback policy
// (fail-open: both backends) until its probes answer.
func TestStateFileAcrossRestart(t *testing.T) {
	t.Parallel()
	upPort, downPort := slowHTTP(t, "127.0.0.1", http.StatusOK), slowHTTP(t, "127.0.0.2", http.StatusServiceUnavailable)
	dir := t.TempDir()
	statePath := filepath.Join(dir, "state", "state.json")
	zone := fmt.Sprintf(`
records:
  app.example.org.:
    mode: roundrobin
    scrape_interval: 60s
    scrape_timeout: 10s
    backends:
      - {address: 127.0.0.1, healthchecks: [{type: http, params: {port: %d, uri: /, enable_tls: false}}]}
      - {address: 127.0.0.2, healthchecks: [{type: http, params: {port: %d, uri: /, enable_tls: false}}]}
`, upPort, downPort)
	if err := os.WriteFile(filepath.Join(dir, "zone.yml"), []byte(zone), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func() (*testutil.Server, time.Time) {
		began := time.Now()
		s := testutil.Start(t, dir, func(port int) string {
			return fmt.Sprintf(".:%d {\n bind 127.0.0.1\n gslb {\n  zone example.org. %s\n  state_persist_enable\n  state_persist_path %s\n  state_max_age 5m\n }\n}\n",
				port, filepath.Join(dir, "zone.yml"), statePath)
		})
		return s, began
	}
	answer := func(s *testutil.Server) []string { return addresses(s.Query(t, "udp", "app.example.org", dns.TypeA)) }
	upOnly, both := []string{"127.0.0.1"}, []string{"127.0.0.1", "127.0.0.2"}

	// First run: no file yet, so fail-open until the probes answer, then the up backend alone.
	s, _ := start()
	testutil.Eventually(t, 3*probeDelay, func() bool { return slices.Equal(answer(s), upOnly) }, "the probes did not settle: %v\n%s", answer(s), s.Logs)
	s.Stop() // SIGTERM: the state is written on the way out (the periodic write is 30 s away)
	if _, err := os.Stat(statePath); err != nil {
		t.Fatalf("no state file after SIGTERM: %v\n%s", err, s.Logs())
	}

	// Restart: the first answers, well before any probe can answer, follow the file.
	s, began := start()
	got := answer(s)
	if elapsed := time.Since(began); elapsed >= probeDelay {
		t.Fatalf("the restart took %s, no shorter than the probes' delay: the test proves nothing", elapsed)
	}
	if !slices.Equal(got, upOnly) {
		t.Errorf("right after a restart the answer is %v, want the up backend alone %v\n%s", got, upOnly, s.Logs())
	}
	s.Stop()

	// A file older than state_max_age is not used: fail-open again until the probes answer.
	ageFile(t, statePath, 10*time.Minute)
	s, began = start()
	got = answer(s)
	if elapsed := time.Since(began); elapsed >= probeDelay {
		t.Fatalf("the restart took %s, no shorter than the probes' delay: the test proves nothing", elapsed)
	}
	if !slices.Equal(got, both) {
		t.Errorf("with a stale state file the answer right after a restart is %v, want fail-open %v\n%s", got, both, s.Logs())
	}
}

// ageFile rewrites the write time of the state file at path to age ago.
func ageFile(t *testing.T, path string, age time.Duration) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	f["written_at"] = time.Now().Add(-age).UTC().Format(time.RFC3339Nano)
	if data, err = json.Marshal(f); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
