package health

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health/probe"
)

// fakeCoordinator stands in for the Redis coordinator: the manager's side of cluster mode is
// under test here. It answers every turn with its decide function (probe here by default) and
// records what the manager tells it.
type fakeCoordinator struct {
	exclusive bool
	seeds     []Shared
	decide    func(*Turn)
	sources   []netip.Addr

	mu        sync.Mutex
	watched   []Check
	turns     []*Turn
	published []Shared
}

func (f *fakeCoordinator) Exclusive() bool { return f.exclusive }

func (f *fakeCoordinator) Sources() []netip.Addr { return f.sources }

func (f *fakeCoordinator) Seed(checks []Check) []Shared {
	var out []Shared
	for _, s := range f.seeds {
		for _, c := range checks {
			if c.ID == s.Check {
				out = append(out, s)
			}
		}
	}
	return out
}

func (f *fakeCoordinator) Watch(checks []Check) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watched = checks
}

func (f *fakeCoordinator) Due(t *Turn) {
	f.mu.Lock()
	f.turns = append(f.turns, t)
	f.mu.Unlock()
	if f.decide != nil {
		f.decide(t)
		return
	}
	t.Probe(true)
}

func (f *fakeCoordinator) Publish(s Shared) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.published = append(f.published, s)
}

func (f *fakeCoordinator) snapshot() (turns []*Turn, published []Shared) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Turn(nil), f.turns...), append([]Shared(nil), f.published...)
}

// checkOf returns the check the manager runs for the single job of m.
func checkOf(t *testing.T, f *fakeCoordinator) Check {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.watched) != 1 {
		t.Fatalf("the coordinator watches %d checks, want 1", len(f.watched))
	}
	return f.watched[0]
}

