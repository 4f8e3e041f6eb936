package engine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/notify/notifytest"
	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// guardZone is www.example.org. with a drain guard of min_healthy 3 over the addresses.
func guardZone(addrs ...string) string {
	y := "records:\n  www.example.org.:\n    drain_guard: {min_healthy: 3}\n    backends:\n"
	for _, a := range addrs {
		y += "      - {address: " + a + "}\n"
	}
	return y
}

// TestScheduledDrainHeldAtItsStart schedules drains that break a record's guard when they
// start: the unforced one is held (its backend stays served, the hold is logged and sent to the
// webhooks, the API shows it) until a reload adds backends, and a forced one starts at once.
func TestScheduledDrainHeldAtItsStart(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "zone.yml")
	write := func(y string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(guardZone("192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"))
	hooks := notifytest.NewReceiver(t)
	opts := config.DefaultOptions()
	opts.Zones = []config.ZoneSource{{Origin: "example.org.", File: file}}
	opts = withAPI(t, opts, dir)
	opts.Webhooks.URLs = []string{hooks.URL}
	log := &testutil.Log{}
	e, err := NewRegistry().Open(newLoad(), opts, log)
	if err != nil {
		t.Fatal(err)
	}
	start(t, e)
	const one, two = "www.example.org.|192.0.2.1|0", "www.example.org.|192.0.2.2|0"
	served := func(key string) bool {
		for _, b := range e.Snapshot().Records()[0].View().Healthy[0] {
			if b.Key() == key {
				return true
			}
		}
		return false
	}
	ctx := context.Background()
	at := time.Now().Add(500 * time.Millisecond)
	if err := e.api.store.Apply(ctx, []overlay.Change{
		{Key: one, Action: overlay.Drain, Starts: at, Reason: "CHG-1"},
		{Key: two, Action: overlay.Drain, Starts: at, Reason: "CHG-2"},
	}); err != nil {
		t.Fatal(err)
	}
	// Two of four out leave two: both are held, as one would leave the record at its floor
	// and both below it.
	testutil.Eventually(t, 5*time.Second, func() bool { return len(e.Held()) == 2 }, "held %v\n%s", e.Held(), log)
	if !served(one) || !served(two) {
		t.Fatal("a held drain's backend is not served")
	}
	if h := e.Held()[one]; !strings.Contains(h, "drain_guard wants min_healthy 3") {
		t.Errorf("held because %q", h)
	}
	testutil.Eventually(t, 5*time.Second, func() bool {
		return len(hooks.Events("override")) > 0 && slices.ContainsFunc(hooks.Events("override"),
			func(r notifytest.Request) bool { return r.Event.Change == "held" && r.Event.Key == one })
	}, "no held event")
	if n := log.Count("drain of " + one + " held at its start"); n != 1 {
		t.Errorf("the hold is logged %d times, want once:\n%s", n, log)
	}
	status := func(key string) admin.Backend {
		for _, z := range e.Status() {
			for _, r := range z.Records {
				for _, b := range r.Backends {
					if b.Key == key {
						return b
					}
				}
			}
		}
		t.Fatalf("no backend %s", key)
		return admin.Backend{}
	}
	if b := status(one); b.Held == "" || !b.Healthy {
		t.Errorf("the API shows %+v", b)
	}

	// One more backend: one drain fits, not two; the guard holds both drains of the record.
	// A fifth: both start.
	write(guardZone("192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.5", "192.0.2.6"))
	if err := e.Reload(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return len(e.Held()) == 0 && !served(one) && !served(two) },
		"held %v after the reload\n%s", e.Held(), log)
	if log.Count("held drain of "+one+" starts") != 1 {
		t.Errorf("the release is not logged:\n%s", log)
	}

	// A forced drain starts at its time, guard or not.
	const three = "www.example.org.|192.0.2.3|0"
	if err := e.api.store.Apply(ctx, []overlay.Change{{Key: three, Action: overlay.Drain, Starts: time.Now().Add(300 * time.Millisecond),
		Forced: true, Reason: "CHG-3, the others are fine", Breaches: []string{"www.example.org. A"}}}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return !served(three) }, "the forced drain did not start")
	if len(e.Held()) != 0 {
		t.Errorf("a forced drain is held: %v", e.Held())
	}
}

// TestGuardJudgesChanges asks the engine what changes would break, as the API does.
func TestGuardJudgesChanges(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "zone.yml")
	if err := os.WriteFile(file, []byte(guardZone("192.0.2.1", "192.0.2.2", "192.0.2.3")), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := config.DefaultOptions()
	opts.Zones = []config.ZoneSource{{Origin: "example.org.", File: file}}
	e := open(t, NewRegistry(), newLoad(), opts)
	defer e.Stop()
	for _, tc := range []struct {
		action overlay.Action
		want   int
	}{{overlay.Drain, 1}, {overlay.Disable, 1}, {overlay.Enable, 0}, {overlay.ForceUp, 0}, {overlay.Clear, 0}} {
		got := e.Guard([]overlay.Change{{Key: "www.example.org.|192.0.2.1|0", Action: tc.action}, {Key: "other.example.org.|192.0.2.9|0", Action: tc.action}})
		if len(got) != tc.want {
			t.Errorf("%s: %v, want %d breaches", tc.action, got, tc.want)
		}
		for _, b := range got {
			if b.Record != "www.example.org." || b.Served != 2 || b.ServedBefore != 3 || b.Guard.MinHealthy != 3 || b.Text == "" {
				t.Errorf("%s: breach %+v", tc.action, b)
			}
		}
	}
}
