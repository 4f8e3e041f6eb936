package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/admin/admintest"
	"github.com/meridian-gslb/meridian/internal/notify/notifytest"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// drillZone is wwwZone (failover from dc-a to dc-b, checked over TCP) with a record of one
// backend, which any drill of the primaries sends to its fallback, and a guarded pool.
func drillZone(primary, secondary *site) string {
	return wwwZone(primary, secondary) + `
  lone.example.org.:
    mode: failover
    backends: [{address: 192.0.2.99, location: dc-c}]
  pool.example.org.:
    mode: roundrobin
    drain_guard: {min_healthy: 2}
    backends: [{address: 192.0.2.50, location: dc-g}, {address: 192.0.2.51, location: dc-g}]
`
}

// startDrills serves drillZone with the admin API, a webhook and the drills.
func startDrills(t *testing.T, hooks *notifytest.Receiver) *apiServer {
	t.Helper()
	primary, secondary := startSite(t, "127.0.0.1"), startSite(t, "127.0.0.2")
	return startWithAPI(t, drillZone(primary, secondary), filepath.Join(t.TempDir(), "overrides.json"),
		"webhook "+hooks.URL,
		"drill primaries 1s primaries",
		"drill dc-a-live 1h drained location:dc-a live 1m",
		"drill pool-live 1h drained location:dc-g live 1m")
}

// TestDrillsThroughTheBinary runs drills against real backends: the scheduled one fails (the
// lone record would answer from its fallback) and says so to the webhook; meridian ctl lists
// the drills and runs them and what-ifs on demand; a live drill drains for real, as the drill's
// user, and one the drain guard refuses fails without draining.
func TestDrillsThroughTheBinary(t *testing.T) {
	t.Parallel()
	hooks := notifytest.NewReceiver(t)
	s := startDrills(t, hooks)
	s.waitState(t, primaryKey, admin.StateUp)
	s.waitState(t, secondaryKey, admin.StateUp)

	testutil.Eventually(t, 10*time.Second, func() bool { return len(hooks.Events("drill")) > 0 }, "no drill event\n%s", s.Logs())
	ev := hooks.Events("drill")[0].Event
	if ev.Drill != "primaries" || !strings.Contains(ev.Reason, "records touched fail") ||
		!slices.ContainsFunc(ev.Findings, func(f string) bool { return strings.HasPrefix(f, "lone.example.org.: no A backend left") }) {
		t.Errorf("drill event %+v", ev)
	}

	env := []string{"MERIDIAN_API=" + s.url}
	out, err := ctlBinary(t, env, "drills")
	if err != nil || !strings.Contains(out, "primaries") || !strings.Contains(out, "FAILED") || !strings.Contains(out, "(live 1m0s)") {
		t.Errorf("ctl drills: %v\n%s", err, out)
	}
	out, err = ctlBinary(t, env, "drill", "primaries")
	if err == nil || !strings.Contains(out, "lone.example.org.") || !strings.Contains(out, "fallback fail-open") || !strings.Contains(out, "lone.example.org.: no A backend left") {
		t.Errorf("ctl drill primaries (exit 1 wanted): %v\n%s", err, out)
	}
	out, err = ctlBinary(t, env, "drill", "-down", "location:dc-b")
	if err != nil || !strings.Contains(out, "127.0.0.1") || !strings.Contains(out, "pass") {
		t.Errorf("ctl drill -down location:dc-b: %v\n%s", err, out)
	}

	out, err = ctlBinary(t, env, "drill", "dc-a-live")
	if err != nil || !strings.Contains(out, "live drain of 1 backends until") {
		t.Fatalf("ctl drill dc-a-live: %v\n%s", err, out)
	}
	if o := s.backend(t, primaryKey).Override; o == nil || o.By != "drill:dc-a-live" || o.Expires.IsZero() {
		t.Errorf("the live drill's override is %+v", o)
	}
	if got := s.answer(t); !slices.Equal(got, []string{"127.0.0.2"}) {
		t.Errorf("answers %v during the live drill", got)
	}

	out, err = ctlBinary(t, env, "drill", "pool-live")
	if err == nil || !strings.Contains(out, "not made: refused by the drain guard") {
		t.Errorf("ctl drill pool-live (refused): %v\n%s", err, out)
	}
	if o := s.backend(t, "pool.example.org.|192.0.2.50|0").Override; o != nil {
		t.Errorf("a refused live drill drained: %+v", o)
	}
}

// TestDashboardDrills shows the drills on the dashboard and runs one from its row.
func TestDashboardDrills(t *testing.T) {
	b := admintest.NewBrowser(t)
	s := startDrills(t, notifytest.NewReceiver(t))
	b.Do(chromedp.Navigate(s.url + "/"))
	row := func(name, field string) string { return fmt.Sprintf(`#drills tr[data-drill=%q] %s`, name, field) }
	b.WaitText(row("primaries", `[data-field="result"]`), "failed", 15*time.Second)
	b.WaitText(row("dc-a-live", "td:nth-child(3)"), "live 1m0s", 5*time.Second)
	b.Do(chromedp.Click(chromedp.CSS(row("pool-live", `button[data-action="run-drill"]`))))
	b.WaitText("#message", "drill pool-live: failed", 10*time.Second)
	b.WaitText(row("pool-live", `[data-field="result"]`), "refused by the drain guard", 10*time.Second)
}
