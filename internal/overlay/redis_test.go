package overlay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// newRedisStore opens a store of the overrides in r under the prefix "gslb:", polling every
// poll, with clock.
func newRedisStore(t *testing.T, r *testutil.Redis, poll time.Duration, clock Clock) (*Redis, *testutil.Log) {
	rdb := redis.NewClient(&redis.Options{
		Addr: r.Addr, Protocol: 2, MaxRetries: -1, DialerRetries: 1,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, ContextTimeoutEnabled: true,
	})
	log := &testutil.Log{}
	s := OpenRedis(rdb, RedisOptions{Prefix: "gslb:", Name: t.Name(), Poll: poll, Clock: clock, Log: log})
	s.Start()
	return s, log
}

// openRedis is newRedisStore, with the store closed when the test ends.
func openRedis(t *testing.T, r *testutil.Redis, poll time.Duration, clock Clock) (*Redis, *testutil.Log) {
	t.Helper()
	s, log := newRedisStore(t, r, poll, clock)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s, log
}

// hash returns the overrides hash as Redis holds it.
func hash(t *testing.T, c *redis.Client) map[string]string {
	t.Helper()
	h, err := c.HGetAll(context.Background(), "gslb:overrides").Result()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// waitFor waits until s has the override of key (present) or has none (!present).
func waitFor(t *testing.T, s Store, key string, present bool, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	testutil.Eventually(t, timeout, func() bool { _, ok := s.Get(key); return ok == present },
		"override of %s present=%v, want %v", key, !present, present)
	return time.Since(start)
}

func TestRedisApplyAndFormat(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t)
	clock := newFakeClock()
	s, _ := openRedis(t, r, time.Hour, clock)
	if s.Key() != "gslb:overrides" || len(s.List()) != 0 {
		t.Fatalf("new store: key %s, overrides %v", s.Key(), s.List())
	}
	var notified atomic.Int32
	defer s.Subscribe(func() { notified.Add(1); _ = s.List() })()
	until := clock.Now().Add(time.Hour)
	mustApply(t, s,
		Change{Key: "www.example.org.|192.0.2.1|443", Action: Drain, Expires: until, Reason: "kernel upgrade", By: "bob"},
		Change{Key: "www.example.org.|192.0.2.2|443", Action: Disable},
	)
	// Visible, and the subscribers told, when Apply returns.
	if notified.Load() != 1 {
		t.Fatalf("notified %d times after one Apply", notified.Load())
	}
	o, ok := s.Get("www.example.org.|192.0.2.1|443")
	if !ok || o.Action != Drain || !o.Expires.Equal(until) || o.Reason != "kernel upgrade" || o.By != "bob" || !o.Set.Equal(clock.Now()) {
		t.Fatalf("Get = %+v, %v", o, ok)
	}
	if got := keys(s.List()); fmt.Sprint(got) != "[www.example.org.|192.0.2.1|443 www.example.org.|192.0.2.2|443]" {
		t.Fatalf("List = %v", got)
	}

	// One field per backend, the override as JSON.
	c := r.Client(t)
	h := hash(t, c)
	var stored map[string]any
	if err := json.Unmarshal([]byte(h["www.example.org.|192.0.2.1|443"]), &stored); err != nil || len(h) != 2 {
		t.Fatalf("hash %v: %v", h, err)
	}
	if stored["key"] != "www.example.org.|192.0.2.1|443" || stored["action"] != "drain" || stored["expires"] != until.Format(time.RFC3339) ||
		stored["reason"] != "kernel upgrade" || stored["by"] != "bob" || stored["set"] == nil {
		t.Fatalf("stored override %v", stored)
	}

	mustApply(t, s, Change{Key: "www.example.org.|192.0.2.2|443", Action: Clear}, Change{Key: "never.set.|192.0.2.3|0", Action: Clear})
	if h := hash(t, c); len(h) != 1 {
		t.Fatalf("after clear, hash %v", h)
	}
	if _, ok := s.Get("www.example.org.|192.0.2.2|443"); ok || notified.Load() != 2 {
		t.Fatalf("cleared override still served (%v), %d notifications", ok, notified.Load())
	}
}

