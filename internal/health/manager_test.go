package health

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/health/probe"
)

// scriptedProber is a test double for the probe seam: the scheduler is under test here, not a
// protocol. It returns the results of its script in turn (the last one repeating) and counts
// calls; a nil script blocks until the context ends.
type scriptedProber struct {
	mu     sync.Mutex
	script []bool
	calls  atomic.Int64
	closed atomic.Bool
	times  []time.Time
}

func (p *scriptedProber) Probe(ctx context.Context) probe.Result {
	n := p.calls.Add(1)
	p.mu.Lock()
	p.times = append(p.times, time.Now())
	script := p.script
	p.mu.Unlock()
	if script == nil {
		<-ctx.Done()
		return probe.Fail("timeout after %s", "test")
	}
	ok := script[min(int(n)-1, len(script)-1)]
	if ok {
		return probe.Pass("ok")
	}
	return probe.Fail("scripted failure %d", n)
}

// firstCall returns when the prober was first called.
func (p *scriptedProber) firstCall() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.times[0]
}

func (p *scriptedProber) Close() error { p.closed.Store(true); return nil }

type testLog struct{}

func (testLog) Infof(string, ...any)    {}
func (testLog) Warningf(string, ...any) {}

func spec(key string, p probe.Prober, checkKey string, interval time.Duration) Spec {
	return Spec{
		Key: key, Record: "www.example.org.", Backend: key,
		Checks: []*probe.Compiled{{Prober: p, Type: "test", Timeout: 200 * time.Millisecond, Key: checkKey}},
		Rise:   1, Fall: 1, Interval: interval,
	}
}

// jobOf returns m's job of identity k, nil when it has none.
func jobOf(m *Manager, k jobIdentity) *job {
	m.mu.Lock()
	defer m.mu.Unlock()
	for j := range m.queue.All() {
		if j.key() == k {
			return j
		}
	}
	return nil
}

