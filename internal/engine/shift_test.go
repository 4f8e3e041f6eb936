package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/shift"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestShiftWeightsApplyAndSurviveARestart stores a shift at its last step: the engine serves
// its weights (the backends it moved off take no traffic), and so does a new engine of the same
// overrides file (a restart), until the shift is cancelled.
func TestShiftWeightsApplyAndSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "zone.yml")
	if err := os.WriteFile(file, []byte(`records:
  www.example.org.:
    mode: weighted
    backends: [{address: 192.0.2.1, site: a}, {address: 192.0.2.2, site: b}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := config.DefaultOptions()
	opts.Zones = []config.ZoneSource{{Origin: "example.org.", File: file}}
	opts = withAPI(t, opts, dir)
	served := func(e *Engine) []string {
		var out []string
		for _, b := range e.Snapshot().Records()[0].View().Healthy[catalog.IPv4] {
			out = append(out, b.Config.Address)
		}
		return out
	}
	e := open(t, NewRegistry(), newLoad(), opts)
	start(t, e)
	s := &shift.Shift{ID: "s1", Record: "www.example.org.", From: []string{"site:a"}, To: []string{"site:b"}, Steps: []float64{0.5, 1},
		Every: shift.Duration(time.Hour), State: shift.Completed, Step: 1, StepStarted: time.Now()}
	ch, err := s.Change()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.api.store.Apply(context.Background(), []overlay.Change{ch}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { got := served(e); return len(got) == 1 && got[0] == "192.0.2.2" },
		"served %v with the shift at 100%%", served(e))
	if w, ok := e.Snapshot().Records()[0].Backends[1].ShiftWeight(); !ok || w != 200 {
		t.Errorf("the to backend's weight is %d, %t", w, ok)
	}
	e.Stop()

	again := open(t, NewRegistry(), newLoad(), opts)
	start(t, again)
	if got := served(again); len(got) != 1 || got[0] != "192.0.2.2" {
		t.Fatalf("after a restart, served %v", got)
	}
	if err := again.api.store.Apply(context.Background(), []overlay.Change{{Key: s.Key(), Action: overlay.Clear}}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return len(served(again)) == 2 }, "served %v after the cancel", served(again))
	if _, ok := again.Snapshot().Records()[0].Backends[0].ShiftWeight(); ok {
		t.Error("a cancelled shift's weight stays")
	}
}
