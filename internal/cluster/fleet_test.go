package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/health/probe"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// The fleets of these tests are health managers in this process, each with its own Client, all
// probing one fake backend whose probes they count.
const (
	testInterval = 250 * time.Millisecond
	testTimeout  = 100 * time.Millisecond
	backendKey   = "www.example.org.|192.0.2.10|80"
)

// fakeBackend is what the instances probe: up or down as the test sets it. It records when each
// probe happened and which instance ran it.
type fakeBackend struct {
	up     atomic.Bool
	mu     sync.Mutex
	probes []probeRecord
}

// probeRecord is one probe of a fakeBackend: when it ran and on which instance.
type probeRecord struct {
	at       time.Time
	instance int
}

func (b *fakeBackend) probesSince(t time.Time) []probeRecord {
	b.mu.Lock()
	defer b.mu.Unlock()
	i, _ := slices.BinarySearchFunc(b.probes, t, func(p probeRecord, t time.Time) int { return p.at.Compare(t) })
	return slices.Clone(b.probes[i:])
}

// prober is one instance's compiled check of the fake backend.
type prober struct {
	b        *fakeBackend
	instance int
}

func (p prober) Probe(context.Context) probe.Result {
	p.b.mu.Lock()
	p.b.probes = append(p.b.probes, probeRecord{time.Now(), p.instance})
	p.b.mu.Unlock()
	if p.b.up.Load() {
		return probe.Pass("ok")
	}
	return probe.Fail("down")
}

// instance is one member of a test fleet.
type instance struct {
	m    *health.Manager
	c    *Client
	log  *testutil.Log
	once sync.Once
}

func (in *instance) status(key string) health.Status { return in.m.State(key).Status() }

// fleet starts n instances on o, each probing b with the given spec (see checkSpec), the first
// one alone until it has published a result so that the others start from it.
func fleet(t *testing.T, o config.ClusterOptions, b *fakeBackend, n int) []*instance {
	t.Helper()
	out := make([]*instance, n)
	for i := range out {
		out[i] = startInstance(t, o, checkSpec(b, i))
		if i == 0 {
			testutil.Eventually(t, 5*time.Second, func() bool { return out[0].status(backendKey) != health.Unknown }, "the first instance has no result")
		}
	}
	return out
}

// startInstance starts a manager and client with specs, stopped when the test ends.
func startInstance(t *testing.T, o config.ClusterOptions, specs ...health.Spec) *instance {
	t.Helper()
	o.Enable = true
	log := &testutil.Log{}
	c, err := New(o, log)
	if err != nil {
		t.Fatal(err)
	}
	m := health.NewManager(health.Options{Log: log, Coordinator: c})
	c.Connect(m)
	c.Run()
	keep := map[string]bool{}
	for _, s := range specs {
		keep[s.Key] = true
	}
	m.Sync(specs, keep)
	m.Start()
	in := &instance{m: m, c: c, log: log}
	t.Cleanup(in.stop)
	return in
}

// stop ends the instance: its manager, then its client. It may be called twice.
func (in *instance) stop() {
	in.once.Do(func() {
		in.m.Stop()
		in.c.Close()
	})
}

// checkSpec is instance i's spec of the backend: one check, rise and fall 1.
func checkSpec(b *fakeBackend, i int) health.Spec {
	return health.Spec{
		Key: backendKey, Record: "www.example.org.", Backend: "192.0.2.10:80",
		Checks: []*probe.Compiled{{Prober: prober{b, i}, Type: "test", Timeout: testTimeout, Key: "0123456789abcdef"}},
		Rise:   1, Fall: 1, Interval: testInterval,
	}
}

func redisOptions(r *testutil.Redis, mode config.SyncMode) config.ClusterOptions {
	return config.ClusterOptions{Addrs: []string{r.Addr}, SyncMode: mode}
}