func keys(specs ...Spec) map[string]bool {
	k := map[string]bool{}
	for _, s := range specs {
		k[s.Key] = true
	}
	return k
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestManagerTransitionsAndNotifies(t *testing.T) {
	m := NewManager(Options{Log: testLog{}})
	p := &scriptedProber{script: []bool{true, true, false, false, true}}
	var changes atomic.Int64
	s := spec("a", p, "check-a", 20*time.Millisecond)
	s.OnChange = func() { changes.Add(1) }
	m.Sync([]Spec{s}, keys(s))
	state := m.State("a")
	if state.Status() != Unknown {
		t.Fatalf("starts %s, want unknown", state.Status())
	}
	m.Start()
	defer m.Stop()
	waitFor(t, "up", func() bool { return state.Status() == Up })
	waitFor(t, "down", func() bool { return state.Status() == Down })
	waitFor(t, "up again", func() bool { return state.Status() == Up })
	if got := changes.Load(); got != 3 {
		t.Fatalf("OnChange called %d times, want 3 (up, down, up)", got)
	}
}

func TestIdenticalChecksRunOnce(t *testing.T) {
	m := NewManager(Options{Log: testLog{}})
	shared := &scriptedProber{script: []bool{true}}
	duplicate := &scriptedProber{script: []bool{true}}
	a := spec("a", shared, "same-check", 30*time.Millisecond)
	b := spec("b", duplicate, "same-check", 30*time.Millisecond)
	b.Record = "other.example.org."
	m.Sync([]Spec{a, b}, keys(a, b))
	m.Start()
	defer m.Stop()
	waitFor(t, "both up", func() bool { return m.State("a").Status() == Up && m.State("b").Status() == Up })
	time.Sleep(100 * time.Millisecond) // let several cycles pass: only one prober may run
	if duplicate.calls.Load() != 0 || !duplicate.closed.Load() {
		t.Fatalf("the duplicate check ran %d times (closed: %v); identical checks must share one probe", duplicate.calls.Load(), duplicate.closed.Load())
	}
	if n := shared.calls.Load(); n < 2 {
		t.Fatalf("the shared check ran %d times", n)
	}
}

func TestSyncKeepsChangesAndStops(t *testing.T) {
	m := NewManager(Options{Log: testLog{}})
	pa, pb := &scriptedProber{script: []bool{true}}, &scriptedProber{script: []bool{false}}
	a, b := spec("a", pa, "check-a", 20*time.Millisecond), spec("b", pb, "check-b", 20*time.Millisecond)
	m.Sync([]Spec{a, b}, keys(a, b))
	m.Start()
	defer m.Stop()
	waitFor(t, "a up, b down", func() bool { return m.State("a").Status() == Up && m.State("b").Status() == Down })

	// Reload: a unchanged (a new prober for the same check), b's check changed, c new.
	a2 := spec("a", &scriptedProber{script: []bool{false}}, "check-a", 20*time.Millisecond)
	pb2 := &scriptedProber{script: []bool{true}}
	b2 := spec("b", pb2, "check-b-changed", 20*time.Millisecond)
	m.Sync([]Spec{a2, b2}, keys(a2, b2))
	if st := m.State("a").Status(); st != Up {
		t.Fatalf("unchanged backend is %s after the reload, want up", st)
	}
	waitFor(t, "b up with its new check", func() bool { return m.State("b").Status() == Up })
	if !pb.closed.Load() {
		t.Fatal("the removed check was not closed")
	}
	before := pb.calls.Load()
	time.Sleep(60 * time.Millisecond)
	if pb.calls.Load() != before {
		t.Fatal("the removed check still runs")
	}

	m.Sync(nil, nil)
	if _, kept := m.states["a"]; kept {
		t.Fatal("the state of a removed backend is kept")
	}
}

func TestProbesAreBoundedByTheirTimeout(t *testing.T) {
	m := NewManager(Options{Log: testLog{}})
	p := &scriptedProber{} // blocks until its context ends
	s := spec("a", p, "hang", time.Hour)
	m.Sync([]Spec{s}, keys(s))
	m.Start()
	defer m.Stop()
	// The prober never returns by itself: only the check's timeout (200 ms) ends the probe,
	// which the backend's fall to down shows within waitFor's seconds on a loaded machine too.
	waitFor(t, "down", func() bool { return m.State("a").Status() == Down })
}

func TestRetriesWithinOneCycle(t *testing.T) {
	m := NewManager(Options{Log: testLog{}})
	p := &scriptedProber{script: []bool{false, false, true}}
	s := spec("a", p, "flaky", time.Hour)
	s.Retries = 2
	m.Sync([]Spec{s}, keys(s))
	m.Start()
	defer m.Stop()
	waitFor(t, "up", func() bool { return m.State("a").Status() == Up })
	if n := p.calls.Load(); n != 3 {
		t.Fatalf("%d attempts, want 3 (one and two retries)", n)
	}
}

func TestStartIsStaggeredInBatches(t *testing.T) {
	m := NewManager(Options{Log: testLog{}, MaxStaggerStart: 400 * time.Millisecond, BatchSizeStart: 2})
	var specs []Spec
	probers := make([]*scriptedProber, 6)
	for i := range probers {
		probers[i] = &scriptedProber{script: []bool{true}}
		specs = append(specs, spec(fmt.Sprint(i), probers[i], fmt.Sprint("check-", i), time.Hour))
	}
	m.Sync(specs, keys(specs...))
	start := time.Now()
	m.Start()
	defer m.Stop()
	waitFor(t, "every first probe", func() bool {
		for _, p := range probers {
			if p.calls.Load() == 0 {
				return false
			}
		}
		return true
	})
	// Three batches over 400ms: the first at once, the last after about 266ms.
	first, last := probers[0].firstCall().Sub(start), probers[5].firstCall().Sub(start)
	if first > 100*time.Millisecond || last < 200*time.Millisecond || last > time.Second {
		t.Fatalf("first batch at %s, last at %s; want at once and about 266ms", first, last)
	}
}

func TestIdleRecordsAreProbedLessOften(t *testing.T) {
	m := NewManager(Options{Log: testLog{}, IdleTimeout: 50 * time.Millisecond, IdleMultiplier: 10})
	var active, idle Activity
	pa, pi := &scriptedProber{script: []bool{true}}, &scriptedProber{script: []bool{true}}
	a, i := spec("a", pa, "a", 20*time.Millisecond), spec("i", pi, "i", 20*time.Millisecond)
	a.Activity, i.Activity = &active, &idle
	m.Sync([]Spec{a, i}, keys(a, i))
	start := time.Now()
	m.Start()
	defer m.Stop()
	// The queried record is marked all along, until it has been probed 15 times: 300 ms at its
	// 20 ms interval, longer on a loaded machine, which the idle record's bound follows.
	for pa.calls.Load() < 15 {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the queried record was probed %d times in 10s, want 15", pa.calls.Load())
		}
		active.Mark()
		time.Sleep(5 * time.Millisecond)
	}
	ni, elapsed := pi.calls.Load(), time.Since(start)
	// The idle record is probed at its interval until it has been idle for the idle timeout
	// (at 0, 20, 40 and 60 ms), then 10 intervals apart less the 5% jitter: its runs are due
	// 190 ms apart at least, however late they start.
	if most := 4 + int64(elapsed/(190*time.Millisecond)) + 1; ni > most {
		t.Fatalf("in %s the idle record was probed %d times, want at most %d (the queried one 15 times)", elapsed.Round(time.Millisecond), ni, most)
	}
}

