package engine

import (
	"fmt"
	"testing"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestSpecsAheadYieldsTheSpecsInOrder takes the specs of zones of a few backends (fewer than
// two batches: made on the caller's goroutine) and of several batches and a part of one (made
// ahead on another goroutine) through specsAhead: the same specs as the probe set's own, in
// the same order, whether the caller takes them all or stops early; those made ahead are
// prepared there, at most two batches beyond those taken.
func TestSpecsAheadYieldsTheSpecsInOrder(t *testing.T) {
	for _, records := range []int{10, 3*specBatch + 17} {
		for _, stopAt := range []int{-1, 0, specBatch - 1, specBatch, 2*specBatch + 5} {
			t.Run(fmt.Sprintf("%d records, stop at %d", records, stopAt), func(t *testing.T) {
				_, ps := compiledZone(t, records)
				var want []health.Spec
				for spec := range ps.specs() {
					want = append(want, *spec)
				}
				if len(want) != ps.n || ps.n != records {
					t.Fatalf("%d specs of %d backends, want %d", len(want), ps.n, records)
				}
				if stopAt < 0 || stopAt >= len(want) {
					stopAt = len(want)
				}
				got, prepared := 0, 0
				prepare := func(*health.Spec) { prepared++ } // on the goroutine that makes the specs
				for spec := range specsAhead(ps.n, ps.specs(), prepare) {
					if got == stopAt {
						break
					}
					if w := want[got]; spec.Key != w.Key || spec.Backend != w.Backend || spec.Record != w.Record ||
						len(spec.Checks) != len(w.Checks) || spec.Checks[0] != w.Checks[0] || spec.State != w.State {
						t.Fatalf("spec %d: %s %s of %s, want %s %s of %s", got, spec.Key, spec.Backend, spec.Record, w.Key, w.Backend, w.Record)
					}
					got++
				}
				if got != stopAt {
					t.Errorf("%d specs, want %d", got, stopAt)
				}
				// specsAhead has returned: its goroutine has ended.
				switch ahead := ps.n >= 2*specBatch; {
				case ahead && (prepared < got || prepared > got+2*specBatch):
					t.Errorf("%d specs prepared of %d taken, want every one taken and at most two batches more", prepared, got)
				case !ahead && prepared != 0:
					t.Errorf("%d specs prepared on the caller's goroutine, want none", prepared)
				}
			})
		}
	}
}

// compiledZone builds partsZone(records) with a health manager and compiles its checks, which
// are released when the test ends.
func compiledZone(t *testing.T, records int) (*health.Manager, *probeSet) {
	t.Helper()
	m := health.NewManager(health.Options{})
	snap, err := catalog.BuildUnviewed([]*config.Zone{testutil.ParseBenchZone(t, partsZone(records, false))}, m)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := compileProbes(snap)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ps.release)
	return m, ps
}

// TestFirstSyncPreparesTheBackendsAhead syncs a probe set of several batches into a manager
// that probes nothing yet, whose backends are then prepared on the goroutine that makes the
// specs while Sync takes them (the race detector watches both), and again, as a reload does:
// every backend is the manager's, unknown, once.
func TestFirstSyncPreparesTheBackendsAhead(t *testing.T) {
	m, ps := compiledZone(t, 3*specBatch+17)
	defer m.Stop()
	for round := range 2 {
		ps.sync(m)
		if n := m.Backends(); n != ps.n {
			t.Fatalf("sync %d: the manager probes %d backends, want %d", round, n, ps.n)
		}
		details := m.Details()
		for spec := range ps.specs() {
			if d, ok := details[spec.Key]; !ok || d.Status != health.Unknown || m.State(spec.Key) != spec.State {
				t.Fatalf("sync %d: %s is %+v (found %v), want unknown with the catalog's word", round, spec.Key, d, ok)
			}
		}
	}
}