// perCycle counts probes per cycle (see testutil.PerCycle).
func perCycle(probes []probeRecord) []int {
	times := make([]time.Time, len(probes))
	for i, p := range probes {
		times[i] = p.at
	}
	return testutil.PerCycle(times, testInterval)
}

// cyclesProbed reports whether counts (probes per cycle, perCycle's) are want in every cycle,
// allowing a cycle's probes to land in the next one on a loaded machine (a probe more than
// half an interval late moves to the next bin): up to every cycle k, the probes counted are at
// most k cycles' and at least k-1 cycles'. Duplicates (more than want in a cycle) and cycles
// left unprobed for good fail it.
func cyclesProbed(counts []int, want int) bool {
	sum := 0
	for k, n := range counts {
		sum += n
		if sum > (k+1)*want || sum < k*want {
			return false
		}
	}
	return sum >= (len(counts)-1)*want
}

// agree waits until every instance sees the backend as want.
func agree(t *testing.T, fleet []*instance, want health.Status) {
	t.Helper()
	testutil.Eventually(t, 5*time.Second, func() bool {
		for _, in := range fleet {
			if in.status(backendKey) != want {
				return false
			}
		}
		return true
	}, "the instances do not all see the backend %s", want)
}

func TestProbesPerCycle(t *testing.T) {
	tests := []struct {
		mode     config.SyncMode
		perCycle int // probes per cycle, fleet-wide
	}{
		{config.SyncLock, 1},
		{config.SyncNone, 3},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			t.Parallel()
			r := testutil.StartRedis(t)
			b := &fakeBackend{}
			b.up.Store(true)
			f := fleet(t, redisOptions(r, tt.mode), b, 3)
			agree(t, f, health.Up)
			since := time.Now().Add(testInterval)
			testutil.Eventually(t, 12*testInterval, func() bool { return len(perCycle(b.probesSince(since))) >= 7 }, "no seven cycles probed")
			counts := perCycle(b.probesSince(since))
			if !cyclesProbed(counts[:6], tt.perCycle) { // the last cycle may still be under way
				t.Fatalf("probes per cycle %v, want %d in each", counts, tt.perCycle)
			}
			if tt.mode == config.SyncLock {
				by := map[int]bool{}
				for _, p := range b.probesSince(since) {
					by[p.instance] = true
				}
				t.Logf("cycles probed by instances %v", by)
			}
			b.up.Store(false)
			agree(t, f, health.Down)
		})
	}
}

func TestNewInstanceStartsFromTheFleetsState(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t)
	b := &fakeBackend{} // down
	first := fleet(t, redisOptions(r, config.SyncLock), b, 1)[0]
	if st := first.status(backendKey); st != health.Down {
		t.Fatalf("the first instance sees %s", st)
	}
	// The new instance's own probe would say up: it probes a backend of its own under the same
	// check, while the fleet keeps probing b and seeing it down. (Turning b up instead raced
	// with the first instance's next cycle, whose result the new one then rightly took.)
	own := &fakeBackend{}
	own.up.Store(true)

	log := &testutil.Log{}
	c, err := New(config.ClusterOptions{Enable: true, Addrs: []string{r.Addr}}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := health.NewManager(health.Options{Log: log, Coordinator: c})
	c.Connect(m)
	c.Run()
	m.Sync([]health.Spec{checkSpec(own, 1)}, map[string]bool{backendKey: true})
	// Not started: no probe has run here, yet the backend is what the fleet saw.
	if st := m.State(backendKey).Status(); st != health.Down {
		t.Fatalf("a new instance sees the backend %s before its first probe, want down as the fleet", st)
	}
	if n := log.Count("probed by " + first.c.ID()); n != 1 {
		t.Fatalf("%d log lines name the instance that probed, want 1", n)
	}
}

