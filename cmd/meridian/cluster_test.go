package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/redis/go-redis/v9"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// These tests run fleets of meridian processes on one redis-server. Every instance serves the
// record app.example.org.: a primary on 127.0.0.1, whose probes the test counts, and a secondary
// on 127.0.0.2 that is always up.

// countingListener accepts TCP connections and closes them, noting when each came.
type countingListener struct {
	addr string
	mu   sync.Mutex
	l    net.Listener
	at   []time.Time
}

func listenCounting(t *testing.T, addr string) *countingListener {
	t.Helper()
	c := &countingListener{addr: addr}
	c.open(t)
	c.addr = c.l.Addr().String()
	t.Cleanup(c.close)
	return c
}

// open listens (again) on the listener's address.
func (c *countingListener) open(t *testing.T) {
	t.Helper()
	l := testutil.ServeTCP(t, c.addr, func(net.Conn) {
		c.mu.Lock()
		c.at = append(c.at, time.Now())
		c.mu.Unlock()
	})
	c.mu.Lock()
	c.l = l
	c.mu.Unlock()
}

func (c *countingListener) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.l.Close()
}

func (c *countingListener) port() int { return c.l.Addr().(*net.TCPAddr).Port }

// perCycle returns the connections per cycle of interval since start.
func (c *countingListener) perCycle(start time.Time, interval time.Duration) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, _ := slices.BinarySearchFunc(c.at, start, time.Time.Compare)
	return testutil.PerCycle(c.at[i:], interval)
}

// fleetZone is the zone file of the fleet's record: primary checks on primaryCheck (a YAML
// check), a TCP check of the secondary on secondaryPort.
func fleetZone(interval, timeout time.Duration, fall int, primaryCheck string, secondaryPort int) string {
	return fmt.Sprintf(`
records:
  app.example.org.:
    mode: failover
    scrape_interval: %s
    scrape_timeout: %s
    scrape_retries: 0
    backends:
      - address: 127.0.0.1
        priority: 1
        rise: 1
        fall: %d
        healthchecks: [%s]
      - address: 127.0.0.2
        priority: 2
        healthchecks: [{type: tcp, params: {port: %d}}]
`, interval, timeout, fall, primaryCheck, secondaryPort)
}

func tcpCheck(port int) string { return fmt.Sprintf("{type: tcp, params: {port: %d}}", port) }

// secondary starts the always-up secondary backend and returns its port.
func secondary(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go acceptAndClose(l)
	return l.Addr().(*net.TCPAddr).Port
}

// member starts one instance of the fleet on r.
// startFleet starts Redis, a counting primary and the first member of a fleet serving
// fleetZone over them (the primary, then a secondary), and waits until that member answers the
// primary.
func startFleet(t *testing.T, interval, timeout time.Duration, fall int) (*testutil.Redis, *countingListener, string, *testutil.Server) {
	t.Helper()
	r := testutil.StartRedis(t)
	primary := listenCounting(t, "127.0.0.1:0")
	zone := fleetZone(interval, timeout, fall, tcpCheck(primary.port()), secondary(t))
	first := member(t, zone, r)
	allAnswer(t, []*testutil.Server{first}, "127.0.0.1")
	return r, primary, zone, first
}

func member(t *testing.T, zone string, r *testutil.Redis) *testutil.Server {
	t.Helper()
	return serveZone(t, zone, fmt.Sprintf("  redis_enable\n  redis_addr %s\n", r.Addr))
}

func appAnswer(t *testing.T, s *testutil.Server) []string {
	return addresses(s.Query(t, "udp", "app.example.org", dns.TypeA))
}

// allAnswer waits until every server answers want.
// queryAllAlong asks every server of fleet for name every 10 ms until the returned function is
// called, which fails the test if any query failed or got no answer.
func queryAllAlong(t *testing.T, fleet []*testutil.Server, name string) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for i, s := range fleet {
		wg.Go(func() {
			c := &dns.Client{Timeout: time.Second}
			m := new(dns.Msg)
			m.SetQuestion(name, dns.TypeA)
			for {
				select {
				case <-done:
					return
				case <-time.After(10 * time.Millisecond):
				}
				resp, _, err := c.Exchange(m, s.Addr)
				if err != nil || resp.Rcode != dns.RcodeSuccess || len(resp.Answer) == 0 {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("instance %d: %v %v", i, err, resp))
					mu.Unlock()
				}
			}
		})
	}
	return func() {
		close(done)
		wg.Wait()
		if len(failures) > 0 {
			t.Errorf("%d queries failed, first: %s", len(failures), failures[0])
		}
	}
}