func TestRedisApplyIsAllOrNothing(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t)
	c := r.Client(t)
	ctx := context.Background()
	clock := newFakeClock()
	s, _ := openRedis(t, r, time.Hour, clock)
	mustApply(t, s, Change{Key: "a|192.0.2.1|0", Action: Disable})
	var notified atomic.Int32
	defer s.Subscribe(func() { notified.Add(1) })()

	good := Change{Key: "b|192.0.2.2|0", Action: Drain}
	for name, bad := range map[string]Change{
		"unknown action":    {Key: "c|192.0.2.3|0", Action: "maintenance"},
		"twice":             {Key: "b|192.0.2.2|0", Action: Disable},
		"past expiry":       {Key: "c|192.0.2.3|0", Action: Drain, Expires: clock.Now().Add(-time.Second)},
		"clear with expiry": {Key: "a|192.0.2.1|0", Action: Clear, Expires: clock.Now().Add(time.Hour)},
	} {
		if err := s.Apply(ctx, []Change{good, bad}); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if h := hash(t, c); len(h) != 1 || notified.Load() != 0 {
		t.Fatalf("after invalid changes: hash %v, %d notifications", h, notified.Load())
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Apply(cancelled, []Change{good}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Apply with a cancelled context: %v", err)
	}

	// A key of another type where the hash should be: Redis refuses the whole change.
	if err := c.Set(ctx, "other:overrides", "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1})
	log := &testutil.Log{}
	other := OpenRedis(rdb, RedisOptions{Prefix: "other:", Poll: time.Hour, Clock: clock, Log: log})
	defer other.Close()
	err := other.Apply(ctx, []Change{{Key: "a|192.0.2.1|0", Action: Clear}, good})
	if err == nil || errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "WRONGTYPE") || !strings.Contains(err.Error(), "other:overrides") {
		t.Fatalf("Apply onto a string: %v", err)
	}
	if v, _ := c.Get(ctx, "other:overrides").Result(); v != "not a hash" || len(other.List()) != 0 {
		t.Fatalf("after the refused change: key %q, overrides %v", v, other.List())
	}
	if n := log.Count("WARNING overrides: Redis failed"); n != 1 {
		t.Fatalf("%d warnings for two failures, want 1:\n%s", n, log)
	}
}

func TestRedisStoresSeeEachOther(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t)
	c := r.Client(t)
	ctx := context.Background()
	// No poll during the test: changes travel by the channel only.
	a, _ := openRedis(t, r, time.Hour, SystemClock{})
	b, blog := newRedisStore(t, r, time.Hour, SystemClock{}) // closed below
	var aNotified, bNotified atomic.Int32
	defer a.Subscribe(func() { aNotified.Add(1) })()
	defer b.Subscribe(func() { bNotified.Add(1); _ = b.List() })()

	mustApply(t, a, Change{Key: "k|192.0.2.1|0", Action: Disable, Reason: "from a"})
	took := waitFor(t, b, "k|192.0.2.1|0", true, 2*time.Second)
	t.Logf("a change on one store reached the other in %s", took)
	if o, _ := b.Get("k|192.0.2.1|0"); o.Reason != "from a" || bNotified.Load() != 1 {
		t.Fatalf("b: %+v, %d notifications", o, bNotified.Load())
	}
	mustApply(t, b, Change{Key: "k|192.0.2.1|0", Action: Clear}, Change{Key: "k|192.0.2.2|0", Action: Enable})
	waitFor(t, a, "k|192.0.2.1|0", false, 2*time.Second)
	waitFor(t, a, "k|192.0.2.2|0", true, 2*time.Second)
	// a was told of its own change once, of b's once: its own message changed nothing more.
	if aNotified.Load() != 2 {
		t.Fatalf("a notified %d times, want 2", aNotified.Load())
	}

	// Any writer: a field set by hand and announced.
	manual := `{"key":"k|192.0.2.3|0","action":"drain","reason":"redis-cli"}`
	if err := c.HSet(ctx, "gslb:overrides", "k|192.0.2.3|0", manual, "junk", "{not json").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Publish(ctx, "gslb:overrides:updates", "by hand").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, a, "k|192.0.2.3|0", true, 2*time.Second)
	waitFor(t, b, "k|192.0.2.3|0", true, 2*time.Second)
	if _, ok := b.Get("junk"); ok || blog.Count(`ignoring field "junk"`) != 1 {
		t.Fatalf("an invalid field: served %v, log:\n%s", ok, blog)
	}
	mustApply(t, a, Change{Key: "k|192.0.2.4|0", Action: Disable}) // everyone reads the hash again
	waitFor(t, b, "k|192.0.2.4|0", true, 2*time.Second)
	if n := blog.Count(`ignoring field "junk"`); n != 1 || len(hash(t, c)) != 4 {
		t.Fatalf("the invalid field was reported %d times, or removed:\n%s", n, blog)
	}

	// A closed store neither follows nor tells.
	start := time.Now()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %s", d)
	}
	before := bNotified.Load()
	mustApply(t, a, Change{Key: "k|192.0.2.5|0", Action: Disable})
	time.Sleep(100 * time.Millisecond)
	if bNotified.Load() != before {
		t.Fatal("a closed store told its subscribers")
	}
}

