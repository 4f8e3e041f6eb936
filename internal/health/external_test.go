package health

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestReportSetsExternalBackends feeds an external backend's status through Report: it changes
// the state word, calls OnChange once per change, records the transition with who judged it,
// keeps the status across a Sync with the same spec, and is refused for backends that are not
// external.
func TestReportSetsExternalBackends(t *testing.T) {
	m := NewManager(Options{Log: testLog{}})
	var changes atomic.Int32
	ext := Spec{Key: "ext", Record: "www.example.org.", Backend: "192.0.2.1", External: true, OnChange: func() { changes.Add(1) }}
	probed := spec("probed", &scriptedProber{script: []bool{true}}, "c1", 0)
	specs := []Spec{ext, probed}
	m.Sync(specs, map[string]bool{"ext": true, "probed": true})

	steps := []struct {
		key     string
		status  Status
		ok      bool
		want    Status
		changes int32
	}{
		{"ext", Up, true, Up, 1},
		{"ext", Up, true, Up, 1}, // no change, no call
		{"ext", Stale, true, Stale, 2},
		{"ext", Down, true, Down, 3},
		{"probed", Up, false, Down, 3}, // a probed backend is not reported to
		{"nobody", Up, false, Down, 3},
	}
	for i, s := range steps {
		if got := m.Report(s.key, s.status, "test"); got != s.ok {
			t.Fatalf("step %d: Report(%s) = %v, want %v", i, s.key, got, s.ok)
		}
		if got := m.State("ext").Status(); got != s.want {
			t.Fatalf("step %d: ext is %s, want %s", i, got, s.want)
		}
		if got := changes.Load(); got != s.changes {
			t.Fatalf("step %d: OnChange ran %d times, want %d", i, got, s.changes)
		}
	}
	last := m.Transitions(1)
	if len(last) != 1 || last[0].To != Down || last[0].Reason != "test" {
		t.Fatalf("last transition = %+v", last)
	}
	m.Sync(specs, map[string]bool{"ext": true, "probed": true})
	if got := m.State("ext").Status(); got != Down {
		t.Fatalf("after a Sync with the same spec ext is %s, want down", got)
	}
	if d := m.Details()["ext"]; d.Status != Down || d.Reason != "test" {
		t.Fatalf("details = %+v", d)
	}
}

// TestExternalBackendsAreSeeded starts external backends at their seeded status, stale
// included; a probed backend is never seeded stale (only another site's can be).
func TestExternalBackendsAreSeeded(t *testing.T) {
	m := NewManager(Options{Log: testLog{}, Seed: map[string]Status{"ext": Up, "gone": Stale, "probed": Stale}})
	m.Sync([]Spec{{Key: "ext", External: true}, {Key: "gone", External: true}, spec("probed", &scriptedProber{}, "c", time.Hour)},
		map[string]bool{"ext": true, "gone": true, "probed": true})
	for key, want := range map[string]Status{"ext": Up, "gone": Stale, "probed": Unknown} {
		if got := m.State(key).Status(); got != want {
			t.Errorf("%s starts %s, want %s", key, got, want)
		}
	}
}
