package main

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/admin/admintest"
	"github.com/meridian-gslb/meridian/internal/overlay"
)

// TestDashboardEndToEnd opens the dashboard of a running meridian in headless Chromium, sees
// the primary go down when its health check fails, and disables it from its row. The block
// names no site, so the Sites section stays hidden, and the failing-over record says so once.
func TestDashboardEndToEnd(t *testing.T) {
	b := admintest.NewBrowser(t)
	primary, secondary := startSite(t, "127.0.0.1"), startSite(t, "127.0.0.2")
	s := startWithAPI(t, wwwZone(primary, secondary), filepath.Join(t.TempDir(), "overrides.json"))

	b.Do(chromedp.Navigate(s.url + "/"))
	b.WaitText(admintest.BackendCell(primaryKey, "state"), "up", 15*time.Second)
	b.WaitText(admintest.BackendCell(secondaryKey, "state"), "up", 5*time.Second)
	b.WaitText("#summary", "2 backends: 2 up", 5*time.Second)
	if n := b.Count("#sites:not([hidden])"); n != 0 {
		t.Errorf("the Sites section is shown without a site: %q", b.Text("#sites"))
	}

	primary.fail()
	b.WaitText(admintest.BackendCell(primaryKey, "state"), "down", 15*time.Second)
	b.WaitText(admintest.BackendCell(primaryKey, "reason"), "refused", 5*time.Second)
	b.WaitText("#transitions", "127.0.0.1", 5*time.Second)
	b.WaitText(`tr.record[data-record="www.example.org."] [data-field="failover"]`, "failover", 5*time.Second)
	if r := b.RepeatedBadges(); len(r) > 0 {
		t.Errorf("badges shown twice: %v", r)
	}

	b.Do(chromedp.Click(chromedp.CSS(admintest.BackendButton(primaryKey, "disable"))))
	b.WaitText(admintest.BackendCell(primaryKey, "override"), "disable", 10*time.Second)
	bs, err := s.client.Backends(context.Background(), admin.Selector{Keys: []string{primaryKey}}, "")
	if err != nil || len(bs) != 1 || bs[0].Override == nil || bs[0].Override.Action != overlay.Disable {
		t.Fatalf("after the click, the API reports %+v, %v", bs, err)
	}
	if got := s.answer(t); !slices.Equal(got, []string{"127.0.0.2"}) {
		t.Fatalf("after the click, the answer is %v", got)
	}

	// The explain tool, against the engine.
	b.Do(chromedp.SetValue(chromedp.CSS("#explain-name"), "www.example.org"),
		chromedp.Click(chromedp.CSS("#explain-form button")))
	b.WaitText("#explain-result pre", "127.0.0.2", 10*time.Second)
}
