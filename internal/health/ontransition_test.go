package health

import (
	"slices"
	"testing"
)

// TestOnTransitionSeesEveryChange checks that Options.OnTransition gets each status change of a
// backend, in order, with its backend's names and reason, and nothing when the status stays.
func TestOnTransitionSeesEveryChange(t *testing.T) {
	var got []Transition
	m := NewManager(Options{Log: testLog{}, OnTransition: func(tr Transition) { got = append(got, tr) }})
	m.Sync([]Spec{{Key: "ext", Record: "www.example.org.", Backend: "192.0.2.1", External: true}}, map[string]bool{"ext": true})
	for _, st := range []Status{Up, Up, Down, Up} {
		m.Report("ext", st, "site b")
	}
	want := []Transition{{From: Unknown, To: Up}, {From: Up, To: Down}, {From: Down, To: Up}}
	if len(got) != len(want) {
		t.Fatalf("%d transitions, want %d: %+v", len(got), len(want), got)
	}
	for i, tr := range got {
		if tr.From != want[i].From || tr.To != want[i].To || tr.Key != "ext" || tr.Record != "www.example.org." ||
			tr.Backend != "192.0.2.1" || tr.Reason != "site b" || tr.Time.IsZero() {
			t.Errorf("transition %d: %+v, want %s to %s of ext", i, tr, want[i].From, want[i].To)
		}
	}
	if history := m.Transitions(10); !slices.EqualFunc(history, []Transition{got[2], got[1], got[0]}, func(a, b Transition) bool { return a == b }) {
		t.Errorf("the history %+v differs from what OnTransition got", history)
	}
}
