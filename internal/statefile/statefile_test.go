package statefile

import (
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/health/probe"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

type nopLog struct{}

func (nopLog) Infof(string, ...any)    {}
func (nopLog) Warningf(string, ...any) {}

// manager returns a real health manager, started, whose backends are probed into states with
// tcp checks on loopback (up: a listener; down: a closed port; unknown: not probed), once every
// up or down backend has its result.
func manager(t *testing.T, states map[string]health.Status) *health.Manager {
	t.Helper()
	up := testutil.ServeTCP(t, "127.0.0.1:0", func(net.Conn) {}).Addr().(*net.TCPAddr).Port
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	m := health.NewManager(health.Options{Log: nopLog{}})
	var specs []health.Spec
	keep := map[string]bool{}
	for key, st := range states {
		keep[key] = true
		if st == health.Unknown {
			continue
		}
		port := up
		if st == health.Down {
			port = down
		}
		c, err := probe.Compile(config.HealthCheck{Type: "tcp", Params: config.NewParams(map[string]any{"port": port})},
			probe.Target{Host: "127.0.0.1", IP: netip.MustParseAddr("127.0.0.1")}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		record, _, _ := strings.Cut(key, "|")
		specs = append(specs, health.Spec{Key: key, Record: record, Backend: key, Rise: 1, Fall: 1, Interval: time.Hour,
			Checks: []*probe.Compiled{c}})
	}
	m.Sync(specs, keep)
	m.Start()
	t.Cleanup(m.Stop)
	testutil.Eventually(t, 5*time.Second, func() bool {
		for key, st := range states {
			if m.State(key).Status() != st {
				return false
			}
		}
		return true
	}, "the probes did not settle")
	return m
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	states := map[string]health.Status{
		"www.example.org.|192.0.2.1|0":  health.Up,
		"www.example.org.|192.0.2.2|80": health.Down,
		"www.example.org.|192.0.2.3|0":  health.Unknown,
	}
	now := time.Now()
	if err := Write(path, Take(now, nil, manager(t, states))); err != nil {
		t.Fatal(err)
	}
	l, err := Read(path, time.Minute, now.Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	delete(states, "www.example.org.|192.0.2.3|0") // unknown is not written
	if !maps.Equal(l.States, states) || l.Format != "meridian" || !l.WrittenAt.Equal(now) {
		t.Errorf("read %+v, want %v written at %s", l, states, now)
	}
	var f File
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if e := f.Backends["www.example.org.|192.0.2.2|80"]; e.Record != "www.example.org." || e.Status != "down" || f.Version != Version {
		t.Errorf("file names the backend as %+v (version %d)", e, f.Version)
	}
}

// TestTakeLaterSourceWins: during a reload two managers are sources; the newer one's states
// win on the keys both hold.
func TestTakeLaterSourceWins(t *testing.T) {
	old := manager(t, map[string]health.Status{"a|1|0": health.Up, "b|1|0": health.Down})
	cur := manager(t, map[string]health.Status{"a|1|0": health.Down})
	f := Take(time.Now(), nil, old, cur)
	if f.Backends["a|1|0"].Status != "down" || f.Backends["b|1|0"].Status != "down" || len(f.Backends) != 2 {
		t.Errorf("took %+v", f.Backends)
	}
}

// TestWriteReplacesAtomically: a second write replaces the first, and nothing else is left in
// the directory.
func TestWriteReplacesAtomically(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, st := range []health.Status{health.Up, health.Down} {
		if err := Write(path, Take(time.Now(), nil, manager(t, map[string]health.Status{"a|1|0": st}))); err != nil {
			t.Fatal(err)
		}
		l, err := Read(path, time.Minute, time.Now())
		if err != nil || l.States["a|1|0"] != st {
			t.Fatalf("read %+v (%v), want a at %s", l, err, st)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %v, want the state file alone", entries)
	}
}

// TestRestoredStatuses: what the sources were seeded with is written with the time it was
// known, until a probe answers: for a backend still at its restored status, and for keys no
// source holds (a start that failed before its configuration loaded must not wipe the file).
// Read drops such a status once it is older than the maximum age, however fresh the file, so
// that restarts quicker than the probes cannot keep an old status alive. A probed result wins
// over what was restored.
func TestRestoredStatuses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	now := time.Now()
	restored := newLoaded(now.Add(-5*time.Second), "meridian")
	restored.add("old|1|0", health.Down, now.Add(-50*time.Second))
	restored.add("recent|1|0", health.Up, time.Time{})
	restored.add("probed|1|0", health.Up, time.Time{})
	unprobed := health.NewManager(health.Options{Log: nopLog{}, Seed: map[string]health.Status{"recent|1|0": health.Up}})
	unprobed.Sync([]health.Spec{{Key: "recent|1|0", Record: "recent", Backend: "1", Rise: 1, Fall: 1, Interval: time.Hour,
		Checks: []*probe.Compiled{{Type: "tcp", Key: "never run", Timeout: time.Second}}}}, map[string]bool{"recent|1|0": true})
	if err := Write(path, Take(now, restored, unprobed, manager(t, map[string]health.Status{"probed|1|0": health.Down}))); err != nil {
		t.Fatal(err)
	}
	l, err := Read(path, time.Minute, now.Add(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]health.Status{"recent|1|0": health.Up, "probed|1|0": health.Down}; !maps.Equal(l.States, want) {
		t.Errorf("states %v, want %v", l.States, want)
	}
	if at := l.AsOf["recent|1|0"]; !at.Equal(restored.WrittenAt) {
		t.Errorf("the restored status is known as of %s, want %s", at, restored.WrittenAt)
	}
	var f File
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if e := f.Backends["recent|1|0"]; e.Record != "recent" || e.Backend != "1" {
		t.Errorf("a restored backend is written as %+v, without its names", e)
	}
}

func TestReadRefuses(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	good := func(at time.Time) string {
		return `{"version": 1, "written_at": "` + at.UTC().Format(time.RFC3339Nano) + `", "backends": {"a|1|0": {"status": "up"}}}`
	}
	tests := []struct {
		name, content string
		want          string // in the error
	}{
		{"older than the maximum age", good(now.Add(-2 * time.Minute)), "older than state_max_age 1m0s: not used"},
		{"not JSON", `{"version": 1, "backends": `, "is corrupt"},
		{"truncated to nothing", ``, "is corrupt"},
		{"a newer version", `{"version": 2, "written_at": "2026-01-01T00:00:00Z"}`, "version 2 is not 1"},
		{"no write time", `{"version": 1, "backends": {}}`, "written_at is missing"},
		{"an entry that is not an object", `{"version": 1, "written_at": "2026-01-01T00:00:00Z", "backends": {"a|1|0": 3}}`, "is corrupt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Read(path, time.Minute, now)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %v, want one naming %s and containing %q", err, path, tt.want)
			}
		})
	}
	var stale *StaleError
	if _, err := Read(filepath.Join(dir, "older-than-the-maximum-age"), time.Minute, now); !errors.As(err, &stale) {
		t.Errorf("a stale file's error %v is not a *StaleError", err)
	}
	if _, err := Read(filepath.Join(dir, "missing"), time.Minute, now); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file's error %v is not fs.ErrNotExist", err)
	}
}

