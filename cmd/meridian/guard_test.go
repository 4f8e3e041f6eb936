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
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// guardedZone is www.example.org., weighted over three sites checked over TCP every 200 ms,
// with a drain guard: two must stay served.
func guardedZone(sites ...*site) string {
	y := `
records:
  www.example.org.:
    mode: roundrobin
    scrape_interval: 200ms
    scrape_timeout: 100ms
    drain_guard: {min_healthy: 2}
    backends:
`
	for i, s := range sites {
		y += fmt.Sprintf("      - {address: 127.0.0.%d, rise: 1, fall: 1, healthchecks: [{type: tcp, params: {port: %d}}]}\n", i+1, s.port())
	}
	return y
}

// guardKey is the key of the i-th (from 1) backend of guardedZone.
func guardKey(i int) string { return fmt.Sprintf("www.example.org.|127.0.0.%d|0", i) }

// ctlWant runs meridian ctl in the built binary with env, fails the test unless it exits 0
// when wantOK (and 1 or 2 otherwise), and returns its output.
func ctlWant(t *testing.T, env []string, wantOK bool, args ...string) string {
	t.Helper()
	out, err := ctlBinary(t, env, args...)
	if (err == nil) != wantOK {
		t.Fatalf("ctl %v: %v\n%s", args, err, out)
	}
	return out
}

// TestDrainGuardThroughTheBinary drains through meridian ctl against real backends: a drain
// that leaves the record at its guard passes, one that would leave it below is refused with
// the record named, then forced with a reason, which the override keeps. A scheduled drain
// that was fine when made is held at its start while a backend is down, and starts once it is
// back.
func TestDrainGuardThroughTheBinary(t *testing.T) {
	t.Parallel()
	sites := []*site{startSite(t, "127.0.0.1"), startSite(t, "127.0.0.2"), startSite(t, "127.0.0.3")}
	s := startWithAPI(t, guardedZone(sites...), filepath.Join(t.TempDir(), "overrides.json"))
	for i := range sites {
		s.waitState(t, guardKey(i+1), admin.StateUp)
	}
	env := []string{"MERIDIAN_API=" + s.url}
	run := func(wantOK bool, args ...string) string { t.Helper(); return ctlWant(t, env, wantOK, args...) }
	run(true, "drain", "-key", guardKey(1), "-for", "1h", "-reason", "first")
	out := run(false, "drain", "-key", guardKey(2), "-for", "1h")
	for _, want := range []string{"refused by the drain guard", "www.example.org.", "1 of 3", "min_healthy 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
	}
	if o := s.backend(t, guardKey(2)).Override; o != nil {
		t.Fatalf("a refused drain left %+v", o)
	}
	if out := run(false, "drain", "-key", guardKey(2), "-force"); !strings.Contains(out, "a forced change needs a reason") {
		t.Errorf("-force without -reason:\n%s", out)
	}
	run(true, "drain", "-key", guardKey(2), "-force", "-reason", "CHG-9 both racks")
	b := s.backend(t, guardKey(2))
	if b.Override == nil || !b.Override.Forced || b.Override.Reason != "CHG-9 both racks" || len(b.Override.Breaches) != 1 {
		t.Fatalf("the forced override is %+v", b.Override)
	}
	if out := run(true, "status", "-key", guardKey(2)); !strings.Contains(out, "(forced)") {
		t.Errorf("status does not show the forcing:\n%s", out)
	}
	if got := s.answer(t); !slices.Equal(got, []string{"127.0.0.3"}) {
		t.Errorf("answers %v with two drained", got)
	}
	run(true, "clear", "-record", "www.example.org")

	// Scheduled: fine when made, three up.
	run(true, "drain", "-key", guardKey(3), "-in", "3s", "-for", "1h", "-reason", "later")
	sites[0].fail()
	s.waitState(t, guardKey(1), admin.StateDown)
	testutil.Eventually(t, 10*time.Second, func() bool { return s.backend(t, guardKey(3)).Held != "" },
		"the drain of %s is not held\n%s", guardKey(3), s.Logs())
	if got := s.answer(t); !slices.Contains(got, "127.0.0.3") {
		t.Errorf("a held drain's backend is not served: %v", got)
	}
	if !strings.Contains(s.Logs(), "held at its start") {
		t.Errorf("the hold is not logged:\n%s", s.Logs())
	}
	sites[0].reopen(t)
	testutil.Eventually(t, 10*time.Second, func() bool { return s.backend(t, guardKey(3)).Held == "" && !s.backend(t, guardKey(3)).Healthy },
		"the held drain did not start once the guard allowed it\n%s", s.Logs())
}

// TestDashboardForcesPastTheDrainGuard drains from the dashboard: the refusal lists the
// record, and the Force button makes the change with the reason typed.
func TestDashboardForcesPastTheDrainGuard(t *testing.T) {
	b := admintest.NewBrowser(t)
	sites := []*site{startSite(t, "127.0.0.1"), startSite(t, "127.0.0.2")}
	s := startWithAPI(t, guardedZone(sites...), filepath.Join(t.TempDir(), "overrides.json"))
	b.Do(chromedp.Navigate(s.url + "/"))
	b.WaitText(admintest.BackendCell(guardKey(1), "state"), "up", 15*time.Second)
	b.WaitText(`tr.record [data-field="drain-guard"]`, "drain guard", 5*time.Second)

	b.Do(chromedp.Click(chromedp.CSS(admintest.BackendButton(guardKey(1), "drain"))))
	b.WaitText("#breaches", "www.example.org. A: 1 of 2 backends served", 10*time.Second)
	b.Do(chromedp.Click(chromedp.CSS("#force")))
	b.WaitText("#message", "Type a reason first", 5*time.Second)
	if o := s.backend(t, guardKey(1)).Override; o != nil {
		t.Fatalf("refused, yet the override is %+v", o)
	}

	b.Do(chromedp.Click(chromedp.CSS(admintest.BackendButton(guardKey(1), "drain"))))
	b.WaitText("#breaches", "1 of 2", 10*time.Second)
	b.Do(chromedp.SetValue(chromedp.CSS("#reason"), "CHG-10 rack power"), chromedp.Click(chromedp.CSS("#force")))
	b.WaitText(admintest.BackendCell(guardKey(1), "override"), "(forced)", 10*time.Second)
	if o := s.backend(t, guardKey(1)).Override; o == nil || !o.Forced || o.Reason != "CHG-10 rack power" {
		t.Fatalf("after Force, the override is %+v", o)
	}
}
