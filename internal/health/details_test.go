package health

import (
	"strings"
	"testing"
	"time"
)

func TestDetailsAndTransitionsFollowResults(t *testing.T) {
	m := NewManager(Options{Log: testLog{}})
	p := &scriptedProber{script: []bool{true, false}}
	s := spec("a", p, "check-a", 20*time.Millisecond)
	m.Sync([]Spec{s}, keys(s))
	if d, ok := m.Details()["a"]; !ok || d.Status != Unknown || !d.LastCheck.IsZero() {
		t.Fatalf("details before any probe %+v, %v", d, ok)
	}
	m.Start()
	defer m.Stop()
	state := m.State("a")
	waitFor(t, "down", func() bool { return state.Status() == Down })

	d := m.Details()["a"]
	if d.Status != Down || d.LastOK || !strings.HasPrefix(d.Reason, "scripted failure") || d.LastCheck.IsZero() || d.LastChange.IsZero() {
		t.Fatalf("details %+v, want the failed result and its change", d)
	}
	if d.Latency <= 0 || d.Latency > time.Second {
		t.Fatalf("latency %s", d.Latency)
	}
	trs := m.Transitions(10)
	if len(trs) != 2 || trs[0].To != Down || trs[1].To != Up || trs[1].From != Unknown || trs[0].Key != "a" || !strings.HasPrefix(trs[0].Reason, "scripted failure") {
		t.Fatalf("transitions %+v, want down then up, newest first", trs)
	}
	if got := m.Transitions(1); len(got) != 1 || got[0].To != Down {
		t.Fatalf("the newest transition %+v", got)
	}
}

func TestTransitionRingKeepsTheNewest(t *testing.T) {
	var r transitions
	for i := range transitionHistory + 10 {
		r.add(Transition{Reason: string(rune('a' + i%26)), Key: strings.Repeat("x", i%3)})
	}
	all := r.newest(1000)
	if len(all) != transitionHistory {
		t.Fatalf("%d kept, want %d", len(all), transitionHistory)
	}
	last := transitionHistory + 9
	if all[0].Reason != string(rune('a'+last%26)) {
		t.Fatalf("newest is %q, want the last added", all[0].Reason)
	}
	if r.newest(0) == nil || len(r.newest(-1)) != 0 {
		t.Fatal("limits below one must give an empty list")
	}
}