// TestReadSkipsWhatItDoesNotKnow: statuses other than up, down and stale are skipped; keys of
// backends that are not configured are returned (the manager ignores them).
func TestReadSkipsWhatItDoesNotKnow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	content := `{"version": 1, "written_at": "` + time.Now().UTC().Format(time.RFC3339) + `", "future_field": true,
		"backends": {"a|1|0": {"status": "draining"}, "gone.example.|9.9.9.9|0": {"status": "down"}, "remote|2|0": {"status": "stale"}}}`
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Read(path, time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]health.Status{"gone.example.|9.9.9.9|0": health.Down, "remote|2|0": health.Stale}; !maps.Equal(l.States, want) {
		t.Errorf("states %v, want %v", l.States, want)
	}
}

// TestReadCoreDNSGSLBFile reads the file CoreDNS-GSLB writes: its keys get port 0 and
// canonical addresses and names, never-checked backends are skipped, and its age is the file's.
func TestReadCoreDNSGSLBFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	content := `{
  "webapp.example.com.|172.16.0.10": {"status": "healthy", "last_check": "2026-07-07T09:00:00Z", "last_resolution": "2026-07-07T08:58:30Z"},
  "webapp.example.com.|2001:DB8::0:1": {"status": "unhealthy", "last_check": "2026-07-07T09:00:05Z", "last_resolution": "2026-07-07T08:50:00Z"},
  "WebApp.example.com|Site-B.example.net": {"status": "healthy", "last_check": "2026-07-07T09:00:05Z", "last_resolution": "2026-07-07T08:50:00Z"},
  "webapp.example.com.|172.16.0.12": {"status": "unhealthy", "last_check": "0001-01-01T00:00:00Z", "last_resolution": "0001-01-01T00:00:00Z"}
}`
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	mtime := time.Now().Add(-10 * time.Second)
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	l, err := Read(path, time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]health.Status{"webapp.example.com.|172.16.0.10|0": health.Up, "webapp.example.com.|2001:db8::1|0": health.Down,
		"webapp.example.com.|site-b.example.net.|0": health.Up}
	if !maps.Equal(l.States, want) || l.Format != "coredns-gslb" || !l.WrittenAt.Equal(mtime) {
		t.Errorf("read %+v, want %v written at %s", l, want, mtime)
	}
	if _, err := Read(path, 5*time.Second, time.Now()); err == nil {
		t.Error("a CoreDNS-GSLB file older than the maximum age was used")
	}
}

