package health

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/health/probe"
)

// job is one distinct check on one schedule, shared by every backend that has it.
type job struct {
	check    checkKey // the compiled check's Key, in the job rather than a string of its own
	prober   probe.Prober
	timeout  time.Duration
	interval time.Duration
	retries  int32
	index    int32 // position in the queue, -1 when not queued
	running  bool  // a probe of this job is in flight
	removed  bool  // no backend uses the job any more
	// one is the subscription of the one backend that has the check (the common case), more
	// those of the backends that share it when there are several: see subscribers.
	one  [1]*subscription
	more *[]*subscription

	// next is when the job runs next: 8 bytes where a time.Time takes 24, and most checks
	// have a job of their own.
	next jobTime

	shared  *sharedJob    // cluster mode only
	metrics *probeMetrics // the series of its type, which it names
}

func newJob(c *probe.Compiled, spec *Spec) *job {
	j := &job{check: keyOf(c.Key), prober: c.Prober, timeout: c.Timeout, interval: spec.Interval, retries: int32(spec.Retries), index: -1, metrics: probeMetricsFor(c.Type)}
	return j
}

// subscribers returns the subscriptions of the backends that have j's check.
func (j *job) subscribers() []*subscription {
	if j.more != nil {
		return *j.more
	}
	if j.one[0] != nil {
		return j.one[:]
	}
	return nil
}

// subscribe adds sub to j's subscribers.
func (j *job) subscribe(sub *subscription) {
	switch {
	case j.more != nil:
		*j.more = append(*j.more, sub)
	case j.one[0] == nil:
		j.one[0] = sub
	default:
		j.more = &[]*subscription{j.one[0], sub}
		j.one[0] = nil
	}
}

// unsubscribeAll empties j's subscribers, for a Sync to subscribe those that have it now.
func (j *job) unsubscribeAll() {
	j.one[0] = nil
	if j.more != nil {
		*j.more = (*j.more)[:0]
	}
}

// typ returns the type of j's check.
func (j *job) typ() string { return j.metrics.typ }

// jobIdentity groups identical checks: same probe (the compiled check's 16-byte Key), same
// interval and retries. Its bytes are what a check's fleet-wide ID is a digest of (checkID).
type jobIdentity [16 + 8 + 8]byte

// jobKey returns the jobIdentity of check c of spec.
func jobKey(c *probe.Compiled, spec *Spec) jobIdentity {
	return makeJobKey(keyOf(c.Key), spec.Interval, spec.Retries)
}

// checkKey is a compiled check's Key as a job keeps it: its 16 bytes (a key, the first 16 bytes
// of a digest, has no more; a longer one, as tests make, is cut there, as jobIdentity always
// did).
type checkKey [16]byte

// keyOf returns the checkKey of a compiled check's Key.
func keyOf(key string) checkKey {
	var k checkKey
	copy(k[:], key)
	return k
}

func makeJobKey(check checkKey, interval time.Duration, retries int) jobIdentity {
	var k jobIdentity
	copy(k[:], check[:])
	binary.LittleEndian.PutUint64(k[16:], uint64(interval))
	binary.LittleEndian.PutUint64(k[24:], uint64(retries))
	return k
}

// key returns j's jobIdentity.
func (j *job) key() jobIdentity { return makeJobKey(j.check, j.interval, int(j.retries)) }

// jobSet is the jobs of one Sync by key, the fresh ones among them, and the jobs that ran
// before it, which it takes over when a check is still there.
type jobSet struct {
	byKey map[jobIdentity]*job
	old   map[jobIdentity]*job
	fresh []*job
	// sources are the instance's probe_source, which new jobs' probers bind to.
	sources []netip.Addr
}

// newJobs returns the jobSet of a Sync of n specs. The manager keeps no map of its jobs
// between Syncs (its queue holds them): a Sync makes one of the old ones, if any.
func (m *Manager) newJobs(n int) *jobSet {
	js := &jobSet{byKey: make(map[jobIdentity]*job, n), sources: m.opts.ProbeSources}
	if m.queue.Len() > 0 {
		js.old = make(map[jobIdentity]*job, m.queue.Len())
		for j := range m.queue.All() {
			js.old[j.key()] = j
		}
	}
	return js
}