// TestManagerSeed starts backends at the status Options.Seed gives them: before any probe, and
// with rise and fall counting from there. Backends the seed does not name start unknown, and
// only the first Sync is seeded.
func TestManagerSeed(t *testing.T) {
	failing := &scriptedProber{script: []bool{false}}
	silent := &scriptedProber{} // blocks: never answers within the test
	up := spec("up", failing, "check-up", 50*time.Millisecond)
	up.Fall = 3
	down := spec("down", silent, "check-down", time.Hour)
	fresh := spec("fresh", silent, "check-fresh", time.Hour)
	m := NewManager(Options{Log: testLog{}, Seed: map[string]Status{"up": Up, "down": Down, "gone": Up}})
	var callsAtDown atomic.Int64
	up.OnChange = func() { callsAtDown.Store(failing.calls.Load()) }
	m.Sync([]Spec{up, down, fresh}, keys(up, down, fresh))
	for key, want := range map[string]Status{"up": Up, "down": Down, "fresh": Unknown, "gone": Unknown} {
		if got := m.State(key).Status(); got != want {
			t.Errorf("%s starts %s, want %s", key, got, want)
		}
	}
	if d := m.Details()["down"]; d.Status != Down || d.Reason != "restored from the state file" {
		t.Errorf("details of a seeded backend: %+v", d)
	}

	// A second Sync does not seed again: a backend whose checks changed starts over as unknown.
	down.Checks = []*probe.Compiled{{Prober: silent, Type: "test", Timeout: time.Second, Key: "check-down-2"}}
	m.Sync([]Spec{up, down, fresh}, keys(up, down, fresh))
	if got := m.State("down").Status(); got != Unknown {
		t.Errorf("a changed backend after the first Sync is %s, want unknown", got)
	}

	m.Start()
	defer m.Stop()
	waitFor(t, "the seeded backend to fall", func() bool { return m.State("up").Status() == Down })
	if n := callsAtDown.Load(); n < 3 {
		t.Errorf("the seeded up backend went down after %d failures, want fall = 3", n)
	}
}

// TestSyncTakesTheSpecsState gives Sync an external backend's spec with a health word
// (Spec.State) and reports the backend up: the word is the backend's when the manager holds it
// under the spec's key; any other word (another manager's, another key's, one this manager
// forgot) is not written, and the backend gets the manager's word for its key.
func TestSyncTakesTheSpecsState(t *testing.T) {
	const key = "www.example.org./192.0.2.1"
	for _, tc := range []struct {
		name string
		word func(m *Manager) *State // the spec's State, made before the Sync
		own  bool                    // whether the backend must write that word
	}{
		{"none", func(*Manager) *State { return nil }, false},
		{"this manager's", func(m *Manager) *State { return m.State(key) }, true},
		{"another manager's", func(*Manager) *State { return NewManager(Options{}).State(key) }, false},
		{"another key's", func(m *Manager) *State { return m.State("www.example.org./192.0.2.2") }, false},
		{"forgotten", func(m *Manager) *State {
			st := m.State(key)
			m.Sync(nil, nil) // nothing probed or kept: the manager forgets it
			return st
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewManager(Options{Log: testLog{}})
			word := tc.word(m)
			m.Sync([]Spec{{Key: key, State: word, Record: "www.example.org.", Backend: "192.0.2.1", External: true}}, nil)
			if !m.Report(key, Up, "test") {
				t.Fatal("no external backend with the key after Sync")
			}
			if got := m.State(key).Status(); got != Up {
				t.Errorf("the manager's word for the key is %s, want up", got)
			}
			if word == nil {
				return
			}
			if own := m.State(key) == word; own != tc.own {
				t.Errorf("the spec's word is the backend's: %v, want %v", own, tc.own)
			}
			if want := map[bool]Status{true: Up, false: Unknown}[tc.own]; word.Status() != want {
				t.Errorf("the spec's word is %s, want %s", word.Status(), want)
			}
		})
	}
}

// TestStatesAreTheWordsOfState asks for words a batch at a time, from two goroutines at once,
// keys old and new, one of them twice in a batch: each is the word State returns for its key,
// one word a key.
func TestStatesAreTheWordsOfState(t *testing.T) {
	m := NewManager(Options{})
	old := m.State("old")
	batches := [][]string{{"old", "a", "b", "a"}, {"b", "c", "old"}}
	got := make([][]*State, len(batches))
	var wg sync.WaitGroup
	for i, keys := range batches {
		got[i] = make([]*State, len(keys))
		wg.Go(func() { m.States(keys, got[i]) })
	}
	wg.Wait()
	for i, keys := range batches {
		for j, key := range keys {
			if w := got[i][j]; w == nil || w != m.State(key) || w.Key() != key {
				t.Errorf("States gave %s the word %p, not State's %p", key, w, m.State(key))
			}
		}
	}
	if got[0][0] != old || got[0][1] != got[0][3] || got[0][2] != got[1][0] {
		t.Error("States gave one key two words")
	}
}
