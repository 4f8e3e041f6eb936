package admin

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/meridian-gslb/meridian/internal/admin/admintest"
	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/published"
)

// setState changes a backend of p as a health check would.
func (p *fakeProvider) setState(key string, state State, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.zones[0].Records {
		for i := range r.Backends {
			if b := &r.Backends[i]; b.Key == key {
				b.State, b.Healthy, b.Reason, b.LastChange = state, state == StateUp, reason, time.Now()
			}
		}
	}
}

func TestDashboard(t *testing.T) {
	b := admintest.NewBrowser(t)
	store := overlay.NewMemory(overlay.SystemClock{})
	p := exampleProvider()
	_, base := startServer(t, Config{}, store, p)
	const key = "www.example.org.|10.1.0.2|0"

	b.Do(chromedp.Navigate(base + "/"))
	b.WaitText(admintest.BackendCell(key, "state"), "up", 10*time.Second)
	if got := b.Text("#summary"); got != "1 zones, 2 records, 5 backends: 3 up, 1 down, 1 unknown, 0 overridden" {
		t.Errorf("summary = %q", got)
	}
	if n := b.Count("#sites:not([hidden])"); n != 0 {
		t.Errorf("the Sites section is shown for a block that names no site")
	}

	// The backend goes down: the dashboard shows it at its next poll, with the reason.
	p.setState(key, StateDown, "connection refused")
	b.WaitText(admintest.BackendCell(key, "state"), "down", 10*time.Second)
	b.WaitText(admintest.BackendCell(key, "reason"), "connection refused", time.Second)
	if b.Text(admintest.BackendCell(key, "served")) != "no" {
		t.Errorf("a down backend is shown as served")
	}

	// Disable it from its row.
	b.Do(chromedp.Click(chromedp.CSS(admintest.BackendButton(key, "disable"))))
	b.WaitText(admintest.BackendCell(key, "override"), "disable", 10*time.Second)
	if o, ok := store.Get(key); !ok || o.Action != overlay.Disable {
		t.Fatalf("override after the click: %+v, %v", o, ok)
	}
	b.WaitText("#message", "disable: 1 backend", time.Second)

	// Drain for the time chosen, with a reason; then clear.
	b.Do(chromedp.SetValue(chromedp.CSS("#reason"), "rack move"),
		chromedp.Click(chromedp.CSS(admintest.BackendButton(key, "drain"))))
	b.WaitText(admintest.BackendCell(key, "override"), "drain until", 10*time.Second)
	if o, _ := store.Get(key); o.Action != overlay.Drain || o.Reason != "rack move" || time.Until(o.Expires) < 59*time.Minute {
		t.Fatalf("override after drain: %+v", o)
	}
	b.Do(chromedp.Click(chromedp.CSS(admintest.BackendButton(key, "clear"))))
	b.WaitFor(10*time.Second, func() bool { return b.Text(admintest.BackendCell(key, "override")) == "" && len(store.List()) == 0 },
		func() string {
			return fmt.Sprintf("after clear: %q, overrides %+v", b.Text(admintest.BackendCell(key, "override")), store.List())
		})

	// The filter keeps the rows that match every word.
	b.Do(chromedp.SendKeys(chromedp.CSS("#filter"), "dc-us up"))
	if n := b.Count("tr.backend"); n != 1 {
		t.Errorf("filter 'dc-us up' shows %d backends, want 1", n)
	}
	b.Do(chromedp.Evaluate[chromedp.Void](`document.getElementById("filter").value = "";
		const s = document.getElementById("state-filter"); s.value = "down"; s.dispatchEvent(new Event("change"))`))
	if n := b.Count("tr.backend"); n != 2 {
		t.Errorf("state filter 'down' shows %d backends, want 2", n)
	}

	// Explain an answer.
	b.Do(chromedp.SetValue(chromedp.CSS("#explain-name"), "www.example.org"),
		chromedp.SetValue(chromedp.CSS("#explain-ecs"), "198.51.100.0/24"),
		chromedp.Click(chromedp.CSS(`#explain-form button`)))
	b.WaitText(`#explain-result pre`, "www.example.org.\t30\tIN\tA\t192.0.2.10", 10*time.Second)
	b.WaitText(`#explain-result`, "failover picks priority 1", time.Second)
	b.WaitText(`#transitions`, "10.1.0.5", time.Second)
}

func TestDashboardSignIn(t *testing.T) {
	b := admintest.NewBrowser(t)
	_, base := startServer(t, Config{Token: "s3cret"}, nil, exampleProvider())
	b.Do(chromedp.Navigate(base + "/ui/"))
	b.Do(chromedp.WaitVisible(chromedp.CSS("#signin")))
	b.Do(chromedp.SetValue(chromedp.CSS("#signin-token"), "wrong"), chromedp.Click(chromedp.CSS(`#signin-form button`)))
	b.WaitText("#signin-error", "refused", 10*time.Second)
	b.Do(chromedp.SetValue(chromedp.CSS("#signin-token"), "s3cret"), chromedp.Click(chromedp.CSS(`#signin-form button`)))
	b.Do(chromedp.WaitVisible(chromedp.CSS("#zones table")))
	b.WaitText("#summary", "5 backends", 10*time.Second)
}

