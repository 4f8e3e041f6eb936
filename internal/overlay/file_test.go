package overlay

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func openFile(t *testing.T, path string, clock Clock) *File {
	t.Helper()
	f, err := OpenFile(path, clock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestFilePersistsAcrossRestarts(t *testing.T) {
	clock := newFakeClock()
	path := filepath.Join(t.TempDir(), "state", "overrides.json") // the directory is created
	f := openFile(t, path, clock)
	if len(f.List()) != 0 || f.Path() != path {
		t.Fatalf("new file store: %v overrides at %s", f.List(), f.Path())
	}
	until := clock.Now().Add(time.Hour)
	mustApply(t, f,
		Change{Key: "www.example.org.|192.0.2.1|443", Action: Drain, Expires: until, Reason: "kernel upgrade", By: "bob"},
		Change{Key: "www.example.org.|192.0.2.2|443", Action: Disable},
	)
	f.Close()

	again := openFile(t, path, clock)
	got := again.List()
	if len(got) != 2 {
		t.Fatalf("after reopening: %+v", got)
	}
	if o := got[0]; o.Key != "www.example.org.|192.0.2.1|443" || o.Action != Drain || !o.Expires.Equal(until) ||
		o.Reason != "kernel upgrade" || o.By != "bob" || !o.Set.Equal(clock.Now()) {
		t.Fatalf("reopened drain = %+v", o)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want only the overrides file", len(entries))
	}

	// An override that expired while nothing ran is dropped at start, and its timer with it.
	clock.Advance(2 * time.Hour)
	third := openFile(t, path, clock)
	if got := keys(third.List()); len(got) != 1 || got[0] != "www.example.org.|192.0.2.2|443" {
		t.Fatalf("after the drain expired offline: %v", got)
	}
}

func TestFileCorrupt(t *testing.T) {
	for name, content := range map[string]string{
		"not json":       `{"version": 1, "overrides": [`,
		"empty":          ``,
		"unknown field":  `{"version": 1, "overrides": [], "extra": true}`,
		"other version":  `{"version": 2, "overrides": []}`,
		"no key":         `{"version": 1, "overrides": [{"action": "disable"}]}`,
		"unknown action": `{"version": 1, "overrides": [{"key": "a|192.0.2.1|0", "action": "clear"}]}`,
		"twice":          `{"version": 1, "overrides": [{"key": "a|192.0.2.1|0", "action": "disable"}, {"key": "a|192.0.2.1|0", "action": "enable"}]}`,
	} {
		path := filepath.Join(t.TempDir(), "overrides.json")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := OpenFile(path, newFakeClock())
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: err = %v, want an error naming %s", name, err, path)
		}
		if data, _ := os.ReadFile(path); string(data) != content {
			t.Errorf("%s: the corrupt file was changed", name)
		}
	}

	if _, err := OpenFile(t.TempDir(), newFakeClock()); err == nil {
		t.Error("a directory opened as the overrides file")
	}
}

func TestFileWriteFailureChangesNothing(t *testing.T) {
	clock := newFakeClock()
	path := filepath.Join(t.TempDir(), "overrides.json")
	f := openFile(t, path, clock)
	mustApply(t, f, Change{Key: "a|192.0.2.1|0", Action: Disable})
	notified := 0
	defer f.Subscribe(func() { notified++ })()

	// A directory in the file's place makes the rename fail, even for root.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(path, "blocker"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := f.Apply(context.Background(), []Change{{Key: "b|192.0.2.2|0", Action: Disable}, {Key: "a|192.0.2.1|0", Action: Clear}})
	if err == nil || errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Apply = %v, want a write error naming %s", err, path)
	}
	if got := keys(f.List()); len(got) != 1 || got[0] != "a|192.0.2.1|0" || notified != 0 {
		t.Fatalf("after a failed write: overrides %v, %d notifications", got, notified)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("a temporary file was left behind: %d entries", len(entries))
	}
}

func TestFileFormat(t *testing.T) {
	clock := newFakeClock()
	path := filepath.Join(t.TempDir(), "overrides.json")
	f := openFile(t, path, clock)
	mustApply(t, f, Change{Key: "a|192.0.2.1|0", Action: Enable})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	list, _ := doc["overrides"].([]any)
	if doc["version"] != 1.0 || len(list) != 1 {
		t.Fatalf("file = %s", data)
	}
	if o := list[0].(map[string]any); o["key"] != "a|192.0.2.1|0" || o["action"] != "enable" || o["expires"] != nil {
		t.Fatalf("override in the file = %v", o)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o644 {
		t.Fatalf("file mode %v", info.Mode())
	}
}
