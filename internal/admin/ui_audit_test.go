package admin

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/meridian-gslb/meridian/internal/admin/admintest"
)

// TestDashboardRolesAndAudit signs in with a read token, which sees no action and no audit
// log, then with an operate token, which drains a backend from its row and finds the drain,
// with who made it, in the audit log.
func TestDashboardRolesAndAudit(t *testing.T) {
	b := admintest.NewBrowser(t)
	_, base := startServer(t, Config{CredentialsFile: writeCredentials(t)}, nil, exampleProvider())
	const key = "www.example.org.|10.1.0.2|0"
	signIn := func(token string) {
		b.Do(chromedp.Navigate(base + "/ui/"))
		b.Eval(`sessionStorage.clear() || ""`)
		b.Do(chromedp.Navigate(base + "/ui/"))
		b.Do(chromedp.WaitVisible(chromedp.CSS("#signin")))
		b.Do(chromedp.SetValue(chromedp.CSS("#signin-token"), token), chromedp.Click(chromedp.CSS(`#signin-form button`)))
		b.WaitText(admintest.BackendCell(key, "state"), "up", 10*time.Second)
	}

	signIn("grafana-token")
	b.WaitText("#whoami", "token grafana (read)", time.Second)
	if b.Eval(`getComputedStyle(document.querySelector("td.actions")).display`) != "none" {
		t.Errorf("the read role sees the action buttons")
	}
	if b.Eval(`getComputedStyle(document.querySelector("#bulk")).display`) != "none" {
		t.Errorf("the read role sees the bulk buttons")
	}
	b.WaitText("#audit-denied:not([hidden])", "needs the operate or admin role", time.Second)
	if n := b.Count("#audit-entries table"); n != 0 {
		t.Errorf("the read role sees the audit log")
	}

	signIn("deploy-token")
	b.WaitText("#whoami", "token deploy (operate)", time.Second)
	b.WaitText("#audit-entries", "no change yet", 5*time.Second)
	b.Do(chromedp.SetValue(chromedp.CSS("#reason"), "disk swap"), chromedp.Click(chromedp.CSS(admintest.BackendButton(key, "drain"))))
	b.WaitText(admintest.BackendCell(key, "override"), "drain", 10*time.Second)
	b.WaitText(`#audit-entries tr[data-action="drain"] td[data-field="who"]`, "deploy", 5*time.Second)
	b.WaitText(`#audit-entries tr[data-action="drain"] td[data-field="reason"]`, "disk swap", time.Second)
	b.WaitText(`#audit-entries tr[data-action="drain"] td[data-field="result"]`, "ok", time.Second)
	b.WaitText(`#audit-entries tr[data-action="drain"] td[data-field="from"]`, "127.0.0.1", time.Second)
}