func TestCheckIDIsStableAcrossProcesses(t *testing.T) {
	target := probe.Target{Host: "192.0.2.10", Port: 443}
	compile := func(params map[string]any) *probe.Compiled {
		c, err := probe.Compile(config.HealthCheck{Type: "tcp", Params: config.NewParams(params)}, target, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// The same parameters, inserted in another order: map order must not matter.
	a := compile(map[string]any{"port": 8443, "send": "ping", "expect": "pong"})
	b := compile(map[string]any{"expect": "pong", "send": "ping", "port": 8443})
	id := func(c *probe.Compiled, interval time.Duration, retries int) string {
		return checkID(jobKey(c, &Spec{Interval: interval, Retries: retries}))
	}
	// Pinned: another process (another build, another host) must compute the same id for the
	// same configuration, or instances would never contend for the same locks. A change of the
	// compiled key's format changes it: instances of both versions then share nothing during
	// a rolling upgrade, which the release notes must say.
	const want = "beb71da2716816d4e67d05c0f043d288"
	if got := id(a, 10*time.Second, 1); got != want {
		t.Errorf("check id %s, want %s", got, want)
	}
	if id(a, 10*time.Second, 1) != id(b, 10*time.Second, 1) {
		t.Error("equal checks have different ids")
	}
	for _, other := range []string{id(a, 5*time.Second, 1), id(a, 10*time.Second, 2), id(compile(map[string]any{"port": 8444}), 10*time.Second, 1)} {
		if other == want {
			t.Error("a different interval, retries or check has the same id")
		}
	}
	for _, c := range []*probe.Compiled{a, b} {
		probe.Release(c.Prober)
	}
}

func TestClusterTurnsRunOnTheFleetsCycles(t *testing.T) {
	const interval = 100 * time.Millisecond
	f := &fakeCoordinator{exclusive: true}
	m := NewManager(Options{Log: testLog{}, Coordinator: f})
	p := &scriptedProber{script: []bool{true}}
	s := spec("a", p, "aligned", interval)
	m.Sync([]Spec{s}, keys(s))
	check := checkOf(t, f)
	if check.ID != checkID(jobKey(s.Checks[0], &s)) || check.Interval != interval || check.Passive {
		t.Fatalf("watched %+v", check)
	}
	m.Start()
	defer m.Stop()
	const n = 9
	waitFor(t, "turns", func() bool { return p.calls.Load() >= n })
	turns, published := f.snapshot()
	p.mu.Lock()
	times := append([]time.Time(nil), p.times...)
	p.mu.Unlock()
	phase := m.cluster.byID[check.ID].shared.phase
	// The first turn runs at once (nothing was shared yet); the others at the check's phase of
	// their cycles. A loaded machine may start one late, never early.
	aligned := 0
	var offsets []time.Duration
	for i, turn := range turns[1:n] {
		if turn.Cycle <= turns[i].Cycle {
			t.Fatalf("turn cycles %d then %d, want increasing", turns[i].Cycle, turn.Cycle)
		}
		offset := times[i+1].Sub(time.Unix(0, turn.Cycle*int64(interval)))
		offsets = append(offsets, offset)
		if offset >= phase-dispatchSlack && offset < phase+30*time.Millisecond {
			aligned++
		}
	}
	if aligned < n-3 {
		t.Fatalf("probes at %v into their cycles, want most at the phase %s", offsets, phase)
	}
	if len(published) == 0 || published[0].Check != check.ID || published[0].Cycle != turns[0].Cycle || !published[0].OK ||
		len(published[0].Status) != 1 || published[0].Status["a"] != Up {
		t.Fatalf("published %+v, want the first turn's result", published)
	}
}

func TestClusterAppliesEachResultOnce(t *testing.T) {
	base := Shared{Check: "", Cycle: 100, At: time.Now()}
	tests := []struct {
		name      string
		exclusive bool
		results   []Shared // applied in order, fed to a machine with rise 1 and fall 1
		want      []bool   // whether each was applied
	}{
		{"lock mode: one result per cycle", true,
			[]Shared{{Cycle: 100, OK: true, Instance: "b"}, {Cycle: 100, Instance: "c"}, {Cycle: 99, Instance: "c"}, {Cycle: 101, Instance: "c"}},
			[]bool{true, false, false, true}},
		{"none mode: one result per instance and cycle", false,
			[]Shared{{Cycle: 100, OK: true, Instance: "b"}, {Cycle: 100, Instance: "c"}, {Cycle: 100, OK: true, Instance: "b"}, {Cycle: 99, Instance: "c"}, {Cycle: 101, Instance: "b"}},
			[]bool{true, true, false, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeCoordinator{exclusive: tt.exclusive}
			m := NewManager(Options{Log: testLog{}, Coordinator: f})
			s := spec("a", &scriptedProber{script: []bool{true}}, "dedupe", time.Hour)
			m.Sync([]Spec{s}, keys(s))
			id := checkOf(t, f).ID
			for i, r := range tt.results {
				r.Check, r.At = id, base.At
				if got := m.Receive(r); got != tt.want[i] {
					t.Fatalf("result %d (%+v) applied: %v, want %v", i, r, got, tt.want[i])
				}
			}
			if m.Receive(Shared{Check: "unknown", Cycle: 1000}) {
				t.Fatal("a result of a check not run here was applied")
			}
		})
	}
}

func TestClusterSeedsBeforeTheFirstProbe(t *testing.T) {
	const interval = time.Hour
	tests := []struct {
		name string
		seed Shared
		want Status
	}{
		{"raw result only, as an agent writes it", Shared{Cycle: 7, OK: false, Reason: "refused"}, Down},
		{"the fleet's status wins over the raw result: a rise under way", Shared{Cycle: 7, OK: true, Status: map[string]Status{"a": Down}}, Down},
		{"the fleet's status: a fall under way", Shared{Cycle: 7, OK: false, Status: map[string]Status{"a": Up}}, Up},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := spec("a", &scriptedProber{script: []bool{true}}, "seeded", interval)
			id := checkID(jobKey(s.Checks[0], &s))
			tt.seed.Check, tt.seed.At, tt.seed.Instance = id, time.Now(), "b"
			m := NewManager(Options{Log: testLog{}, Coordinator: &fakeCoordinator{exclusive: true, seeds: []Shared{tt.seed}}})
			m.Sync([]Spec{s}, keys(s))
			if st := m.State("a").Status(); st != tt.want {
				t.Fatalf("seeded backend is %s, want %s as the fleet saw it", st, tt.want)
			}
			j := m.cluster.byID[id]
			if want := j.shared.runAfter(time.Now()); !j.due().Equal(want) || j.index < 0 {
				t.Fatalf("seeded check runs at %s, want its next cycle at %s", j.due(), want)
			}
			// A backend whose check has no shared result yet runs at once, as without a
			// coordinator.
			u := spec("u", &scriptedProber{script: []bool{true}}, "unseeded", interval)
			m.Sync([]Spec{s, u}, keys(s, u))
			if j := m.cluster.byID[checkID(jobKey(u.Checks[0], &u))]; time.Until(j.due()) > time.Second {
				t.Fatalf("unseeded check runs in %s, want at once", time.Until(j.due()))
			}
		})
	}
}