func TestRedisLostAndBack(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t)
	b := &fakeBackend{}
	b.up.Store(true)
	f := fleet(t, redisOptions(r, config.SyncLock), b, 2)
	agree(t, f, health.Up)

	r.Kill()
	// Every instance probes on its own: two probes a cycle, and each still follows the backend.
	since := time.Now().Add(2 * testInterval)
	wantPerCycle(t, b, since, 2, "without Redis")
	b.up.Store(false)
	agree(t, f, health.Down)
	for i, in := range f {
		if n := in.log.Count("lost Redis"); n != 1 {
			t.Fatalf("instance %d logged the lost connection %d times, want once", i, n)
		}
	}

	r.Restart(t)
	testutil.Eventually(t, 10*time.Second, func() bool { return f[0].c.up.Load() && f[1].c.up.Load() }, "the instances did not reconnect")
	since = time.Now().Add(testInterval)
	wantPerCycle(t, b, since, 1, "after Redis came back")
	b.up.Store(true)
	agree(t, f, health.Up)
}

func TestDeadLockHolderIsReplacedNextCycle(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t)
	b := &fakeBackend{}
	b.up.Store(true)
	f := fleet(t, redisOptions(r, config.SyncLock), b, 2)
	agree(t, f, health.Up)

	// A dead instance holds the locks of the next two cycles: it won them and never published.
	ctx := context.Background()
	rc := r.Client(t)
	var lock string
	testutil.Eventually(t, 2*time.Second, func() bool {
		keys, err := rc.Keys(ctx, "gslb:lock:*").Result()
		if err != nil || len(keys) == 0 {
			return false
		}
		slices.Sort(keys)
		lock = keys[len(keys)-1]
		return true
	}, "no lock key")
	i := strings.LastIndexByte(lock, ':')
	var cycle int64
	fmt.Sscan(lock[i+1:], &cycle)
	for n := cycle + 2; n <= cycle+3; n++ {
		if err := rc.Set(ctx, fmt.Sprintf("%s:%d", lock[:i], n), "dead-instance", lockTTL(testInterval)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Unix(0, (cycle+2)*int64(testInterval))
	testutil.Eventually(t, 20*testInterval, func() bool { return len(perCycle(b.probesSince(start))) >= 5 }, "no probes")
	counts := perCycle(b.probesSince(start))
	t.Logf("probes per cycle from the dead instance's first cycle: %v", counts)
	// In the dead instance's cycles both survivors wait for its result, give up after the probe
	// timeout, and probe themselves (the second of those may be skipped: the wait outlasts the
	// interval); then the locks are theirs again, one probe per cycle.
	if len(counts) < 3 || counts[0] != 2 || counts[len(counts)-2] != 1 {
		t.Fatalf("probes per cycle %v: want 2 in the dead instance's cycle, then back to 1", counts)
	}
	agree(t, f, health.Up)
}

func TestPassiveBackendFollowsAnAgent(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t)
	in := startInstance(t, redisOptions(r, config.SyncLock), health.Spec{
		Key: backendKey, Record: "www.example.org.", Backend: "192.0.2.10:80", Rise: 1, Fall: 1, Interval: testInterval, Passive: true,
	})
	ctx := context.Background()
	rc := r.Client(t)
	// An external agent publishes for the backend, under its key, without a cycle.
	now := time.Now()
	msg := fmt.Sprintf(`{"check":%q,"ok":true,"time":%d,"instance":"agent-1"}`, backendKey, now.UnixMilli())
	if err := rc.Publish(ctx, "gslb:health:updates", msg).Err(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Second, func() bool { return in.status(backendKey) == health.Up }, "the agent's result was not applied")

	// Its next result only reaches the key, as if the message was lost: the periodic reconcile
	// (once per interval) finds it.
	msg = fmt.Sprintf(`{"check":%q,"cycle":%d,"ok":false,"time":%d,"instance":"agent-1"}`,
		backendKey, now.UnixNano()/int64(testInterval)+1, time.Now().UnixMilli())
	if err := rc.Set(ctx, "gslb:health:"+backendKey, msg, 2*testInterval).Err(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 2*testInterval, func() bool { return in.status(backendKey) == health.Down }, "the reconcile did not apply the key's result")

	// Then the agent falls silent: twice the interval later the backend is unknown.
	testutil.Eventually(t, 4*testInterval, func() bool { return in.status(backendKey) == health.Unknown }, "the result did not turn stale")
}