func allAnswer(t *testing.T, fleet []*testutil.Server, want string) {
	t.Helper()
	for i, s := range fleet {
		testutil.Eventually(t, 10*time.Second, func() bool { return slices.Equal(appAnswer(t, s), []string{want}) },
			"instance %d answers %v, want %s\n%s", i, appAnswer(t, s), want, s.Logs())
	}
}

// instanceID returns the cluster instance id the server logged at start.
var instanceLine = regexp.MustCompile(`cluster mode: instance (\S+),`)

func instanceID(t *testing.T, s *testutil.Server) string {
	t.Helper()
	m := instanceLine.FindStringSubmatch(s.Logs())
	if m == nil {
		t.Fatalf("no instance id in the log:\n%s", s.Logs())
	}
	return m[1]
}

func TestClusterProbesEachBackendOncePerCycle(t *testing.T) {
	t.Parallel()
	const interval = time.Second
	r, primary, zone, first := startFleet(t, interval, 500*time.Millisecond, 1)
	fleet := []*testutil.Server{first}
	fleet = append(fleet, member(t, zone, r), member(t, zone, r))

	since := time.Now().Add(interval)
	testutil.Eventually(t, 10*interval, func() bool { return len(primary.perCycle(since, interval)) >= 5 }, "the primary is not probed")
	if counts := primary.perCycle(since, interval); !slices.Equal(counts[:4], []int{1, 1, 1, 1}) {
		t.Fatalf("three instances probed the primary %v times per cycle, want once", counts)
	}

	primary.close()
	allAnswer(t, fleet, "127.0.0.2")
}

func TestClusterKeepsAnsweringWithoutRedis(t *testing.T) {
	t.Parallel()
	const interval = time.Second
	r, primary, zone, first := startFleet(t, interval, 500*time.Millisecond, 1)
	fleet := []*testutil.Server{first}
	fleet = append(fleet, member(t, zone, r))
	allAnswer(t, fleet, "127.0.0.1")

	// Query both instances all along: not one query may fail.
	defer queryAllAlong(t, fleet, "app.example.org.")()

	r.Kill()
	// Each instance probes on its own, and follows the backend.
	since := time.Now().Add(interval)
	testutil.Eventually(t, 10*interval, func() bool { return len(primary.perCycle(since, interval)) >= 3 }, "the primary is not probed")
	if counts := primary.perCycle(since, interval); !slices.Equal(counts[:2], []int{2, 2}) {
		t.Fatalf("without Redis, the primary was probed %v times per cycle, want by both instances", counts)
	}
	primary.close()
	allAnswer(t, fleet, "127.0.0.2")
	for i, s := range fleet {
		if n := strings.Count(s.Logs(), "lost Redis"); n != 1 {
			t.Fatalf("instance %d logged the lost Redis %d times, want once:\n%s", i, n, s.Logs())
		}
	}

	// Redis returns, empty: the instances resubscribe, share the probing again and agree.
	r.Restart(t)
	for i, s := range fleet {
		testutil.Eventually(t, 15*time.Second, func() bool { return strings.Contains(s.Logs(), "Redis is back") },
			"instance %d did not reconnect:\n%s", i, s.Logs())
	}
	primary.open(t)
	allAnswer(t, fleet, "127.0.0.1")
	since = time.Now().Add(interval)
	testutil.Eventually(t, 10*interval, func() bool { return len(primary.perCycle(since, interval)) >= 3 }, "the primary is not probed")
	if counts := primary.perCycle(since, interval); !slices.Equal(counts[:2], []int{1, 1}) {
		t.Fatalf("after Redis came back, the primary was probed %v times per cycle, want once", counts)
	}
}