// TestWriterWritesPeriodicallyAndLast: once started the writer writes every interval; removing
// a source that is not the last keeps it going; removing the last writes that source's state
// once more and stops.
func TestWriterWritesPeriodicallyAndLast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	w := NewWriter(path, 20*time.Millisecond, nopLog{})
	old := manager(t, map[string]health.Status{"a|1|0": health.Up})
	w.Add(old)
	w.Start()
	w.Start()
	read := func() map[string]health.Status {
		l, err := Read(path, time.Minute, time.Now())
		if err != nil {
			return nil
		}
		return l.States
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return read()["a|1|0"] == health.Up }, "no periodic write: %v", read())
	// The gauge is set once the file is in place: a reader may see the file first.
	testutil.Eventually(t, 5*time.Second, func() bool { return promtest.ToFloat64(lastWrite) > 0 }, "no successful write counted")
	if at := promtest.ToFloat64(lastWrite); time.Since(time.Unix(int64(at), 0)) > time.Minute {
		t.Errorf("last successful write at %v, want about now", at)
	}

	cur := manager(t, map[string]health.Status{"b|1|0": health.Down})
	w.Add(cur)
	if w.Remove(old) {
		t.Fatal("removing one of two sources ended the writer")
	}
	testutil.Eventually(t, 5*time.Second, func() bool { _, hasOld := read()["a|1|0"]; return !hasOld && read()["b|1|0"] == health.Down },
		"the writer does not follow its remaining source: %v", read())

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if !w.Remove(cur) {
		t.Fatal("removing the last source did not end the writer")
	}
	if got := read(); got["b|1|0"] != health.Down {
		t.Errorf("no last write on removing the last source: %v", got)
	}
	if w.stop != nil || len(w.sources) != 0 {
		t.Error("the writer's loop still runs after its last source left")
	}
}

// TestWriterReportsFailures: a path that cannot be written fails the write, which is returned
// and leaves the loop running.
func TestWriterReportsFailures(t *testing.T) {
	dir := t.TempDir() // a directory: never replaceable by a file
	w := NewWriter(dir, time.Hour, nopLog{})
	w.Add(manager(t, map[string]health.Status{"a|1|0": health.Up}))
	before := promtest.ToFloat64(writesTotal.WithLabelValues("failure"))
	if err := w.Write(); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("error %v, want one naming %s", err, dir)
	}
	if n := promtest.ToFloat64(writesTotal.WithLabelValues("failure")) - before; n != 1 {
		t.Errorf("%v failed writes counted, want 1", n)
	}
}