func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	primary := testutil.StartRedis(t)
	replica := testutil.StartReplica(t, primary)
	sentinel := testutil.StartSentinel(t, "main", primary, replica)
	b := &fakeBackend{}
	b.up.Store(true)
	o := config.ClusterOptions{Addrs: []string{sentinel.Addr}, SentinelMaster: "main"}
	f := fleet(t, o, b, 2)
	agree(t, f, health.Up)

	sentinel.Failover(t, "main")
	// The fleet keeps working: a change of the backend reaches both, written to the new primary.
	b.up.Store(false)
	agree(t, f, health.Down)
	rc := replica.Client(t)
	testutil.Eventually(t, 5*time.Second, func() bool {
		keys, err := rc.Keys(context.Background(), "gslb:health:*").Result()
		if err != nil || len(keys) != 1 {
			return false
		}
		v, err := rc.Get(context.Background(), keys[0]).Result()
		return err == nil && strings.Contains(v, `"ok":false`)
	}, "the new primary has no down result")
	since := time.Now().Add(testInterval)
	wantPerCycle(t, b, since, 1, "after the failover")
}

func TestRedisCluster(t *testing.T) {
	t.Parallel()
	nodes := testutil.StartRedisCluster(t, 3)
	b := &fakeBackend{}
	b.up.Store(true)
	o := config.ClusterOptions{Addrs: []string{nodes[0].Addr, nodes[1].Addr}}
	f := fleet(t, o, b, 2)
	agree(t, f, health.Up)
	since := time.Now().Add(testInterval)
	wantPerCycle(t, b, since, 1, "on a Redis Cluster")
	b.up.Store(false)
	agree(t, f, health.Down)
}

// wantPerCycle waits for four cycles of probes of b since since (twenty intervals at most) and
// fails unless each of the first three, all complete, had n probes; when names the situation.
func wantPerCycle(t *testing.T, b *fakeBackend, since time.Time, n int, when string) {
	t.Helper()
	testutil.Eventually(t, 20*testInterval, func() bool { return len(perCycle(b.probesSince(since))) >= 4 }, "no four cycles of probes "+when)
	if counts := perCycle(b.probesSince(since)); !slices.Equal(counts[:3], []int{n, n, n}) {
		t.Fatalf("%s, probes per cycle %v, want %d", when, counts, n)
	}
}

func TestCyclesProbed(t *testing.T) {
	tests := []struct {
		counts []int
		want   int
		ok     bool
	}{
		{[]int{1, 1, 1, 1, 1, 1}, 1, true},
		{[]int{1, 1, 1, 1, 0, 2}, 1, true},  // one probe late into the next cycle
		{[]int{1, 1, 1, 1, 0, 1}, 1, true},  // the late probe is the last counted
		{[]int{1, 2, 1, 1, 1, 1}, 1, false}, // a duplicate
		{[]int{1, 0, 0, 1, 1, 1}, 1, false}, // cycles not probed
		{[]int{3, 3, 3, 3, 3, 3}, 1, false}, // no coordination
		{[]int{3, 3, 3, 3, 3, 3}, 3, true},
		{[]int{3, 3, 2, 4, 3, 3}, 3, true},
		{[]int{3, 3, 1, 3, 3, 3}, 3, true}, // two probes late, the last cycle still under way
	}
	for _, tt := range tests {
		if got := cyclesProbed(tt.counts, tt.want); got != tt.ok {
			t.Errorf("cyclesProbed(%v, %d) = %v, want %v", tt.counts, tt.want, got, tt.ok)
		}
	}
}