func TestClusterLockHolderKilled(t *testing.T) {
	t.Parallel()
	const (
		interval = 2 * time.Second
		timeout  = 800 * time.Millisecond
	)
	r := testutil.StartRedis(t)
	// The primary answers its HTTP checks after 300 ms: time to kill the instance that probes.
	requests := make(chan time.Time, 100)
	web := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests <- time.Now()
		time.Sleep(300 * time.Millisecond)
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go web.Serve(l)
	t.Cleanup(func() { web.Close() })
	port := l.Addr().(*net.TCPAddr).Port
	zone := fleetZone(interval, timeout, 1, fmt.Sprintf("{type: http, params: {port: %d, enable_tls: false}}", port), secondary(t))
	first := member(t, zone, r)
	allAnswer(t, []*testutil.Server{first}, "127.0.0.1")
	fleet := []*testutil.Server{first, member(t, zone, r), member(t, zone, r)}
	byID := map[string]*testutil.Server{}
	for _, s := range fleet {
		byID[instanceID(t, s)] = s
	}

	// The primary's check: the one whose result key names the primary.
	rc := r.Client(t)
	check := primaryCheck(t, rc)
	for len(requests) > 0 {
		<-requests
	}
	// A probe is in flight: kill the instance that holds its cycle's lock.
	<-requests
	var cycle int64
	var holder string
	testutil.Eventually(t, interval, func() bool {
		var ok bool
		cycle, holder, ok = newestLock(t, rc, check)
		return ok
	}, "no lock of the primary's check while it is probed")
	victim := byID[holder]
	if victim == nil {
		t.Fatalf("the lock of cycle %d is held by %q, no instance of the fleet", cycle, holder)
	}
	if err := victim.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The next cycle is probed by a survivor.
	var next int64
	testutil.Eventually(t, 3*interval, func() bool {
		n, by, ok := newestLock(t, rc, check)
		next = n
		return ok && n > cycle && by != holder && byID[by] != nil
	}, "no survivor took the lock of cycle %d", cycle+1)
	start := time.Unix(0, next*int64(interval))
	testutil.Eventually(t, interval, func() bool {
		return len(requests) > 0 && (<-requests).After(start)
	}, "the primary was not probed in cycle %d", next)
	for _, s := range fleet {
		if s != victim {
			allAnswer(t, []*testutil.Server{s}, "127.0.0.1")
		}
	}
}

// primaryCheck returns the id of the check of the primary, from its result key.
func primaryCheck(t *testing.T, rc *redis.Client) string {
	t.Helper()
	var id string
	testutil.Eventually(t, 5*time.Second, func() bool {
		keys, err := rc.Keys(context.Background(), "gslb:health:*").Result()
		if err != nil {
			return false
		}
		for _, k := range keys {
			v, err := rc.Get(context.Background(), k).Result()
			var m struct {
				Check    string
				Backends []string
			}
			if err == nil && json.Unmarshal([]byte(v), &m) == nil && slices.Contains(m.Backends, "app.example.org.|127.0.0.1|0") {
				id = m.Check
				return true
			}
		}
		return false
	}, "no result key for the primary")
	return id
}

// newestLock returns the newest cycle of check with a lock, and who holds it; ok is false when
// no lock is there now (between two cycles, or one that expired since it was listed).
func newestLock(t *testing.T, rc *redis.Client, check string) (cycle int64, holder string, ok bool) {
	t.Helper()
	ctx := context.Background()
	keys, err := rc.Keys(ctx, "gslb:lock:"+check+":*").Result()
	if err != nil {
		t.Fatalf("list the locks of the primary's check: %v", err)
	}
	for _, k := range keys {
		var n int64
		fmt.Sscan(k[strings.LastIndexByte(k, ':')+1:], &n)
		cycle = max(cycle, n)
	}
	if cycle == 0 {
		return 0, "", false // between two cycles' locks
	}
	holder, err = rc.Get(ctx, fmt.Sprintf("gslb:lock:%s:%d", check, cycle)).Result()
	if errors.Is(err, redis.Nil) {
		return 0, "", false // it expired since it was listed
	}
	if err != nil {
		t.Fatalf("read the lock of cycle %d: %v", cycle, err)
	}
	return cycle, holder, true
}

func TestClusterNewInstanceAnswersTheFleetsView(t *testing.T) {
	t.Parallel()
	const interval = 5 * time.Second
	// The primary goes down after two failures: a fall that takes a whole interval.
	r, primary, zone, first := startFleet(t, interval, time.Second, 2)

	// The primary dies. The fleet still counts it up (one failure at most, of two), while a
	// probe of a new instance would find it down, and an instance without a result would not
	// answer it either: only the fleet's view answers the primary.
	primary.close()
	late := member(t, zone, r)
	if got := appAnswer(t, late); !slices.Equal(got, []string{"127.0.0.1"}) {
		t.Fatalf("a new instance answers %v, want the fleet's view (127.0.0.1 up)\n%s", got, late.Logs())
	}
	if !strings.Contains(late.Logs(), "probed by "+instanceID(t, first)) {
		t.Fatalf("the new instance did not start from the fleet's results:\n%s", late.Logs())
	}
}
