package health

import (
	"testing"
	"time"
)

// TestJobKeepsWhenItRunsNext checks the 8 bytes a job keeps its next run in: a run here alone
// keeps its distance from now on the monotonic clock, one of cluster mode its wall-clock time
// exactly (the fleet's cycles are aligned on it).
func TestJobKeepsWhenItRunsNext(t *testing.T) {
	now := time.Now()
	cycle := time.Unix(0, now.Add(time.Minute).Truncate(10*time.Second).UnixNano()) // no monotonic reading
	for _, tt := range []struct {
		name    string
		shared  bool
		next    time.Time
		wantIn  time.Duration // from now, on the clock due compares with
		wantSet time.Time     // the wall-clock time due returns exactly; zero: not checked
	}{
		{"alone, in 5s", false, now.Add(5 * time.Second), 5 * time.Second, time.Time{}},
		{"alone, overdue", false, now.Add(-time.Second), -time.Second, time.Time{}},
		{"alone, at a wall-clock time", false, cycle, cycle.Sub(now), time.Time{}},
		{"cluster mode, at a cycle", true, cycle, cycle.Sub(now), cycle},
	} {
		t.Run(tt.name, func(t *testing.T) {
			j := &job{}
			if tt.shared {
				j.shared = &sharedJob{}
			}
			j.setNext(tt.next, now)
			if got := j.due().Sub(now); (got - tt.wantIn).Abs() > time.Microsecond {
				t.Errorf("runs in %s, want %s", got, tt.wantIn)
			}
			if !tt.wantSet.IsZero() && j.due().UnixNano() != tt.wantSet.UnixNano() {
				t.Errorf("runs at %d, want exactly %d", j.due().UnixNano(), tt.wantSet.UnixNano())
			}
			if j.Due() != j.due() {
				t.Errorf("Due %s, due %s", j.Due(), j.due())
			}
		})
	}
}

// TestSyncKeepsTheStatesOfProbedBackends checks which health words a Sync forgets: those of
// keys neither probed nor in keep; a probed backend's stays even when keep leaves it out, so
// that State returns the word its backend writes.
func TestSyncKeepsTheStatesOfProbedBackends(t *testing.T) {
	probed := spec("probed", &scriptedProber{}, "probed-check", time.Hour)
	m := NewManager(Options{Log: testLog{}})
	kept, dropped, words := m.State("kept"), m.State("dropped"), m.State("probed")
	m.Sync([]Spec{probed}, map[string]bool{"kept": true}) // keep names neither "probed" nor "dropped"
	for _, tt := range []struct {
		key  string
		was  *State
		same bool
	}{
		{"kept", kept, true},
		{"probed", words, true},
		{"dropped", dropped, false},
	} {
		if got := m.State(tt.key); (got == tt.was) != tt.same {
			t.Errorf("State(%q) is the word from before the Sync: %v, want %v", tt.key, got == tt.was, tt.same)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if b := m.backendLocked("probed"); b == nil || b.state != words {
		t.Error("the probed backend does not write the word State returns")
	}
}
