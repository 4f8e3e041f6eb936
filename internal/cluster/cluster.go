// Package cluster is Meridian's cluster mode: the instances of one deployment share their
// health checks through Redis. Per check and cycle one instance takes a lock and probes; it
// writes the raw result to a key and publishes it, and every instance applies it through its
// own rise/fall machines, so that all answer alike while each backend is probed once per cycle.
// When Redis is unreachable every instance probes on its own, and it catches up by itself when
// Redis returns. In quorum mode every instance probes every cycle and publishes its result as a
// vote, and each derives the same verdict from the fleet's fresh votes (quorum.go), leaving
// out the votes of instances whose own network path fails (canary.go). The Client implements
// health.Coordinator; docs/cluster.md describes the keys, messages and failure modes.
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// Receiver applies results that other instances shared, and in quorum mode the verdicts of
// the fleet's votes; health.Manager is one.
type Receiver interface {
	Receive(s health.Shared) bool
	Decide(v health.Verdict) bool
}

// Client is one instance's membership in a cluster: its Redis connection, subscription, locks
// and waits. Create it with New, hand it to the health manager as its Coordinator, then Connect it
// to the manager before the first Sync, Run it when the server starts, and Close it after the
// manager stopped.
type Client struct {
	opts   config.ClusterOptions
	log    health.Logger
	id     string
	rdb    redis.UniversalClient
	keys   keyspace
	recv   Receiver
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	subscribed bool        // Connect's subscription was confirmed, for the listener
	up         atomic.Bool // connected and subscribed
	failing    atomic.Bool // an operation failed since the last success (logged once)
	isolated   atomic.Bool // quorum mode: most canaries failed in the last round (canary.go)
	ops        chan op     // claims and publications for the writer
	poke       chan struct{}

	mu     sync.Mutex
	ps     *redis.PubSub
	checks map[string]health.Check
	groups map[time.Duration]*group // the checks by interval, for the reconcile
	waits  map[string]*wait         // lost turns waiting for the winner's result, by check
	// Quorum mode (quorum.go): the votes of each check, the checks whose newest verdict had
	// too few voters, and the canaries that failed in the last round.
	ballots        map[string]*ballot
	degraded       map[string]bool
	canariesFailed int
}

// Logger is where the client reports changes of its connection.
type Logger = health.Logger

// New returns a client for o (defaults applied) that does not connect yet. It fails when the
// TLS files of o cannot be used.
func New(o config.ClusterOptions, log Logger) (*Client, error) {
	o = o.WithDefaults()
	id := InstanceID()
	rdb, err := newClient(o, "meridian-"+id, log)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{
		opts: o, log: log, id: id, rdb: rdb, keys: keyspace{o.KeyPrefix},
		ctx: ctx, cancel: cancel,
		ops:      make(chan op, opQueue),
		poke:     make(chan struct{}, 1),
		checks:   make(map[string]health.Check),
		groups:   make(map[time.Duration]*group),
		waits:    make(map[string]*wait),
		ballots:  make(map[string]*ballot),
		degraded: make(map[string]bool),
	}, nil
}

// InstanceID returns a new name for this instance: host name, process id and a random suffix,
// so that a restarted process is a new instance.
func InstanceID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// ID returns the instance's id, the value of its locks and the instance of its results.
func (c *Client) ID() string { return c.id }

// Connect connects and subscribes to the results channel, waiting up to the dial timeout, so
// that the manager's first Sync seeds its checks from the fleet; results will be delivered to
// r. An unreachable Redis is logged once and retried by the loops: until it answers, every
// check is probed here. In quorum mode with canaries it checks them first, so that an isolated
// instance never counts. Call Run to start the loops.
func (c *Client) Connect(r Receiver) {
	c.recv = r
	c.log.Infof("cluster mode: instance %s, %s, sync mode %s, key prefix %q%s", c.id, describe(c.opts), c.opts.SyncMode, c.opts.KeyPrefix, c.describeVantage())
	if c.opts.DB != 0 && len(c.opts.Addrs) > 1 && c.opts.SentinelMaster == "" {
		c.log.Warningf("cluster: redis_db %d is not used: a Redis Cluster has only database 0", c.opts.DB)
	}
	if c.canaries() {
		c.checkCanaries()
	}
	fallbackGauge.Inc() // until subscribed
	c.mu.Lock()
	c.ps = c.rdb.Subscribe(c.ctx, c.channels()...)
	ps := c.ps
	c.mu.Unlock()
	msg, err := ps.ReceiveTimeout(c.ctx, dialTimeout)
	if _, ok := msg.(*redis.Subscription); ok && err == nil {
		c.subscribed = true
		c.setUp()
		return
	}
	if err == nil {
		err = fmt.Errorf("unexpected %T instead of the subscription", msg)
	}
	c.log.Warningf("cluster: Redis unreachable (%v): probing every check here until it answers", err)
	errorsTotal.WithLabelValues(opSubscribe).Inc()
}

