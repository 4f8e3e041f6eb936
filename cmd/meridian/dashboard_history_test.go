package main

import (
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/meridian-gslb/meridian/internal/admin/admintest"
)

// reopen listens again on the address of s, which fail closed: its health checks pass again.
func (s *site) reopen(t *testing.T) {
	t.Helper()
	l, err := net.Listen("tcp", s.addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", s.addr, err)
	}
	s.l = l // startSite's cleanup closes it
	go acceptAndClose(l)
}

// TestDashboardHistory opens the dashboard of a running meridian in headless Chromium and
// watches the primary's last hour as its listener closes and opens again: failures are marked,
// the state strip goes up, down, up, the record's timeline has a tick at each change, and the
// sparkline's path moves.
func TestDashboardHistory(t *testing.T) {
	b := admintest.NewBrowser(t)
	primary, secondary := startSite(t, "127.0.0.1"), startSite(t, "127.0.0.2")
	s := startWithAPI(t, wwwZone(primary, secondary), filepath.Join(t.TempDir(), "overrides.json"))

	cell := admintest.BackendCell(primaryKey, "history")
	js := func(format string, args ...any) string { return b.Eval(fmt.Sprintf(format, args...)) }
	path := func() string {
		return js(`(document.querySelector(%q) || {getAttribute: () => ""}).getAttribute("d") || ""`, cell+" path.spark")
	}
	strip := func() string {
		return js(`[...document.querySelectorAll(%q)].map((r) => r.dataset.state).join(" ")`, cell+" .strip rect[data-state]")
	}
	label := func() string {
		return js(`(document.querySelector(%q) || {getAttribute: () => ""}).getAttribute("aria-label") || ""`, cell+" svg")
	}
	waitStrip := func(suffix string) {
		t.Helper()
		b.WaitFor(15*time.Second, func() bool { return strings.HasSuffix(strip(), suffix) },
			func() string { return fmt.Sprintf("state strip %q, want it to end %q\n%s", strip(), suffix, s.Logs()) })
	}

	b.Do(chromedp.Navigate(s.url + "/"))
	b.WaitText(admintest.BackendCell(primaryKey, "state"), "up", 15*time.Second)
	waitStrip("up")
	b.WaitFor(10*time.Second, func() bool { return path() != "" }, func() string { return "no sparkline" })
	first := path()
	if !strings.Contains(label(), "0 failed results") {
		t.Errorf("label %q, want no failure yet", label())
	}

	primary.fail()
	b.WaitText(admintest.BackendCell(primaryKey, "state"), "down", 15*time.Second)
	waitStrip("up down")
	b.WaitFor(10*time.Second, func() bool { return b.Count(cell+" rect.fail") > 0 && !strings.Contains(label(), " 0 failed results") },
		func() string { return fmt.Sprintf("%d failure marks, label %q", b.Count(cell+" rect.fail"), label()) })

	primary.reopen(t)
	b.WaitText(admintest.BackendCell(primaryKey, "state"), "up", 15*time.Second)
	waitStrip("up down up")
	if l := label(); !regexp.MustCompile(`down [0-9]+ s`).MatchString(l) {
		t.Errorf("label %q, want the time it was down", l)
	}

	// The record's timeline: one lane per backend, the primary's with a tick at each change
	// (unknown to up at the start, down, up).
	lane := fmt.Sprintf(`tr.record[data-record="www.example.org."] details[data-field="timeline"] g.lane[data-key=%q]`, primaryKey)
	b.WaitFor(10*time.Second, func() bool { return b.Count(lane+" line.tick") == 3 },
		func() string {
			return fmt.Sprintf("%d ticks on the primary's lane, want 3", b.Count(lane+" line.tick"))
		})
	// The sparkline scales to its highest point, so one bucket's line is always the same dot;
	// it becomes a line when two buckets in a row measured a latency. The buckets are 30 s of
	// the wall clock: the next one starts at most 30 s after the first, and it may take two
	// (a bucket that saw only the failed probes has no latency, and breaks the line).
	b.WaitFor(65*time.Second, func() bool { return strings.Contains(path(), "L") },
		func() string {
			return fmt.Sprintf("the sparkline is %q (%q at first), want a line through two buckets", path(), first)
		})
	if n := b.Count(`tr.record[data-record="www.example.org."] details[data-field="timeline"] g.lane`); n != 2 {
		t.Errorf("the record's timeline has %d lanes, want 2", n)
	}
	if got := js(`[...document.querySelectorAll(%q)].map((e) => e.textContent).join(" | ")`, lane+" line.tick title"); !strings.Contains(got, "127.0.0.1 down (") || !strings.Contains(got, "127.0.0.1 up") {
		t.Errorf("the ticks say %q", got)
	}
}
