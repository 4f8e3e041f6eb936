package admin

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/overlay"
)

// readAuditFile returns the entries of an audit log file, in order.
func readAuditFile(t *testing.T, path string) []AuditEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []AuditEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e AuditEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: line %q: %v", path, sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

func TestAuditLogRecordsEveryChange(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sub", "audit.log")
	p := exampleProvider()
	p.reloadErr = errors.New("zone file broken")
	store := overlay.NewMemory(overlay.SystemClock{})
	_, base := startServer(t, Config{CredentialsFile: writeCredentials(t), AuditFile: file}, store, p)
	operate, read := []string{"Authorization", "Bearer deploy-token"}, []string{"Authorization", "Bearer grafana-token"}
	admin := []string{"Authorization", basic("alice", "alice-pass")}
	steps := []struct {
		method, path, body string
		auth               []string
		want               AuditEntry
	}{
		{"POST", "/api/v1/backends/drain", `{"location":"dc-us","reason":"maintenance","duration":"1h"}`, operate,
			AuditEntry{Who: "deploy", Auth: "token", Role: RoleOperate, Action: "drain", Selector: "location=dc-us", Reason: "maintenance",
				Backends: []string{"www.example.org.|10.2.0.1|0", "www.example.org.|2001:db8::1|0"}, Status: 200}},
		{"POST", "/api/v1/backends/disable", `{"location":"dc-eu"}`, read,
			AuditEntry{Who: "grafana", Auth: "token", Role: RoleRead, Action: "disable", Status: 403,
				Error: "forbidden: token grafana has the role read, and this needs operate"}},
		{"POST", "/api/v1/backends/drain", `{"location":"nowhere"}`, operate,
			AuditEntry{Who: "deploy", Auth: "token", Role: RoleOperate, Action: "drain", Selector: "location=nowhere", Status: 422,
				Error: "no backend matches location=nowhere"}},
		{"POST", "/api/backends/enable", `{"location":"dc-us"}`, admin,
			AuditEntry{Who: "alice", Auth: "basic", Role: RoleAdmin, Action: "enable", Selector: "location=dc-us",
				Backends: []string{"www.example.org.|10.2.0.1|0", "www.example.org.|2001:db8::1|0"}, Status: 200}},
		{"POST", "/api/v1/reload", `{}`, admin,
			AuditEntry{Who: "alice", Auth: "basic", Role: RoleAdmin, Action: "reload", Status: 422,
				Error: "1 of 1 gslb blocks did not reload, and serve their previous configuration"}},
	}
	for _, s := range steps {
		call(t, s.method, base+s.path, s.body, s.auth...)
	}
	// Reading changes nothing, and is not recorded.
	call(t, "GET", base+"/api/v1/zones", "", read...)

	entries := readAuditFile(t, file)
	if len(entries) != len(steps) {
		t.Fatalf("%d entries in the file, want %d: %+v", len(entries), len(steps), entries)
	}
	for i, s := range steps {
		got := entries[i]
		if got.Time.IsZero() || time.Since(got.Time) > time.Minute || got.From != "127.0.0.1" || got.Request != s.method+" "+s.path {
			t.Errorf("entry %d: time %s, from %q, request %q", i, got.Time, got.From, got.Request)
		}
		if i == 0 && (got.Expires.Sub(got.Time) < 59*time.Minute || got.Expires.Sub(got.Time) > time.Hour+time.Second) {
			t.Errorf("entry 0 expires %s", got.Expires)
		}
		got.Time, got.From, got.Request, got.Expires = time.Time{}, "", "", time.Time{}
		if gj, wj := asJSON(got), asJSON(s.want); gj != wj {
			t.Errorf("entry %d:\n got %s\nwant %s", i, gj, wj)
		}
	}

	// The API returns them newest first; a limit takes the newest.
	code, body := call(t, "GET", base+"/api/v1/audit?limit=2", "", operate...)
	ans := decode[AuditAnswer](t, body)
	if code != 200 || ans.File != file || len(ans.Entries) != 2 || ans.Entries[0].Action != "reload" || ans.Entries[1].Action != "enable" {
		t.Errorf("GET audit: %d %s", code, body)
	}
	if code, _ := call(t, "GET", base+"/api/v1/audit?limit=0", "", operate...); code != 400 {
		t.Errorf("limit 0: %d", code)
	}
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestAuditLogRotatesAndReopens(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "audit.log")
	a, err := OpenAuditLog(file, 600, 2)
	if err != nil {
		t.Fatal(err)
	}
	entry := func(i int) AuditEntry {
		return AuditEntry{Time: time.Unix(int64(i), 0).UTC(), Who: "ops", Action: "drain", Reason: strings.Repeat("x", 100), Status: 200}
	}
	for i := range 12 {
		if err := a.Write(entry(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// About three entries a file: the current file and two rotated ones hold the newest, the
	// oldest are gone; no file is bigger than the limit, and every line is whole.
	var seen []int64
	for _, name := range []string{"audit.log.2", "audit.log.1", "audit.log"} {
		path := filepath.Join(dir, name)
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > 600 || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: %d bytes, mode %s", name, info.Size(), info.Mode())
		}
		for _, e := range readAuditFile(t, path) {
			seen = append(seen, e.Time.Unix())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "audit.log.3")); err == nil {
		t.Error("audit.log.3 kept")
	}
	if len(seen) < 6 || seen[len(seen)-1] != 11 {
		t.Fatalf("entries kept: %v", seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] != seen[i-1]+1 {
			t.Fatalf("entries kept out of order or with a gap: %v", seen)
		}
	}

	// Opened again (a restart), the log knows its latest entries and appends after them.
	b, err := OpenAuditLog(file, 600, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	recent := b.Recent(10)
	if len(recent) == 0 || recent[0].Time.Unix() != 11 {
		t.Fatalf("recent after reopening: %+v", recent)
	}
	if err := b.Write(entry(12)); err != nil {
		t.Fatal(err)
	}
	if r := b.Recent(1); len(r) != 1 || r[0].Time.Unix() != 12 {
		t.Errorf("recent after a write: %+v", r)
	}
}

func TestAuditLogFailureIsReported(t *testing.T) {
	dir := t.TempDir()
	a, err := OpenAuditLog(filepath.Join(dir, "audit.log"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	if err := a.Write(AuditEntry{Action: "drain"}); err == nil {
		t.Error("a closed log wrote")
	}
	if r := a.Recent(5); len(r) != 1 {
		t.Errorf("the entry is not kept in memory: %+v", r)
	}
	// A directory that cannot be made refuses the log.
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o600)
	if _, err := OpenAuditLog(filepath.Join(blocker, "audit.log"), 0, 0); err == nil {
		t.Error("opened under a file")
	}
}
