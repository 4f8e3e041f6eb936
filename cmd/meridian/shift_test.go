package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/admin/admintest"
	"github.com/meridian-gslb/meridian/internal/notify/notifytest"
	"github.com/meridian-gslb/meridian/internal/shift"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// loadSite is a backend's HTTP server: /metrics serves test_load, its load, and answers 500
// while failing.
type loadSite struct {
	port    int
	load    atomic.Uint64 // math.Float64bits
	failing atomic.Bool
}

func startLoadSite(t *testing.T, host string) *loadSite {
	t.Helper()
	l, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	s := &loadSite{port: l.Addr().(*net.TCPAddr).Port}
	srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if s.failing.Load() {
			http.Error(w, "failing", http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "test_load %g\n", math.Float64frombits(s.load.Load()))
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	return s
}

func (s *loadSite) setLoad(v float64) { s.load.Store(math.Float64bits(v)) }

// shiftZone is www.example.org., weighted over site a (127.0.0.1) and site b (127.0.0.2), each
// checked over HTTP every 200 ms with its load read from test_load.
func shiftZone(a, b *loadSite) string {
	return fmt.Sprintf(`
records:
  www.example.org.:
    mode: weighted
    scrape_interval: 200ms
    scrape_timeout: 100ms
    backends:
      - {address: 127.0.0.1, site: a, rise: 1, fall: 1, healthchecks: [{type: http, params: {port: %d, enable_tls: false, uri: /metrics, metric: test_load}}]}
      - {address: 127.0.0.2, site: b, rise: 1, fall: 1, healthchecks: [{type: http, params: {port: %d, enable_tls: false, uri: /metrics, metric: test_load}}]}
`, a.port, b.port)
}

// answered returns the addresses 40 queries of www.example.org. got, each once, sorted.
func (s *apiServer) answered(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	for range 40 {
		for _, a := range addresses(s.Query(t, "udp", "www.example.org", dns.TypeA)) {
			seen[a] = true
		}
	}
	out := make([]string, 0, len(seen))
	for a := range seen {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// TestShiftsThroughTheBinary moves www.example.org.'s traffic from site a to site b with
// meridian ctl, against real HTTP backends and a real Prometheus: a shift whose query stays low
// completes and b takes all the traffic; cancelled, the configured weights serve again; shifts
// whose signal degrades (the Prometheus query, the load b's check reads, b's failure rate) roll
// back by themselves, saying why in ctl, the API and the webhook.
func TestShiftsThroughTheBinary(t *testing.T) {
	t.Parallel()
	a, b := startLoadSite(t, "127.0.0.1"), startLoadSite(t, "127.0.0.2")
	ratio, target := testutil.ServeGauge(t, "test_error_ratio")
	prom := testutil.StartPrometheus(t, target)
	hooks := notifytest.NewReceiver(t)
	s := startWithAPI(t, shiftZone(a, b), filepath.Join(t.TempDir(), "overrides.json"), "prometheus "+prom.URL, "webhook "+hooks.URL)
	s.waitState(t, "www.example.org.|127.0.0.1|0", admin.StateUp)
	s.waitState(t, "www.example.org.|127.0.0.2|0", admin.StateUp)
	env := []string{"MERIDIAN_API=" + s.url}
	run := func(wantOK bool, args ...string) string { t.Helper(); return ctlWant(t, env, wantOK, args...) }
	current := func() admin.ShiftStatus {
		t.Helper()
		var list []admin.ShiftStatus
		if err := json.Unmarshal([]byte(run(true, "shifts", "-o", "json")), &list); err != nil || len(list) != 1 {
			t.Fatalf("shifts: %v %v", list, err)
		}
		return list[0]
	}
	waitState := func(state string) admin.ShiftStatus {
		t.Helper()
		var st admin.ShiftStatus
		testutil.Eventually(t, 30*time.Second, func() bool { st = current(); return st.State == state },
			"shift %+v, want %s\n%s", st, state, s.Logs())
		return st
	}
	both := []string{"127.0.0.1", "127.0.0.2"}

	// A shift that completes.
	ratio.Set(0.01)
	out := run(true, "shift", "-record", "www.example.org", "-from", "site:a", "-to", "site:b", "-steps", "50,100", "-every", "2s",
		"-signal", "prometheus", "-query", "max(test_error_ratio)", "-above", "0.1", "-reason", "CHG-1 move to b")
	if !strings.Contains(out, "1 of 2") || !strings.Contains(out, "50%") || !strings.Contains(out, "running") {
		t.Errorf("ctl shift:\n%s", out)
	}
	if got := s.answered(t); !slices.Equal(got, both) {
		t.Errorf("at 50%% the answers are %v", got)
	}
	st := waitState(shift.Completed)
	if got := s.answered(t); !slices.Equal(got, []string{"127.0.0.2"}) {
		t.Errorf("completed, the answers are %v", got)
	}
	if st.Share != 1 || st.By != "" || len(st.History) != 3 {
		t.Errorf("the completed shift %+v", st)
	}
	testutil.Eventually(t, 5*time.Second, func() bool {
		return slices.ContainsFunc(hooks.Events("shift"), func(r notifytest.Request) bool { return r.Event.Change == "completed" && r.Event.Shift == st.ID })
	}, "no completed event")
	run(true, "shift-cancel", st.ID)
	if got := s.answered(t); !slices.Equal(got, both) {
		t.Errorf("cancelled, the answers are %v", got)
	}

	// Rollbacks: b's load, the query, b's failures.
	for _, tc := range []struct {
		name    string
		args    []string
		degrade func()
		restore func()
		why     string
	}{
		{"the load b's check reads", []string{"-signal", "metric", "-above", "0.8"}, func() { b.setLoad(0.9) }, func() { b.setLoad(0) }, "metric 0.9 is above 0.8"},
		{"the Prometheus query", []string{"-signal", "prometheus", "-query", "max(test_error_ratio)", "-above", "0.1"}, func() { ratio.Set(0.5) }, func() { ratio.Set(0.01) }, `prometheus "max(test_error_ratio)" 0.5 is above 0.1`},
		{"b's failure rate", []string{"-signal", "failure_rate", "-above", "0.5"}, func() { b.failing.Store(true) }, func() { b.failing.Store(false) }, "is above 0.5"},
	} {
		run(true, append([]string{"shift", "-record", "www.example.org", "-from", "site:a", "-to", "site:b", "-steps", "50,100", "-every", "1h"}, tc.args...)...)
		testutil.Eventually(t, 10*time.Second, func() bool { return current().Note != "" && !strings.HasPrefix(current().Note, "waiting") },
			"%s: no reading: %+v", tc.name, current())
		tc.degrade()
		st := waitState(shift.RolledBack)
		if st.Share != 0 || !strings.Contains(st.Why, tc.why) || !strings.Contains(st.Why, "back to 0%") {
			t.Errorf("%s: rolled back %+v", tc.name, st)
		}
		if out := run(true, "shifts"); !strings.Contains(out, "rolled-back") || !strings.Contains(out, tc.why) {
			t.Errorf("%s: ctl shifts:\n%s", tc.name, out)
		}
		if got := s.answered(t); !slices.Equal(got, []string{"127.0.0.1"}) {
			t.Errorf("%s: rolled back, the answers are %v", tc.name, got)
		}
		testutil.Eventually(t, 5*time.Second, func() bool {
			return slices.ContainsFunc(hooks.Events("shift"), func(r notifytest.Request) bool {
				return r.Event.Change == "rolled-back" && r.Event.Shift == st.ID && strings.Contains(r.Event.Reason, tc.why)
			})
		}, "%s: no rolled-back event", tc.name)
		run(true, "shift-cancel", st.ID)
		tc.restore()
		s.waitState(t, "www.example.org.|127.0.0.2|0", admin.StateUp)
	}

	if out := run(false, "shift", "-record", "www.example.org", "-from", "site:a", "-to", "site:z"); !strings.Contains(out, "to [site:z] names no backend") {
		t.Errorf("a shift to nothing:\n%s", out)
	}
	if !strings.Contains(s.Logs(), "rolled back") {
		t.Errorf("the rollbacks are not logged:\n%s", s.Logs())
	}
}

// TestDashboardShifts shows a shift on the dashboard and cancels it from its row.
func TestDashboardShifts(t *testing.T) {
	br := admintest.NewBrowser(t)
	a, b := startLoadSite(t, "127.0.0.1"), startLoadSite(t, "127.0.0.2")
	s := startWithAPI(t, shiftZone(a, b), filepath.Join(t.TempDir(), "overrides.json"))
	st, err := s.client.StartShift(t.Context(), admin.ShiftRequest{Record: "www.example.org", From: []string{"site:a"}, To: []string{"site:b"}, Steps: []float64{25, 100}, Every: "1h"})
	if err != nil {
		t.Fatal(err)
	}
	row := fmt.Sprintf(`#shifts tr[data-shift=%q]`, st.ID)
	br.Do(chromedp.Navigate(s.url + "/"))
	br.WaitText(row+` [data-field="share"]`, "25%", 15*time.Second)
	br.WaitText(row+` [data-field="state"]`, "running", 5*time.Second)
	br.Do(chromedp.Click(chromedp.CSS(row + ` button[data-action="cancel-shift"]`)))
	br.WaitText("#message", "shift "+st.ID+" cancelled", 10*time.Second)
	if list, err := s.client.Shifts(t.Context()); err != nil || len(list) != 0 {
		t.Errorf("after Cancel: %v, %v", list, err)
	}
}