// TestDashboardSitesSection shows the Sites section for a block that names its site, and hides
// it for one that names none: such a block's provider gives the zero view.
func TestDashboardSitesSection(t *testing.T) {
	b := admintest.NewBrowser(t)
	for _, tt := range []struct {
		name  string
		view  published.View
		shown bool
	}{
		{"no site", published.View{}, false},
		{"site eu", published.View{Site: "eu", PeerInterval: 10 * time.Second, Sites: []published.SiteView{{Name: "us", State: "fresh"}}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, base := startServer(t, Config{}, nil, nil)
			s.Register([]string{"example.org."}, &sitesFake{fakeProvider: exampleProvider(), view: tt.view})
			b.Do(chromedp.Navigate(base + "/"))
			b.WaitText("#updated", "updated", 10*time.Second) // a poll has drawn the page
			if shown := b.Count("#sites:not([hidden])") == 1; shown != tt.shown {
				t.Errorf("the Sites section is shown: %v, want %v (it says %q)", shown, tt.shown, b.Text("#sites"))
			}
			if tt.shown {
				if got := b.Text(`#sites [data-field="self"]`); got != "eu" {
					t.Errorf("this site shows %q, want eu", got)
				}
				if n := b.Count(`#sites tr[data-site="us"]`); n != 1 {
					t.Errorf("%d rows of the site us, want 1", n)
				}
			}
		})
	}
}

// TestDashboardRecordBadges: each badge of a record says one thing once. The TTL's reason has a
// badge of its own unless the degraded or failover badge already says it.
func TestDashboardRecordBadges(t *testing.T) {
	b := admintest.NewBrowser(t)
	p := exampleProvider()
	tests := []struct {
		rec  Record
		want string // the badges' texts in order
	}{
		{Record{Name: "healthy.example.org.", TTL: 30, TTLReason: "healthy"}, ""},
		{Record{Name: "down.example.org.", TTL: 10, TTLReason: "backend down"}, "backend down"},
		{Record{Name: "failover.example.org.", Failover: true, TTL: 10, TTLReason: "failover"}, "failover"},
		{Record{Name: "stale.example.org.", Degraded: true, TTL: 10, TTLReason: "stale"}, "degraded"},
		{Record{Name: "both.example.org.", Degraded: true, Failover: true, TTL: 10, TTLReason: "failover"}, "degraded failover"},
		{Record{Name: "drain.example.org.", Failover: true, TTL: 5, TTLReason: "drain ahead"}, "failover drain ahead"},
		{Record{Name: "target.example.org.", Failover: true, TTL: 10, TTLReason: "failover",
			FailoverBudget: FailoverBudget{Target: Millis(20 * time.Second), Worst: Millis(37 * time.Second), Text: "worst case 37s"}},
			"failover failover target missed"},
		{Record{Name: "holds.example.org.", TTL: 30, TTLReason: "healthy",
			FailoverBudget: FailoverBudget{Target: Millis(time.Minute), Worst: Millis(37 * time.Second), Holds: true}},
			"failover target holds"},
	}
	for i, tt := range tests {
		rec := tt.rec
		rec.Mode, rec.Fallback = "failover", "fail-open"
		rec.Backends = []Backend{{Key: rec.Name + "|10.9.0." + fmt.Sprint(i) + "|0", Address: "10.9.0." + fmt.Sprint(i), Enabled: true, State: StateUp}}
		p.zones[0].Records = append(p.zones[0].Records, rec)
	}
	_, base := startServer(t, Config{}, nil, p)
	b.Do(chromedp.Navigate(base + "/"))
	b.WaitText("#summary", "10 records", 10*time.Second)
	for _, tt := range tests {
		t.Run(tt.rec.Name, func(t *testing.T) {
			got := b.Eval(fmt.Sprintf(`[...document.querySelectorAll('tr.record[data-record=%q] .badge')].map((e) => e.textContent).join(" ")`, tt.rec.Name))
			if got != tt.want {
				t.Errorf("badges %q, want %q", got, tt.want)
			}
		})
	}
	if r := b.RepeatedBadges(); len(r) > 0 {
		t.Errorf("badges shown twice: %v", r)
	}
	if title := b.Eval(`document.querySelector('tr.record[data-record="failover.example.org."] [data-field="failover"]').title`); !strings.Contains(title, "TTL 10 s: failover") {
		t.Errorf("the failover badge's title %q does not give the TTL", title)
	}
}
