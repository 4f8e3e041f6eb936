package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestRolesAndAuditAcrossTheCluster runs two instances in cluster mode with a credentials file:
// a read token may not drain, an operate token may, and both instances show who drained, from
// where and why; each instance's audit log (beside its overrides file) records the changes
// made through it, and meridian ctl prints them.
func TestRolesAndAuditAcrossTheCluster(t *testing.T) {
	t.Parallel()
	primary, secondary := startSite(t, "127.0.0.1"), startSite(t, "127.0.0.2")
	r := testutil.StartRedis(t)
	creds := filepath.Join(t.TempDir(), "credentials.yml")
	if err := os.WriteFile(creds, []byte(`credentials:
  - {name: grafana, role: read, token: read-secret}
  - {name: deploy, role: operate, token: operate-secret}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	zone := wwwZone(primary, secondary)
	dirs := []string{t.TempDir(), t.TempDir()}
	fleet := make([]*apiServer, 2)
	for i := range fleet {
		fleet[i] = startWithAPI(t, zone, filepath.Join(dirs[i], "overrides.json"), "redis_enable", "redis_addr "+r.Addr, "api_credentials "+creds)
		fleet[i].client.Token = "read-secret"
		fleet[i].waitState(t, primaryKey, admin.StateUp)
	}
	env := func(token string) []string {
		return []string{"MERIDIAN_API=" + fleet[0].url, "MERIDIAN_API_TOKEN=" + token}
	}

	out, err := ctlBinary(t, env("read-secret"), "drain", "-location", "dc-a", "-reason", "not allowed")
	if err == nil || !strings.Contains(out, "403") || !strings.Contains(out, "needs operate") {
		t.Fatalf("drain with a read token: %v\n%s", err, out)
	}
	if out, err := ctlBinary(t, env("operate-secret"), "drain", "-location", "dc-a", "-for", "1h", "-reason", "kernel upgrade"); err != nil {
		t.Fatalf("drain with an operate token: %v\n%s", err, out)
	}
	for i, s := range fleet {
		testutil.Eventually(t, 5*time.Second, func() bool {
			o := s.backend(t, primaryKey).Override
			return o != nil && o.Action == overlay.Drain && o.By == "deploy" && o.From == "127.0.0.1" && o.Reason == "kernel upgrade"
		}, "instance %d: override %+v", i, s.backend(t, primaryKey).Override)
	}
	if out, err := ctlBinary(t, env("operate-secret"), "whoami"); err != nil || !strings.Contains(out, "deploy") || !strings.Contains(out, "operate") {
		t.Errorf("whoami: %v\n%s", err, out)
	}

	// Instance 0's audit log has the refusal and the drain; instance 1's has nothing.
	lines := auditLines(t, filepath.Join(dirs[0], "audit.log"))
	if len(lines) != 2 || lines[0].Who != "grafana" || lines[0].Status != http.StatusForbidden ||
		lines[1].Who != "deploy" || lines[1].Action != "drain" || lines[1].Reason != "kernel upgrade" || len(lines[1].Backends) != 1 || lines[1].From != "127.0.0.1" {
		t.Errorf("instance 0's audit log: %+v", lines)
	}
	if lines := auditLines(t, filepath.Join(dirs[1], "audit.log")); len(lines) != 0 {
		t.Errorf("instance 1's audit log: %+v", lines)
	}
	out, err = ctlBinary(t, env("operate-secret"), "audit")
	if err != nil || !strings.Contains(out, "kernel upgrade") || !strings.Contains(out, "grafana") {
		t.Errorf("ctl audit: %v\n%s", err, out)
	}
	if _, err := fleet[0].client.Audit(context.Background(), 10); err == nil {
		t.Error("a read token reads the audit log")
	}
}

// auditLines reads an audit log file; a missing file has no lines.
func auditLines(t *testing.T, path string) []admin.AuditEntry {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []admin.AuditEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e admin.AuditEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %q: %v", path, sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}