func TestRedisPollHealsMissedMessages(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t)
	s, _ := openRedis(t, r, 100*time.Millisecond, SystemClock{})
	// Written without a message: the next poll reads it.
	if err := r.Client(t).HSet(context.Background(), "gslb:overrides", "k|192.0.2.1|0", `{"action":"disable"}`).Err(); err != nil {
		t.Fatal(err)
	}
	took := waitFor(t, s, "k|192.0.2.1|0", true, 2*time.Second)
	t.Logf("an unannounced change was read after %s (poll 100ms)", took)
}

func TestRedisExpiry(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t)
	c := r.Client(t)
	clock := newFakeClock()
	a, _ := openRedis(t, r, 100*time.Millisecond, clock)
	b, _ := openRedis(t, r, 100*time.Millisecond, clock)
	var notified atomic.Int32
	defer b.Subscribe(func() { notified.Add(1) })()

	mustApply(t, a,
		Change{Key: "short|192.0.2.1|0", Action: Drain, Expires: clock.Now().Add(10 * time.Minute)},
		Change{Key: "forever|192.0.2.2|0", Action: Disable},
	)
	waitFor(t, b, "short|192.0.2.1|0", true, 2*time.Second)
	n := notified.Load()
	clock.Advance(10 * time.Minute)
	// Out of the answers at the expiry on every instance, by its clock...
	for name, s := range map[string]*Redis{"a": a, "b": b} {
		if _, ok := s.Get("short|192.0.2.1|0"); ok {
			t.Fatalf("%s still serves the drain at its expiry", name)
		}
	}
	if notified.Load() != n+1 {
		t.Fatalf("b notified %d times of the expiry", notified.Load()-n)
	}
	// ...and out of Redis at the next poll of one of them.
	testutil.Eventually(t, 2*time.Second, func() bool { _, ok := hash(t, c)["short|192.0.2.1|0"]; return !ok },
		"the expired drain is still in Redis: %v", hash(t, c))
	if got := keys(b.List()); fmt.Sprint(got) != "[forever|192.0.2.2|0]" {
		t.Fatalf("after the expiry: %v", got)
	}

}

func TestRedisExpiredWhenRead(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t)
	c := r.Client(t)
	ctx := context.Background()
	clock := newFakeClock()
	// Expired when read: dropped from the start, and from Redis.
	expired := fmt.Sprintf(`{"key":"old|192.0.2.3|0","action":"drain","expires":%q}`, clock.Now().Add(-time.Minute).Format(time.RFC3339))
	if err := c.HSet(ctx, "gslb:overrides", "old|192.0.2.3|0", expired).Err(); err != nil {
		t.Fatal(err)
	}
	late, _ := openRedis(t, r, time.Hour, clock)
	if _, ok := late.Get("old|192.0.2.3|0"); ok {
		t.Fatal("an override that expired before the store opened is served")
	}
	if _, ok := hash(t, c)["old|192.0.2.3|0"]; ok {
		t.Fatal("an override read expired was left in Redis")
	}

	// The deletion of an expired override spares a newer one set meanwhile.
	if err := c.HSet(ctx, "gslb:overrides", "old|192.0.2.3|0", `{"action":"disable"}`).Err(); err != nil {
		t.Fatal(err)
	}
	late.redisMu.Lock()
	_, err := late.run(ctx, []any{opExpire, "old|192.0.2.3|0", expired})
	late.redisMu.Unlock()
	if v := hash(t, c)["old|192.0.2.3|0"]; err != nil || v != `{"action":"disable"}` {
		t.Fatalf("a stale expiry deleted a newer override: %q, %v", v, err)
	}
}