func TestClusterTurnStaysOpenUntilEnded(t *testing.T) {
	const interval = 20 * time.Millisecond
	f := &fakeCoordinator{exclusive: true}
	opened := make(chan *Turn, 100)
	f.decide = func(t *Turn) { opened <- t } // the turn stays open, as while waiting for a winner
	m := NewManager(Options{Log: testLog{}, Coordinator: f})
	p := &scriptedProber{script: []bool{true}}
	s := spec("a", p, "waiting", interval)
	m.Sync([]Spec{s}, keys(s))
	m.Start()
	defer m.Stop()
	turn := <-opened
	if turn.Settled() {
		t.Fatal("a turn is settled before any result")
	}
	// Another instance's result for this cycle settles it.
	if !m.Receive(Shared{Check: turn.Check.ID, Cycle: turn.Cycle, OK: true, At: time.Now(), Instance: "b"}) || !turn.Settled() {
		t.Fatal("the winner's result did not settle the turn")
	}
	waitFor(t, "up from the shared result", func() bool { return m.State("a").Status() == Up })
	select {
	case again := <-opened:
		t.Fatalf("cycle %d was handed over while cycle %d was still open", again.Cycle, turn.Cycle)
	case <-time.After(3 * interval):
	}
	turn.End()
	next := <-opened
	if next.Cycle <= turn.Cycle {
		t.Fatalf("next turn for cycle %d after %d", next.Cycle, turn.Cycle)
	}
	next.Probe(false)
	waitFor(t, "the local probe", func() bool { return p.calls.Load() == 1 })
	if _, published := f.snapshot(); len(published) != 0 {
		t.Fatalf("a probe of Probe(false) was published: %+v", published)
	}
}

func TestPassiveBackends(t *testing.T) {
	passive := Spec{Key: "www.example.org.|192.0.2.10|0", Record: "www.example.org.", Backend: "192.0.2.10", Rise: 1, Fall: 1, Interval: 50 * time.Millisecond, Passive: true}

	// Without cluster mode nobody could report for it: it is ignored and stays unknown.
	m := NewManager(Options{Log: testLog{}})
	m.Sync([]Spec{passive}, keys(passive))
	if m.queue.Len() != 0 || len(m.backends) != 0 {
		t.Fatalf("without a coordinator a passive backend got %d jobs", m.queue.Len())
	}

	f := &fakeCoordinator{exclusive: true}
	m = NewManager(Options{Log: testLog{}, Coordinator: f})
	m.Sync([]Spec{passive}, keys(passive))
	if c := checkOf(t, f); c.ID != passive.Key || !c.Passive {
		t.Fatalf("passive backend watched as %+v, want its key as the check id", c)
	}
	m.Start()
	defer m.Stop()
	if !m.Receive(Shared{Check: passive.Key, Cycle: 1, OK: true, At: time.Now(), Instance: "agent", HasLoad: true, Load: 0.4}) {
		t.Fatal("an agent's result for the passive backend was not applied")
	}
	if st := m.State(passive.Key).Status(); st != Up {
		t.Fatalf("passive backend is %s after an up result, want up", st)
	}
	if l, rtt := m.State(passive.Key).Load(), m.State(passive.Key).RTT(); l != 0.4 || rtt != 0 {
		t.Fatalf("the agent's published load gave load %v and RTT %v, want 0.4 and none (RTT is the prober's own)", l, rtt)
	}
	start := time.Now()
	waitFor(t, "unknown once the result is stale", func() bool { return m.State(passive.Key).Status() == Unknown })
	if took := time.Since(start); took < 90*time.Millisecond {
		t.Fatalf("stale after %s, want twice the 50ms interval", took)
	}
	if turns, _ := f.snapshot(); len(turns) != 0 {
		t.Fatalf("a passive backend was handed %d turns: it must never be probed", len(turns))
	}
}