// add gives each check of spec, whose backend is b, its job: the one this Sync already has
// with the same key, else the one that ran before, else a new one.
func (js *jobSet) add(b *backend, spec *Spec) {
	subs := b.subscriptions()
	for i, c := range spec.Checks {
		k := jobKey(c, spec)
		j := js.byKey[k]
		if j == nil {
			if j = js.old[k]; j != nil {
				j.unsubscribeAll()
			} else {
				j = newJob(c, spec)
				j.prober = probe.WithInstanceSources(j.prober, c.Type, js.sources)
				js.fresh = append(js.fresh, j)
			}
			js.byKey[k] = j
		}
		// (a job's prober may carry the instance's probe_source, see probe.WithInstanceSources)
		if probe.WithoutInstanceSources(j.prober) != c.Prober {
			probe.Release(c.Prober) // an identical check already runs this probe
		}
		sub := &subs[i]
		sub.job = j
		j.subscribe(sub)
	}
}

// replaceJobs makes js the manager's jobs: the old ones it did not take over stop, the fresh
// ones are queued.
func (m *Manager) replaceJobs(js *jobSet, now time.Time) {
	for k, j := range js.old {
		if js.byKey[k] != j {
			m.queue.Remove(int(j.index))
			j.removed = true
			if !j.running {
				probe.Release(j.prober)
			}
		}
	}
	fresh := js.fresh
	if m.cluster != nil {
		fresh = m.syncCluster(js.byKey, fresh, now) // seeds new checks from the fleet before they run
	}
	m.schedule(fresh, now)
}

// dispatchSlack lets the scheduler start the jobs due within this much of now together: at
// thousands of checks a second, one wake-up per batch instead of one per job.
const dispatchSlack = 10 * time.Millisecond

// loop is the scheduler: it sleeps until the next job is due, starts every due job that is not
// still running, and queues it for its next cycle.
func (m *Manager) loop() {
	defer m.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-m.done:
			return
		default:
		}
		m.mu.Lock()
		now := time.Now()
		for len(m.queue) > 0 && !m.queue.First().due().After(now.Add(dispatchSlack)) {
			j := m.queue.First()
			due := j.due()
			j.setNext(m.nextRun(j, now), now)
			m.queue.FixFirst()
			if j.running {
				skippedTotal.WithLabelValues(j.typ(), "running").Inc()
				continue
			}
			if j.shared != nil {
				m.dueShared(j, due) // cluster mode: the coordinator decides who probes
				continue
			}
			m.start(j)
		}
		wait := time.Hour
		if len(m.queue) > 0 {
			wait = m.queue.First().due().Sub(now)
		}
		m.mu.Unlock()
		if m.cluster != nil {
			m.handOver()
		}
		timer.Reset(wait)
		select {
		case <-m.done:
			return
		case <-m.wake:
		case <-timer.C:
		}
	}
}

// nextRun returns when j runs after now: one interval later (times the idle multiplier when
// none of its records was queried lately), with a jitter of up to ±5% so that checks started
// together drift apart instead of firing in bursts. In cluster mode there is no jitter: the
// run keeps its offset in the fleet's cycles.
func (m *Manager) nextRun(j *job, now time.Time) time.Time {
	interval := j.interval
	if m.opts.IdleMultiplier > 1 && m.opts.IdleTimeout > 0 && m.idle(j, now) {
		interval *= time.Duration(m.opts.IdleMultiplier)
	}
	if j.shared != nil {
		return j.shared.nextRun(j.due(), now, interval)
	}
	jitter := time.Duration(rand.Int64N(int64(interval)/10+1)) - interval/20
	next := j.due().Add(interval + jitter)
	if next.Before(now) {
		next = now.Add(jitter + interval/20)
	}
	return next
}

// idle reports whether none of the records behind j was queried within the idle timeout.
// Activity is tracked per configured record: a query marks the record, taken here.
func (m *Manager) idle(j *job, now time.Time) bool {
	for _, sub := range j.subscribers() {
		a := sub.backend.activity
		if a == nil || a.idleFor(now) < m.opts.IdleTimeout { // no write while nobody queries
			return false
		}
	}
	return true
}