func TestRedisRestart(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t, "--appendonly", "yes") // the overrides must survive Redis
	ctx := context.Background()
	a, alog := openRedis(t, r, 200*time.Millisecond, SystemClock{})
	b, blog := openRedis(t, r, 200*time.Millisecond, SystemClock{})
	mustApply(t, a, Change{Key: "k|192.0.2.1|0", Action: Disable})
	waitFor(t, b, "k|192.0.2.1|0", true, 2*time.Second)

	r.Stop()
	var notified atomic.Int32
	defer a.Subscribe(func() { notified.Add(1) })()
	for range 2 {
		err := a.Apply(ctx, []Change{{Key: "k|192.0.2.2|0", Action: Disable}, {Key: "k|192.0.2.1|0", Action: Clear}})
		if err == nil || errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "gslb:overrides") {
			t.Fatalf("Apply with Redis down: %v", err)
		}
	}
	time.Sleep(time.Second) // a few failed polls
	for name, s := range map[string]*Redis{"a": a, "b": b} {
		if got := keys(s.List()); fmt.Sprint(got) != "[k|192.0.2.1|0]" {
			t.Fatalf("%s with Redis down serves %v, want the overrides read last", name, got)
		}
	}
	if notified.Load() != 0 {
		t.Fatal("a failed change told the subscribers")
	}
	for name, log := range map[string]*testutil.Log{"a": alog, "b": blog} {
		if n := log.Count("WARNING overrides: Redis failed"); n != 1 {
			t.Fatalf("%s logged %d failures, want 1:\n%s", name, n, log)
		}
	}

	r.Restart(t)
	start := time.Now()
	testutil.Eventually(t, 5*time.Second, func() bool { return a.Apply(ctx, []Change{{Key: "k|192.0.2.2|0", Action: Disable}}) == nil },
		"Apply still fails after Redis restarted:\n%s", alog)
	t.Logf("Apply succeeded again %s after Redis restarted", time.Since(start))
	took := waitFor(t, b, "k|192.0.2.2|0", true, 3*time.Second)
	t.Logf("the other store followed %s later", took)
	if _, ok := b.Get("k|192.0.2.1|0"); !ok {
		t.Fatal("the override kept by Redis through its restart is gone")
	}
	testutil.Eventually(t, 2*time.Second, func() bool { return blog.Count("INFO overrides: Redis answers again") == 1 },
		"b did not log the recovery:\n%s", blog)
}

func TestRedisConcurrentApply(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t)
	a, _ := openRedis(t, r, time.Hour, SystemClock{})
	b, _ := openRedis(t, r, time.Hour, SystemClock{})
	defer a.Subscribe(func() { _ = a.List() })()
	defer b.Subscribe(func() { _ = b.List() })()
	const workers, each = 4, 15
	var wg sync.WaitGroup
	for i, s := range []*Redis{a, b, a, b} {
		wg.Go(func() {
			for j := range each {
				key := fmt.Sprintf("r%d|192.0.2.%d|0", i, j)
				if err := s.Apply(context.Background(), []Change{{Key: key, Action: Disable}}); err != nil {
					t.Error(err)
				}
				if _, ok := s.Get(key); !ok {
					t.Errorf("%s not served after its Apply returned", key)
				}
			}
		})
	}
	wg.Wait()
	for _, s := range []*Redis{a, b} {
		testutil.Eventually(t, 2*time.Second, func() bool { return len(s.List()) == workers*each },
			"%d overrides, want %d", len(s.List()), workers*each)
	}
}

func TestRedisOnARedisCluster(t *testing.T) {
	t.Parallel()
	nodes := testutil.StartRedisCluster(t, 3)
	open := func() *Redis {
		rdb := redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: []string{nodes[0].Addr, nodes[1].Addr, nodes[2].Addr}, Protocol: 2, MaxRetries: -1, ContextTimeoutEnabled: true,
		})
		s := OpenRedis(rdb, RedisOptions{Prefix: "gslb:", Poll: time.Hour, Log: &testutil.Log{}})
		s.Start()
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	mustApply(t, a, Change{Key: "k|192.0.2.1|0", Action: Drain, Reason: "on a cluster"})
	took := waitFor(t, b, "k|192.0.2.1|0", true, 2*time.Second)
	t.Logf("on a Redis Cluster, a change reached the other store in %s", took)
	mustApply(t, b, Change{Key: "k|192.0.2.1|0", Action: Clear})
	waitFor(t, a, "k|192.0.2.1|0", false, 2*time.Second)
}

func TestRedisScheduledDrain(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t)
	clock := newFakeClock()
	a, _ := openRedis(t, r, 100*time.Millisecond, clock)
	b, _ := openRedis(t, r, 100*time.Millisecond, clock)
	var notified atomic.Int32
	defer b.Subscribe(func() { notified.Add(1) })()

	const key = "www.example.org.|192.0.2.1|443"
	starts := clock.Now().Add(10 * time.Minute)
	mustApply(t, a, Change{Key: key, Action: Drain, Starts: starts})
	waitFor(t, b, key, true, 2*time.Second)
	if o, _ := b.Get(key); !o.Starts.Equal(starts) || !o.Pending(clock.Now()) {
		t.Fatalf("b reads the scheduled drain as %+v", o)
	}
	n := notified.Load()
	clock.Advance(10 * time.Minute)
	if notified.Load() != n+1 {
		t.Fatalf("b notified %d times of the start, want once", notified.Load()-n)
	}
	if o, ok := b.Get(key); !ok || o.Pending(clock.Now()) {
		t.Fatalf("after the start b has %+v, %v", o, ok)
	}
}
