package cluster

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/health/probe"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

func TestTally(t *testing.T) {
	up := func(id string) ballotVote {
		return ballotVote{vote: health.Vote{Instance: id, OK: true, Reason: "connected"}}
	}
	down := func(id string) ballotVote {
		return ballotVote{vote: health.Vote{Instance: id, Reason: "connect: connection refused"}}
	}
	isolated := func(v ballotVote) ballotVote { v.vote.Isolated = true; return v }
	majority, one, half := config.Threshold{}, config.Threshold{Count: 1}, config.Threshold{Percent: 50}
	tests := []struct {
		name       string
		votes      []ballotVote
		threshold  config.Threshold
		minVoters  int
		want       health.Status
		wantReason string
		degraded   bool
	}{
		{"majority up", []ballotVote{up("a"), up("b"), down("c")}, majority, 2, health.Up, "1 of 3 voters down (2 needed)", false},
		{"majority down", []ballotVote{up("a"), down("b"), down("c")}, majority, 2, health.Down, "2 of 3 voters down (2 needed): connect: connection refused", false},
		{"a tie is no majority", []ballotVote{up("a"), down("b")}, majority, 2, health.Up, "1 of 2 voters down (2 needed)", false},
		{"any voter", []ballotVote{up("a"), up("b"), down("c")}, one, 2, health.Down, "1 of 3 voters down (1 needed): connect: connection refused", false},
		{"a number above the voters means all of them", []ballotVote{down("b"), down("c")}, config.Threshold{Count: 5}, 2, health.Down, "2 of 2 voters down (2 needed): connect: connection refused", false},
		{"percentage rounds up", []ballotVote{up("a"), up("b"), down("c")}, half, 2, health.Up, "1 of 3 voters down (2 needed)", false},
		{"isolated votes do not count", []ballotVote{up("a"), up("b"), isolated(down("c"))}, one, 2, health.Up, "0 of 2 voters down (1 needed)", false},
		{"too few voters: own result", []ballotVote{down("a"), isolated(up("b"))}, majority, 2, health.Down, "too few voters (1 of 2), own result: connect: connection refused", true},
		{"too few voters, own vote isolated: the others'", []ballotVote{isolated(down("a")), up("b")}, majority, 2, health.Up, "too few voters (1 of 2), 0 of 1 voters down (1 needed)", true},
		{"no fresh vote", nil, majority, 2, health.Unknown, "no fresh vote", true},
		{"only isolated voters", []ballotVote{isolated(down("a")), isolated(down("b"))}, majority, 2, health.Unknown, "no usable vote: the 2 fresh voters are isolated", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, degraded := tally("check", 7, tt.votes, "a", tt.threshold, tt.minVoters)
			if v.Status != tt.want || v.Reason != tt.wantReason || degraded != tt.degraded || v.Cycle != 7 || len(v.Votes) != len(tt.votes) {
				t.Fatalf("verdict %s (%q), degraded %v, %d votes; want %s (%q), degraded %v", v.Status, v.Reason, degraded, len(v.Votes), tt.want, tt.wantReason, tt.degraded)
			}
		})
	}
}

func TestFreshVotes(t *testing.T) {
	b := &ballot{votes: map[string][]ballotVote{
		"a": {{cycle: 9}, {cycle: 10}, {cycle: 11}}, // a vote of the next cycle, come early
		"b": {{cycle: 9}},                           // one cycle old: still fresh
		"c": {{cycle: 8}},                           // two cycles old: expired
	}}
	for i := range b.votes {
		for j := range b.votes[i] {
			b.votes[i][j].vote.Instance = i
		}
	}
	fresh := b.fresh(10)
	if len(fresh) != 2 || fresh[0].vote.Instance != "a" || fresh[0].cycle != 10 || fresh[1].vote.Instance != "b" {
		t.Fatalf("fresh votes of cycle 10: %+v", fresh)
	}
	b.prune(10)
	if len(b.votes) != 1 || len(b.votes["a"]) != 2 {
		t.Fatalf("after cycle 10, kept %+v", b.votes)
	}
}

// vantage is a backend that each instance of a test fleet reaches or not, as the test sets.
type vantage struct{ reach [3]atomic.Bool }

// vantageProber is instance i's check of a vantage backend.
type vantageProber struct {
	v *vantage
	i int
}

func (p vantageProber) Probe(context.Context) probe.Result {
	if p.v.reach[p.i].Load() {
		return probe.Pass("connected")
	}
	return probe.Fail("connect: connection refused")
}

// quorumFleet starts three quorum-mode instances on r probing v, the instance i with the
// canaries of canaries(i).
func quorumFleet(t *testing.T, r *testutil.Redis, v *vantage, threshold config.Threshold, canaries func(i int) []string) []*instance {
	t.Helper()
	out := make([]*instance, len(v.reach))
	for i := range out {
		o := redisOptions(r, config.SyncQuorum)
		o.Quorum = config.QuorumOptions{Threshold: threshold, CanaryInterval: 100 * time.Millisecond}
		if canaries != nil {
			o.Quorum.Canaries = canaries(i)
		}
		spec := checkSpec(nil, i)
		spec.Checks[0].Prober = vantageProber{v, i}
		out[i] = startInstance(t, o, spec)
	}
	return out
}

// reach sets which instances reach the backend.
func (v *vantage) set(reach ...bool) {
	for i, ok := range reach {
		v.reach[i].Store(ok)
	}
}

