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
// the same order, whether the caller takes them all or stops early.
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
				got := 0
				for spec := range specsAhead(ps.n, ps.specs()) {
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