func TestQuorumVotesWaitForTheVerdict(t *testing.T) {
	f := &fakeCoordinator{exclusive: true, decide: func(t *Turn) { t.Vote() }}
	m := NewManager(Options{Log: testLog{}, Coordinator: f})
	s := spec("a", &scriptedProber{script: []bool{false}}, "voted", time.Hour)
	m.Sync([]Spec{s}, keys(s))
	m.Start()
	defer m.Stop()
	waitFor(t, "the vote", func() bool { _, published := f.snapshot(); return len(published) == 1 })
	_, published := f.snapshot()
	vote := published[0]
	if vote.OK || vote.Status["a"] != Unknown {
		t.Fatalf("vote %+v, want the failed probe with the status before it", vote)
	}
	// The vote is not applied here: the verdict is.
	if st := m.State("a").Status(); st != Unknown {
		t.Fatalf("the backend is %s after this instance's vote alone, want unknown until the verdict", st)
	}
	at := time.Now()
	votes := []Vote{{Instance: "b", Site: "eu", OK: true, At: at}, {Instance: "c", OK: false, Reason: "refused", At: at, Isolated: true}}
	if !m.Decide(Verdict{Check: vote.Check, Cycle: vote.Cycle, Status: Up, Reason: "0 of 1 voters down", Votes: votes}) {
		t.Fatal("the verdict was not applied")
	}
	if st := m.State("a").Status(); st != Up {
		t.Fatalf("the backend is %s after an up verdict, want up", st)
	}
	if rtt := m.State("a").RTT(); rtt != 0 {
		t.Fatalf("RTT %v from this instance's failed vote, want none", rtt)
	}
	if got := m.Votes()["a"]; len(got) != 2 || got[0].Instance != "b" || !got[1].Isolated {
		t.Fatalf("votes %+v, want the verdict's", got)
	}
	if d := m.Details()["a"]; d.Reason != "0 of 1 voters down" || !d.LastOK {
		t.Fatalf("details %+v, want the verdict's reason", d)
	}
	if m.Decide(Verdict{Check: vote.Check, Cycle: vote.Cycle, Status: Down}) {
		t.Fatal("a second verdict on one cycle was applied")
	}
	if m.Decide(Verdict{Check: "unknown", Cycle: vote.Cycle + 1, Status: Down}) {
		t.Fatal("a verdict on a check not run here was applied")
	}
	// No usable vote: unknown, not down.
	if !m.Decide(Verdict{Check: vote.Check, Cycle: vote.Cycle + 1, Status: Unknown, Reason: "no fresh vote"}) {
		t.Fatal("the unknown verdict was not applied")
	}
	if st := m.State("a").Status(); st != Unknown {
		t.Fatalf("the backend is %s after an unknown verdict, want unknown", st)
	}
	if trs := m.Transitions(1); len(trs) != 1 || trs[0].To != Unknown || trs[0].Reason != "no fresh vote" {
		t.Fatalf("transitions %+v, want the change to unknown with its reason", trs)
	}
}

func TestMergeVote(t *testing.T) {
	at := time.Now()
	votes := mergeVote(nil, Vote{Instance: "a", OK: true, Reason: "connected", At: at})
	votes = mergeVote(votes, Vote{Instance: "b", OK: true, At: at})
	votes = mergeVote(votes, Vote{Instance: "a", OK: false, Reason: "refused", At: at.Add(time.Second)})
	votes = mergeVote(votes, Vote{Instance: "a", OK: true, Reason: "http 200", At: at})
	want := []Vote{{Instance: "a", OK: false, Reason: "refused", At: at.Add(time.Second)}, {Instance: "b", OK: true, At: at}}
	if len(votes) != 2 || votes[0] != want[0] || votes[1] != want[1] {
		t.Fatalf("merged %+v, want %+v", votes, want)
	}
}

// TestVerdictAnnouncesVantageRTTs: a quorum verdict whose votes move a site's RTT, with no
// change of status, tells the record (OnMeasure) and leaves the RTTs by site in the State.
func TestVerdictAnnouncesVantageRTTs(t *testing.T) {
	f := &fakeCoordinator{exclusive: true, decide: func(t *Turn) { t.Vote() }}
	m := NewManager(Options{Log: testLog{}, Coordinator: f})
	var measured atomic.Int32
	s := spec("a", &scriptedProber{script: []bool{true}}, "voted", time.Hour)
	s.OnMeasure = func() { measured.Add(1) }
	m.Sync([]Spec{s}, keys(s))
	m.Start()
	defer m.Stop()
	waitFor(t, "the vote", func() bool { _, published := f.snapshot(); return len(published) == 1 })
	_, published := f.snapshot()
	check, cycle := published[0].Check, published[0].Cycle
	at := time.Now()
	for i, rtt := range []time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 40 * time.Millisecond} {
		votes := []Vote{{Instance: "b", Site: "eu", OK: true, At: at, Latency: rtt}}
		if !m.Decide(Verdict{Check: check, Cycle: cycle + int64(i), Status: Up, Votes: votes}) {
			t.Fatalf("verdict %d was not applied", i)
		}
	}
	if got := m.State("a").VantageRTTs()["eu"]; got != 19*time.Millisecond {
		t.Errorf("eu's RTT %v, want 10ms smoothed toward 40ms: 19ms", got)
	}
	// The first verdict brought the site, the third moved it; the second did not.
	if n := measured.Load(); n != 2 {
		t.Errorf("OnMeasure ran %d times, want 2", n)
	}
}