// start runs j's probe, on the poller when it can, unless the in-flight limit is reached.
// Called with m.mu held.
func (m *Manager) start(j *job) {
	select {
	case m.inFlight <- struct{}{}:
	default:
		skippedTotal.WithLabelValues(j.typ(), "in_flight_limit").Inc()
		return
	}
	j.running = true
	m.wg.Add(1)
	if m.poller != nil && m.runAsync(j) {
		return
	}
	go m.run(j)
}

// run probes j on a goroutine, retrying failures within the same timeout.
func (m *Manager) run(j *job) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), j.timeout)
	res := j.prober.Probe(ctx)
	for attempt := 0; !res.OK && attempt < int(j.retries) && ctx.Err() == nil; attempt++ {
		res = j.prober.Probe(ctx)
	}
	cancel()
	m.finish(j, res, start)
}

// runAsync probes j on the poller, retrying failures within the same timeout. It reports
// false when the probe cannot run there.
func (m *Manager) runAsync(j *job) bool {
	r := asyncRuns.Get().(*asyncRun)
	r.m, r.j, r.start, r.attempts = m, j, time.Now(), 0
	r.deadline = r.start.Add(j.timeout)
	if m.poller.Run(j.prober, r.deadline, r.done) {
		return true
	}
	r.release()
	return false
}

// asyncRun is one probe of a job on the poller, its retries included. Runs are reused
// (asyncRuns), and with them the function the poller calls, made once per run: thousands of
// probes a second would otherwise each allocate both.
type asyncRun struct {
	m               *Manager
	j               *job
	start, deadline time.Time
	attempts        int
	done            func(probe.Result) // r.finish
}

// asyncRuns are the runs not in use.
var asyncRuns sync.Pool

func init() {
	asyncRuns.New = func() any {
		r := &asyncRun{}
		r.done = r.finish
		return r
	}
}

// finish retries a failure while the deadline allows, or records the result.
func (r *asyncRun) finish(res probe.Result) {
	m, j := r.m, r.j
	if !res.OK && r.attempts < int(j.retries) && time.Until(r.deadline) > 0 && !m.stopping.Load() {
		r.attempts++
		if m.poller.Run(j.prober, r.deadline, r.done) {
			return
		}
	}
	start := r.start
	r.release()
	m.finish(j, res, start)
}

// release gives r back to asyncRuns.
func (r *asyncRun) release() {
	r.m, r.j = nil, nil
	asyncRuns.Put(r)
}

// finish records a probe's result and frees its in-flight slot. Results that arrive while the
// manager stops are dropped: "stopped" is no verdict on a backend.
func (m *Manager) finish(j *job, res probe.Result, start time.Time) {
	defer m.wg.Done()
	defer func() { <-m.inFlight }()
	if m.stopping.Load() {
		return
	}
	res.Latency = time.Since(start)
	observeProbe(j.metrics, res, res.Latency)
	if j.shared != nil {
		m.finishShared(j, res) // cluster mode: applied once per cycle, maybe published
		return
	}
	m.apply(j, res)
}

// Due and SetIndex make a job a timequeue.Item.
func (j *job) Due() time.Time { return j.due() }
func (j *job) SetIndex(i int) { j.index = int32(i) }

// jobTime is when a job runs next, in nanoseconds: since monoEpoch on the monotonic clock, or,
// for a job of cluster mode, Unix time on the wall clock, which the fleet's cycles are aligned
// on (and which must come back exactly as it was set).
type jobTime int64

// monoEpoch is the origin of the jobTime of the jobs run here alone, taken at start-up (with
// its monotonic reading). It never changes: read it with epochPlus.
var monoEpoch = time.Now()

// epochPlus returns monoEpoch plus d.
func epochPlus(d time.Duration) time.Time {
	epoch := monoEpoch // time.Time's Add returns a new time; calling it on a copy says so
	return epoch.Add(d)
}

// due returns when j runs next.
func (j *job) due() time.Time {
	if j.shared != nil {
		return time.Unix(0, int64(j.next))
	}
	return epochPlus(time.Duration(j.next))
}

// setNext makes t, which now is a reading of the clock near, when j runs next. Outside cluster
// mode, t is placed relative to now on the monotonic clock.
func (j *job) setNext(t, now time.Time) {
	if j.shared != nil {
		j.next = jobTime(t.UnixNano())
		return
	}
	j.next = jobTime(now.Sub(monoEpoch) + t.Sub(now))
}
