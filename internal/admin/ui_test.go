package admin

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/meridian-gslb/meridian/internal/admin/admintest"
	"github.com/meridian-gslb/meridian/internal/overlay"
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