// stays checks that every instance sees the backend as want for three intervals.
func stays(t *testing.T, fleet []*instance, want health.Status) {
	t.Helper()
	for end := time.Now().Add(3 * testInterval); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		for i, in := range fleet {
			if st := in.status(backendKey); st != want {
				t.Fatalf("instance %d sees the backend %s, want %s", i, st, want)
			}
		}
	}
}

func TestQuorumFleet(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t)
	v := &vantage{}
	v.set(true, true, true)
	f := quorumFleet(t, r, v, config.Threshold{}, nil)
	agree(t, f, health.Up)
	testutil.Eventually(t, 5*time.Second, func() bool { return len(f[0].m.Votes()[backendKey]) == 3 }, "the verdicts do not see three voters")

	v.set(true, true, false) // one of three cannot reach it: no majority
	stays(t, f, health.Up)
	v.set(true, false, false) // two of three: down everywhere
	agree(t, f, health.Down)
	v.set(true, true, true)
	agree(t, f, health.Up)
	v.set(false, true, false)
	agree(t, f, health.Down)
	// Every instance took the same verdicts: the same transitions, in the same order.
	history := func(in *instance) string {
		var b strings.Builder
		for _, tr := range in.m.Transitions(100) {
			b.WriteString(tr.From.String() + ">" + tr.To.String() + " ")
		}
		return b.String()
	}
	for i, in := range f[1:] {
		if a, b := history(f[0]), history(in); a != b {
			t.Fatalf("instance 0 went %s, instance %d %s", a, i+1, b)
		}
	}

	// A voter that stops drops out once its votes expire: one up and one down vote are no
	// majority.
	f[0].stop()
	agree(t, f[1:], health.Up)
	if n := len(f[1].m.Votes()[backendKey]); n != 2 {
		t.Fatalf("%d voters after one stopped, want 2", n)
	}
}

func TestQuorumIsolatedInstance(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t)
	canary, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer canary.Close()
	go func() {
		for {
			c, err := canary.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	closed := testutil.FreePort(t)
	v := &vantage{}
	v.set(true, true, false)
	// Any down vote would do (quorum 1), but instance 2 cannot reach its canaries.
	f := quorumFleet(t, r, v, config.Threshold{Count: 1}, func(i int) []string {
		if i == 2 {
			return []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(closed))}
		}
		return []string{canary.Addr().String()}
	})
	if !f[2].c.isolated.Load() || f[2].log.Count("this instance is isolated") != 1 {
		t.Fatal("the instance whose canaries fail is not isolated")
	}
	agree(t, f, health.Up)
	stays(t, f, health.Up)
	votes := f[0].m.Votes()[backendKey]
	if i := indexOf(votes, f[2].c.ID()); len(votes) != 3 || i < 0 || !votes[i].Isolated {
		t.Fatalf("votes %+v, want the isolated instance's marked", votes)
	}
	// A backend down for everyone is down for the isolated instance too: it follows the others.
	v.set(false, false, false)
	agree(t, f, health.Down)
}

func TestQuorumWithoutRedis(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t)
	v := &vantage{}
	v.set(true, false, true)
	f := quorumFleet(t, r, v, config.Threshold{}, nil)[:2]
	agree(t, f, health.Up)
	stays(t, f, health.Up)
	var before [2]int
	for i, in := range f {
		before[i] = in.log.Count("decided from this instance's own results") // the first instance was alone for a moment
	}
	r.Kill()
	// Alone, each instance decides from its own results.
	testutil.Eventually(t, 5*time.Second, func() bool { return f[1].status(backendKey) == health.Down }, "instance 1 does not follow its own result")
	stays(t, f[:1], health.Up)
	for i, in := range f {
		if n := in.log.Count("decided from this instance's own results"); n != before[i]+1 {
			t.Fatalf("instance %d logged its fallback %d times, want once:\n%s", i, n-before[i], in.log.String())
		}
	}
	r.Restart(t)
	agree(t, f, health.Up)
	// The voters come back one by one after the restart (each reconnects on its own backoff):
	// a series may end, and start and end again, before all have, so the end is logged at
	// least once.
	testutil.Eventually(t, 10*time.Second, func() bool { return f[1].log.Count("enough voters again") >= 1 }, "instance 1 did not log the voters' return")
}

func indexOf(votes []health.Vote, instance string) int {
	for i, v := range votes {
		if v.Instance == instance {
			return i
		}
	}
	return -1
}

func TestQuorumNewInstanceStartsFromTheVotes(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t)
	v := &vantage{} // down for everyone
	f := quorumFleet(t, r, v, config.Threshold{}, nil)[:2]
	agree(t, f, health.Down)
	stays(t, f, health.Down) // the votes of the latest cycles carry the voters' statuses

	// A new instance would find the backend up: before its first probe it answers what the
	// fleet's votes say.
	mine := &vantage{}
	mine.set(true)
	log := &testutil.Log{}
	o := redisOptions(r, config.SyncQuorum)
	o.Enable = true
	c, err := New(o, log)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := health.NewManager(health.Options{Log: log, Coordinator: c})
	defer m.Stop()
	c.Connect(m)
	c.Run()
	spec := checkSpec(nil, 0)
	spec.Checks[0].Prober = vantageProber{mine, 0}
	m.Sync([]health.Spec{spec}, map[string]bool{backendKey: true})
	if st := m.State(backendKey).Status(); st != health.Down {
		t.Fatalf("a new instance sees the backend %s before its first probe, want down as the fleet\n%s", st, log.String())
	}
	if log.Count("probed by ") != 1 {
		t.Fatalf("the new instance did not start from a voter's status:\n%s", log.String())
	}
}
