package main

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// metricBackend is a loopback HTTP backend on host whose /metrics says the inflight value it
// holds, and whose status is 200 while up is set, 503 otherwise, after its delay.
type metricBackend struct {
	port     int
	inflight atomic.Int64
	up       atomic.Bool
	// delay, in nanoseconds, is how long the backend takes to answer: a slow site.
	delay atomic.Int64
}

func startMetricBackend(t *testing.T, host string) *metricBackend {
	t.Helper()
	l, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	b := &metricBackend{port: l.Addr().(*net.TCPAddr).Port}
	b.up.Store(true)
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(time.Duration(b.delay.Load())) // the backend's own slowness, not a wait of the test
		if !b.up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintf(w, "# TYPE http_inflight gauge\nhttp_inflight{pool=\"b\"} 1\nhttp_inflight{pool=\"a\"} %d\n", b.inflight.Load())
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	return b
}

// TestMeasuredLoadAndRTTEndToEnd: an http check reads a load from a loopback backend's
// metrics; the admin API shows it relative to the backend's capacity, and its RTT.
func TestMeasuredLoadAndRTTEndToEnd(t *testing.T) {
	t.Parallel()
	b := startMetricBackend(t, "127.0.0.1")
	b.inflight.Store(30)
	zone := fmt.Sprintf(`
records:
  www.example.org.:
    mode: weighted
    scrape_interval: 200ms
    scrape_timeout: 100ms
    backends:
      - address: 127.0.0.1
        capacity: 100
        rise: 1
        fall: 1
        healthchecks:
          - type: http
            params: {port: %d, enable_tls: false, uri: /metrics, metric: 'http_inflight{pool="a"}'}
`, b.port)
	s := startWithAPI(t, zone, filepath.Join(t.TempDir(), "overrides.json"))
	load := func() float64 {
		if l := s.backend(t, primaryKey).Load; l != nil {
			return *l
		}
		return math.NaN()
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return load() == 0.3 }, "load %v, want 0.3\n%s", load(), s.Logs)
	if rtt := s.backend(t, primaryKey).RTT; rtt <= 0 || time.Duration(rtt) > 100*time.Millisecond {
		t.Errorf("rtt_ms %v, want a loopback RTT", time.Duration(rtt))
	}
	b.inflight.Store(80)
	testutil.Eventually(t, 10*time.Second, func() bool { return load() == 0.8 }, "load %v after the change, want 0.8\n%s", load(), s.Logs)
	b.inflight.Store(-1) // not a load: unknown, and the check still passes
	testutil.Eventually(t, 10*time.Second, func() bool { return math.IsNaN(load()) }, "load %v for a negative metric, want none\n%s", load(), s.Logs)
	if st := s.backend(t, primaryKey); !st.Healthy || st.Reason != `http 200, metric http_inflight{pool="a"}: load -1 is negative` {
		t.Errorf("healthy %v, reason %q", st.Healthy, st.Reason)
	}
}

// TestSlowStartEndToEnd: in a weighted record of two backends of equal weight, the one that
// comes back takes a small share of the answers at first, and its half after slow_start.
func TestSlowStartEndToEnd(t *testing.T) {
	t.Parallel()
	steady, back := startMetricBackend(t, "127.0.0.1"), startMetricBackend(t, "127.0.0.2")
	zone := fmt.Sprintf(`
records:
  www.example.org.:
    mode: weighted
    slow_start: 3s
    scrape_interval: 100ms
    scrape_timeout: 80ms
    backends:
      - {address: 127.0.0.1, rise: 1, fall: 1, healthchecks: [{type: http, params: {port: %d, enable_tls: false}}]}
      - {address: 127.0.0.2, rise: 1, fall: 1, healthchecks: [{type: http, params: {port: %d, enable_tls: false}}]}
`, steady.port, back.port)
	s := startWithAPI(t, zone, filepath.Join(t.TempDir(), "overrides.json"))
	s.waitState(t, primaryKey, "up")
	s.waitState(t, secondaryKey, "up")
	// share returns the share of n answers that are the backend that came back.
	share := func(n int) float64 {
		hits := 0
		for range n {
			if a := addresses(s.Query(t, "udp", "www.example.org", dns.TypeA)); len(a) == 1 && a[0] == "127.0.0.2" {
				hits++
			}
		}
		return float64(hits) / float64(n)
	}
	if got := share(400); got < 0.4 || got > 0.6 {
		t.Fatalf("both up from the start (no ramp): share %.2f, want about 0.5", got)
	}
	back.up.Store(false)
	s.waitState(t, secondaryKey, "down")
	back.up.Store(true)
	s.waitState(t, secondaryKey, "up")
	cameUp := time.Now()
	early := share(300)
	// Its fraction is at most 0.1 + 0.9·(elapsed/3s) here: a share well under a half.
	if elapsed := time.Since(cameUp); elapsed < time.Second && early > 0.35 {
		t.Errorf("share %.2f in the first %v of the ramp, want a small one", early, elapsed)
	}
	t.Logf("share %.2f in the first %v of the ramp", early, time.Since(cameUp))
	// Half way, its fraction is about 0.55: a share of about 0.55/1.55 = 0.35.
	testutil.Eventually(t, 10*time.Second, func() bool { return time.Since(cameUp) > 1500*time.Millisecond }, "half way through the ramp")
	mid := share(300)
	t.Logf("share %.2f after %v", mid, time.Since(cameUp))
	if mid < 0.2 || mid > 0.47 || mid <= early {
		t.Errorf("share %.2f half way through the ramp (%.2f early), want about 0.35", mid, early)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return time.Since(cameUp) > 3500*time.Millisecond }, "the ramp's end")
	late := share(400)
	if late < 0.4 || late > 0.6 || late <= mid {
		t.Errorf("share %.2f after the ramp (%.2f half way), want about 0.5", late, mid)
	}
}
