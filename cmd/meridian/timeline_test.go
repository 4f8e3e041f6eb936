package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/admin/admintest"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestFailoverTimelineEndToEnd: the primary's listener closes; once the answers moved to the
// secondary, the API holds the timeline of the change, its steps in order from the first
// failed probe to the first answer, within the record's failover_target and after the two
// probe intervals that fall 2 takes; the dashboard draws it in headless Chromium; the
// histogram and the target are in the metrics.
func TestFailoverTimelineEndToEnd(t *testing.T) {
	t.Parallel()
	primary, secondary := startSite(t, "127.0.0.1"), startSite(t, "127.0.0.2")
	zone := strings.Replace(wwwZone(primary, secondary), "    scrape_interval: 200ms\n", "    scrape_interval: 200ms\n    failover_target: 5s\n", 1)
	zone = strings.Replace(zone, "        fall: 1\n", "        fall: 2\n", 1)
	dir, api, metrics := t.TempDir(), testutil.FreePort(t), testutil.FreePort(t)
	if err := os.WriteFile(filepath.Join(dir, "zone.yml"), []byte(zone), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := testutil.Start(t, dir, func(port int) string {
		return fmt.Sprintf(".:%d {\n bind 127.0.0.1\n prometheus 127.0.0.1:%d\n gslb {\n  zone example.org. %s\n  api_enable\n  api_listen_port %d\n  api_overrides_file %s\n }\n}\n",
			port, metrics, filepath.Join(dir, "zone.yml"), api, filepath.Join(dir, "overrides.json"))
	})
	s := &apiServer{Server: srv, url: fmt.Sprintf("http://127.0.0.1:%d", api)}
	s.client = &admin.Client{BaseURL: s.url, HTTP: &http.Client{Timeout: 5 * time.Second}}
	s.waitState(t, primaryKey, admin.StateUp)
	s.waitState(t, secondaryKey, admin.StateUp)

	primary.fail()
	s.waitAnswer(t, "127.0.0.2")

	var tl admin.Timeline
	testutil.Eventually(t, 10*time.Second, func() bool {
		code, body := admintest.Call(t, http.DefaultClient, "GET", s.url+"/api/v1/timelines?record=www.example.org", "")
		var ts []admin.Timeline
		if code != 200 || json.Unmarshal([]byte(body), &ts) != nil {
			t.Fatalf("GET /api/v1/timelines: %d %s", code, body)
		}
		for _, x := range ts {
			if x.Key == primaryKey && x.To == admin.StateDown && x.Answered != nil {
				tl = x
				return true
			}
		}
		return false
	}, "no answered timeline of the primary's failure")
	if tl.From != admin.StateUp || tl.Swapped == nil || tl.Changed.Before(tl.Detected) || tl.Swapped.Before(tl.Changed) || tl.Answered.Before(*tl.Swapped) {
		t.Errorf("steps out of order: %+v", tl)
	}
	// fall 2 at 200 ms: the second failed probe comes about an interval after the first began.
	if m := time.Duration(tl.Measured); m < 150*time.Millisecond || m > 5*time.Second || tl.Target != admin.Millis(5*time.Second) {
		t.Errorf("measured %v, target %v", m, time.Duration(tl.Target))
	}
	if d := tl.Changed.Sub(tl.Detected); d < 150*time.Millisecond {
		t.Errorf("changed %v after the first failed probe began, want about one interval", d)
	}

	code, body := admintest.Call(t, http.DefaultClient, "GET", s.url+"/api/v1/timelines?limit=0", "")
	if code != http.StatusBadRequest {
		t.Errorf("limit=0: %d %s", code, body)
	}
	// The dashboard draws it under the record, in headless Chromium.
	b := admintest.NewBrowser(t)
	b.Do(chromedp.Navigate(s.url + "/"))
	bar := fmt.Sprintf(`tr.record[data-record="www.example.org."] details[data-field="failovers"] g.failover[data-key=%q][data-to="down"]`, primaryKey)
	b.WaitFor(15*time.Second, func() bool { return b.Count(bar+" rect.fo-answer") == 1 },
		func() string { return fmt.Sprintf("no failover bar: %d", b.Count(bar)) })
	if got := b.Eval(fmt.Sprintf(`document.querySelector(%q).dataset.measuredMs`, bar)); got == "" || got == "0" {
		t.Errorf("the bar's measured time is %q", got)
	}
	summary := b.Eval(`document.querySelector('tr.record[data-record="www.example.org."] details[data-field="failovers"] summary').textContent`)
	if !strings.Contains(summary, "target 5 s") || !strings.Contains(summary, "the latest took") {
		t.Errorf("summary %q", summary)
	}

	page := string(metricsPage(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics)))
	for _, series := range []string{
		`coredns_gslb_failover_seconds_count{record="www.example.org.",to="down"} 1`,
		`coredns_gslb_failover_target_seconds{record="www.example.org."} 5`,
	} {
		if !strings.Contains(page, series) {
			t.Errorf("no %s in the metrics:\n%s", series, grepLines(page, "failover"))
		}
	}
}