// Run starts the client's loops: the listener of the subscription, the writer of claims and
// results, the reconcile, and in quorum mode with canaries their watch. Call it once, after
// Connect.
func (c *Client) Run() {
	loops := 3
	if c.canaries() {
		loops++
		go c.watchCanaries()
	}
	c.wg.Add(loops)
	go c.listen(c.subscribed)
	go c.write()
	go c.reconcile()
}

// canaries reports whether the instance checks canaries (quorum mode with redis_canary).
func (c *Client) canaries() bool { return c.quorum() && len(c.opts.Quorum.Canaries) > 0 }

// Close stops the loops, ends the turns still open and closes the connections. Stop the health
// manager first.
func (c *Client) Close() {
	c.cancel()
	c.mu.Lock()
	if c.ps != nil {
		_ = c.ps.Close()
	}
	waits := c.waits
	c.waits = make(map[string]*wait)
	c.dropBallotsLocked(nil)
	c.mu.Unlock()
	c.wg.Wait()
	for _, w := range waits {
		w.timer.Stop()
		w.turn.End()
	}
	for {
		select {
		case o := <-c.ops:
			if o.turn != nil {
				o.turn.End()
			}
		default:
			_ = c.rdb.Close()
			if c.recv != nil { // started: take this client's share out of the gauges
				if c.up.Load() {
					connectedGauge.Dec()
				} else {
					fallbackGauge.Dec()
				}
				c.dropCanaryGauges()
			}
			return
		}
	}
}

// Exclusive implements health.Coordinator: in lock mode one instance probes each cycle, and in
// quorum mode one verdict decides it.
func (c *Client) Exclusive() bool {
	return c.opts.SyncMode == config.SyncLock || c.quorum()
}

// quorum reports whether the instances vote (quorum mode).
func (c *Client) quorum() bool { return c.opts.SyncMode == config.SyncQuorum }

// Sources implements health.Coordinator: the addresses of probe_source.
func (c *Client) Sources() []netip.Addr { return c.opts.ProbeSources }

// channels are the pub/sub channels the client listens to: the results', and in quorum mode
// the votes'.
func (c *Client) channels() []string {
	if c.quorum() {
		return []string{c.keys.channel(), c.keys.voteChannel()}
	}
	return []string{c.keys.channel()}
}

// Watch implements health.Coordinator: it notes the checks the manager runs, for the reconcile
// and to read the messages about them.
func (c *Client) Watch(checks []health.Check) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.groups
	c.checks = make(map[string]health.Check, len(checks))
	c.groups = make(map[time.Duration]*group)
	now := time.Now()
	for _, ch := range checks {
		c.checks[ch.ID] = ch
		g := c.groups[ch.Interval]
		if g == nil {
			g = &group{next: now.Add(ch.Interval)}
			if o := old[ch.Interval]; o != nil {
				g.next = o.next
			}
			c.groups[ch.Interval] = g
		}
		g.ids = append(g.ids, ch.ID)
	}
	c.dropBallotsLocked(c.checks)
	select {
	case c.poke <- struct{}{}:
	default:
	}
}

// Seed implements health.Coordinator: it reads the result keys of checks, within the operation
// timeout; in quorum mode the probed checks' votes instead, and it returns the status the
// fleet's newest usable vote reports. With Redis unreachable it returns nothing, and the
// checks start unknown.
func (c *Client) Seed(checks []health.Check) []health.Shared {
	if !c.up.Load() {
		return nil
	}
	ids := make([]string, len(checks))
	for i, ch := range checks {
		ids[i] = ch.ID
	}
	var out []health.Shared
	c.fetch(ids, sourceKey, func(s health.Shared) { out = append(out, s) })
	if c.quorum() {
		out = append(out, c.seedVotes(ids)...)
	}
	return out
}

