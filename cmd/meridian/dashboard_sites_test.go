package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/meridian-gslb/meridian/internal/admin/admintest"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// siteCell returns the selector of a field of another site's row in the dashboard's Sites
// section: name, state, age, peer, silent or targets.
func siteCell(site, field string) string {
	return fmt.Sprintf(`#sites tr[data-site=%q] td[data-field=%q]`, site, field)
}

// TestDashboardSites: two sites on loopback, the same failover record with a backend in each.
// Site 2's dashboard shows the Sites section with s1 fresh (in the table and on the map) and
// the target it publishes, and
// s1's backend as a remote one of site s1; after SIGKILL of s1's process it shows s1 stale,
// silent, its backend stale and the record failing over; then, site 2's own backend dead too,
// the record degraded.
func TestDashboardSites(t *testing.T) {
	t.Parallel()
	b := admintest.NewBrowser(t)
	backends := []string{"127.0.6.1", "127.0.6.2"}
	procs := startSites(t, siteSetup{names: []string{"s1", "s2"}, backends: backends, yaml: failoverSites(backends)})
	s2 := procs[1]
	remoteKey := "app.gslb.example.com.|" + backends[0] + "|0"
	ownKey := "app.gslb.example.com.|" + backends[1] + "|0"
	record := `tr.record[data-record="app.gslb.example.com."]`

	b.Do(chromedp.Navigate(fmt.Sprintf("http://127.0.0.1:%d/", s2.api)))
	b.Do(chromedp.WaitVisible(chromedp.CSS("#sites")))
	if n := b.Count("#sites:not([hidden])"); n != 1 {
		t.Errorf("the Sites section is hidden on a site's dashboard")
	}
	b.WaitText(siteCell("s1", "state"), "fresh", 10*time.Second)
	b.WaitText(siteCell("s1", "targets"), "app.gslb.example.com. "+backends[0], 5*time.Second)
	// The map of the sites: s2 in the middle, s1 fresh, joined by a solid line.
	sitemap := `#sites svg.sitemap g.site[data-site=%q][data-state=%q]`
	if b.Count(fmt.Sprintf(sitemap, "s2", "self")) != 1 || b.Count(fmt.Sprintf(sitemap, "s1", "fresh")+" line.link-fresh") != 1 {
		t.Errorf("the sites map: %s", b.Eval(`(document.querySelector("#sites svg.sitemap") || {outerHTML: "none"}).outerHTML`))
	}
	peer := fmt.Sprintf(`#sites tr[data-peer="127.0.0.1:%d"] td[data-field=%%q]`, procs[0].port)
	for _, c := range []struct{ sel, want string }{
		{`#sites [data-field="self"]`, "s2"},
		{`#sites [data-field="seq"]`, "seq "},
		{siteCell("s1", "peer"), fmt.Sprintf("127.0.0.1:%d", procs[0].port)},
		{siteCell("s1", "age"), "s"},
		{fmt.Sprintf(peer, "site"), "s1"},
		{fmt.Sprintf(peer, "errors"), "none"},
		{fmt.Sprintf(peer, "targets"), "1"},
		{admintest.BackendCell(remoteKey, "site"), "s1"},
		{admintest.BackendCell(remoteKey, "site") + " .badge-remote", "remote"},
		{admintest.BackendCell(ownKey, "site"), "s2"},
		{admintest.BackendCell(remoteKey, "state"), "up"},
	} {
		if got := b.Text(c.sel); !strings.Contains(got, c.want) {
			t.Errorf("%s shows %q, want %q", c.sel, got, c.want)
		}
	}
	if got := b.Text(siteCell("s1", "silent")); got != "" {
		t.Errorf("silent since of a fresh site shows %q", got)
	}
	if n := b.Count(admintest.BackendCell(ownKey, "site") + " .badge-remote"); n != 0 {
		t.Errorf("site 2's own backend is marked remote")
	}
	if n := b.Count(record + " .badge"); n != 0 {
		t.Errorf("the record shows %d badges while its best backend is served", n)
	}

	if err := procs[0].srv.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, siteThreshold+5*time.Second, func() bool { return b.Text(siteCell("s1", "state")) == "stale" },
		"the dashboard shows s1 %q after its process was killed, want stale", b.Text(siteCell("s1", "state")))
	if b.Count(fmt.Sprintf(sitemap, "s1", "stale")+" line.link-stale") != 1 {
		t.Errorf("the sites map does not show s1 stale: %s", b.Eval(`document.querySelector("#sites svg.sitemap").outerHTML`))
	}
	if got := b.Text(siteCell("s1", "silent")); !strings.HasSuffix(got, "s ago") {
		t.Errorf("silent since of the killed site shows %q", got)
	}
	testutil.Eventually(t, 5*time.Second, func() bool {
		return b.Count(admintest.BackendCell(remoteKey, "state")+".state-stale") == 1 && b.Text(record+` [data-field="failover"]`) == "failover"
	}, "s1's backend shows %q and the record %q, want stale and failover",
		b.Text(admintest.BackendCell(remoteKey, "state")), b.Text(record))
	if r := b.RepeatedBadges(); len(r) > 0 {
		t.Errorf("badges shown twice while failing over: %v", r)
	}

	// Site 2's own backend dies: the stale one is answered, the record is degraded.
	s2.backend.Close()
	testutil.Eventually(t, 5*time.Second, func() bool { return b.Text(record+` [data-field="degraded"]`) == "degraded" },
		"the record shows %q with every backend stale or down, want degraded", b.Text(record))
	if r := b.RepeatedBadges(); len(r) > 0 {
		t.Errorf("badges shown twice while degraded: %v", r)
	}
	b.WaitText("#summary", "1 stale", 5*time.Second)
}
