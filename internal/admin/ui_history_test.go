package admin

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/meridian-gslb/meridian/internal/admin/admintest"
	"github.com/meridian-gslb/meridian/internal/published"
)

// hourOf returns the history of the backend with key, ending now: the latency (µs, -1 for none)
// and failures of its last buckets, the earlier ones empty, up from 20 minutes ago then the
// changes.
func hourOf(key string, latency, failures []int64, changes ...Change) BackendHistory {
	now := time.Now()
	h := BackendHistory{Key: key, Record: strings.SplitN(key, "|", 2)[0], LatencyUS: make(Series, 120), Failures: make(Series, 120),
		From: now.Add(-20 * time.Minute), State: StateUp, Changes: changes}
	for i := range h.LatencyUS {
		h.LatencyUS[i], h.Failures[i] = -1, -1
	}
	copy(h.LatencyUS[120-len(latency):], latency)
	copy(h.Failures[120-len(failures):], failures)
	return h
}

func (p *fakeProvider) setHistory(h ...BackendHistory) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.history = h
}

// TestDashboardHistoryPlots draws a backend's last hour from the history the API gives, and
// redraws it when the history changes: the sparkline's path, the failure marks, the state strip
// and the record's timeline, with their numbers in the labels.
func TestDashboardHistoryPlots(t *testing.T) {
	b := admintest.NewBrowser(t)
	p := exampleProvider()
	const key = "www.example.org.|10.1.0.1|0"
	p.setHistory(hourOf(key, []int64{1000, 2000, -1, 4000}, []int64{0, 0, -1, 0}))
	_, base := startServer(t, Config{}, nil, p)

	cell := admintest.BackendCell(key, "history")
	attr := func(sel, name string) string {
		return b.Eval(fmt.Sprintf(`(document.querySelector(%q) || {getAttribute: () => ""}).getAttribute(%q) || ""`, sel, name))
	}
	b.Do(chromedp.Navigate(base + "/"))
	b.WaitFor(10*time.Second, func() bool { return attr(cell+" path.spark", "d") != "" }, func() string { return "no sparkline" })
	// Four buckets of 120 in 120 px: x at 116.5, 117.5, (none), 119.5; y from 21 (0) to 1 (the top, 4 ms).
	if d := attr(cell+" path.spark", "d"); d != "M116.5 16.0 L117.5 11.0 M119.5 1.0" {
		t.Errorf("sparkline path %q", d)
	}
	label := attr(cell+" svg", "aria-label")
	for _, want := range []string{"latency 1.0 ms to 4.0 ms, mean 2.3 ms", "0 failed results", "up 20 min"} {
		if !strings.Contains(label, want) {
			t.Errorf("label %q does not say %q", label, want)
		}
	}
	if got := b.Eval(fmt.Sprintf(`[...document.querySelectorAll(%q)].map((r) => r.getAttribute("class")).join(" ")`, cell+" .strip rect")); got != "st-none st-up" {
		t.Errorf("state strip %q, want no history then up", got)
	}
	if n := b.Count(`tr.record[data-record="www.example.org."] details[data-field="timeline"] g.lane`); n != 1 {
		t.Errorf("the record timeline has %d lanes, want the one backend with a history", n)
	}

	// It fails and goes down: the next poll redraws the line, marks the failures, splits the strip.
	down := time.Now().Add(-time.Minute)
	p.setHistory(hourOf(key, []int64{1000, 2000, -1, 4000, 8000}, []int64{0, 0, -1, 0, 3},
		Change{Time: down, To: StateDown, Reason: "connection refused"}))
	b.WaitFor(10*time.Second, func() bool { return attr(cell+" path.spark", "d") == "M115.5 18.5 L116.5 16.0 M118.5 11.0 L119.5 1.0" },
		func() string { return "sparkline path " + attr(cell+" path.spark", "d") })
	if n := b.Count(cell + " rect.fail"); n != 1 {
		t.Errorf("%d failure marks, want 1", n)
	}
	if got := b.Eval(fmt.Sprintf(`[...document.querySelectorAll(%q)].map((r) => r.dataset.state).join(" ")`, cell+" .strip rect[data-state]")); got != "up down" {
		t.Errorf("state strip %q, want up then down", got)
	}
	if label := attr(cell+" svg", "aria-label"); !strings.Contains(label, "3 failed results") || !strings.Contains(label, "down 1 min") {
		t.Errorf("label %q", label)
	}
	timeline := `tr.record[data-record="www.example.org."] details[data-field="timeline"]`
	b.WaitText(timeline+" summary", "1 state change", time.Second)
	b.Do(chromedp.Click(chromedp.CSS(timeline + " summary")))
	if got := b.Text(timeline + " line.tick title"); !strings.Contains(got, "10.1.0.1 down (connection refused)") {
		t.Errorf("the change's tick says %q", got)
	}
	// The open timeline stays open across polls.
	b.WaitText("#updated", "updated", time.Second)
	before := b.Text("#updated")
	b.WaitFor(10*time.Second, func() bool { return b.Text("#updated") != before }, func() string { return "no poll" })
	if b.Eval(fmt.Sprintf(`String(document.querySelector(%q).open)`, timeline)) != "true" {
		t.Errorf("the timeline closed at the next poll")
	}
}

// sitesFake is a fakeProvider of a block that names its site.
type sitesFake struct {
	*fakeProvider
	view published.View
}

func (p *sitesFake) Sites() published.View {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.view
}

// setSite sets the state of the other site, as its heartbeats would.
func (p *sitesFake) setSite(state string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.view.Sites[0].State = state
}

// TestDashboardSiteFreshness sees the strip of another site's freshness follow its state from
// poll to poll.
func TestDashboardSiteFreshness(t *testing.T) {
	b := admintest.NewBrowser(t)
	p := &sitesFake{fakeProvider: exampleProvider(), view: published.View{Site: "eu", Sites: []published.SiteView{{Name: "us", State: "fresh", HeartbeatAge: 0.5}}}}
	s, base := startServer(t, Config{}, nil, nil)
	s.Register([]string{"example.org."}, p)

	strip := `tr[data-site="us"] td[data-field="freshness"]`
	states := func() string {
		return b.Eval(fmt.Sprintf(`[...document.querySelectorAll(%q)].map((r) => r.dataset.state).join(" ")`, strip+" rect[data-state]"))
	}
	b.Do(chromedp.Navigate(base + "/"))
	b.WaitFor(10*time.Second, func() bool { return strings.HasPrefix(states(), "fresh fresh") }, func() string { return "strip " + states() })
	p.setSite("stale")
	b.WaitFor(10*time.Second, func() bool { return strings.HasSuffix(states(), "fresh stale") }, func() string { return "strip " + states() })
	label := b.Eval(fmt.Sprintf(`document.querySelector(%q).getAttribute("aria-label")`, strip+" svg"))
	if !strings.Contains(label, "fresh ") || !strings.Contains(label, "stale ") || !strings.Contains(label, "heartbeat age up to 0.5 s") {
		t.Errorf("label %q", label)
	}
}