// Due implements health.Coordinator. In lock mode the turn's claim goes to the writer, which
// sends the claims of one moment in one round trip; in none mode this instance probes and
// publishes. Without Redis it probes and keeps the result. In quorum mode it votes, with Redis
// or without.
func (c *Client) Due(t *health.Turn) {
	switch {
	case c.quorum():
		t.Vote()
	case !c.up.Load():
		if c.Exclusive() {
			localProbesTotal.WithLabelValues("redis_down").Inc()
		}
		t.Probe(false)
	case !c.Exclusive():
		t.Probe(true)
	default:
		select {
		case c.ops <- op{turn: t}:
		default:
			localProbesTotal.WithLabelValues("queue_full").Inc()
			t.Probe(false)
		}
	}
}

// Publish implements health.Coordinator: the writer stores the result in its key, with a TTL of
// twice the interval, and publishes it. A result that finds the writer's queue full is dropped
// (and counted): the other instances then probe that cycle themselves.
func (c *Client) Publish(s health.Shared) {
	if c.quorum() {
		c.vote(s)
		return
	}
	if !c.up.Load() {
		return
	}
	payload, err := encode(s, c.id, voteInfo{})
	if err != nil {
		errorsTotal.WithLabelValues(opPublish).Inc()
		return
	}
	ttl := 2 * c.interval(s.Check)
	if ttl == 0 {
		return // no longer watched: removed by a reload while it was probed
	}
	select {
	case c.ops <- op{key: c.keys.result(s.Check), payload: payload, ttl: ttl}:
	default:
		errorsTotal.WithLabelValues(opPublish).Inc()
	}
}

// interval returns the interval of a watched check, and 0 for others.
func (c *Client) interval(check string) time.Duration {
	d, _ := c.intervalOf(check)
	return d
}

func (c *Client) intervalOf(check string) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.checks[check]
	return ch.Interval, ok
}

// decode parses a result or vote from source. It reports false for a message that is not
// one, is about a check not run here, or is this instance's own; it counts the others.
func (c *Client) decode(payload []byte, source string) (health.Shared, voteInfo, bool) {
	s, vi, err := decode(payload, c.intervalOf)
	if err != nil {
		errorsTotal.WithLabelValues(opDecode).Inc()
		return s, vi, false
	}
	if _, watched := c.intervalOf(s.Check); !watched || s.Instance == c.id {
		return s, vi, false
	}
	receivedTotal.WithLabelValues(source).Inc()
	return s, vi, true
}

// apply applies a received result and ends the wait it settles; in quorum mode a result of a
// probed check is a vote, which it records. It reports whether the result was applied or the
// vote recorded.
func (c *Client) apply(s health.Shared, vi voteInfo) bool {
	if c.isVote(s.Check) {
		return c.record(s, vi)
	}
	applied := c.recv.Receive(s)
	c.settle(s.Check, s.Cycle)
	return applied
}

// setUp notes that the client is connected and subscribed, and reports whether it was not.
func (c *Client) setUp() bool {
	if c.up.Swap(true) {
		return false
	}
	connectedGauge.Inc()
	fallbackGauge.Dec()
	return true
}

// setDown notes that the connection is lost, and logs it once.
func (c *Client) setDown(err error) {
	errorsTotal.WithLabelValues(opSubscribe).Inc()
	if !c.up.Swap(false) {
		return
	}
	connectedGauge.Dec()
	fallbackGauge.Inc()
	c.log.Warningf("cluster: lost Redis (%v): probing every check here until it returns", err)
}

// failed counts a failed operation, and logs the first of a series.
func (c *Client) failed(kind string, err error) {
	errorsTotal.WithLabelValues(kind).Inc()
	if !c.failing.Swap(true) {
		c.log.Warningf("cluster: Redis %s failed (%v): probing here where needed; further errors are only counted", kind, err)
	}
}

// succeeded ends a series of failed operations.
func (c *Client) succeeded() {
	if c.failing.Swap(false) {
		c.log.Infof("cluster: Redis operations succeed again")
	}
}
