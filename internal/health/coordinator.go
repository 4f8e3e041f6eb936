package health

import (
	"crypto/sha256"
	"encoding/hex"
	"hash/fnv"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/health/probe"
)

// Coordinator shares health-check results between the instances of a fleet (cluster mode):
// it decides which instance probes each cycle of a check, and carries the raw results to the
// others, which apply them through their own rise/fall machines. The manager uses it only when
// Options.Coordinator is set; without one, none of this file's code runs and the scheduler's
// hooks are one nil test per dispatched job.
//
// In cluster mode a check runs on the fleet's clock instead of a jittered one: cycle n of a
// check of interval I is the span [n*I, (n+1)*I) of Unix time, and every instance runs it at
// the same offset in the cycle (a hash of the check's id), so that all of them ask for the
// same cycle at about the same moment.
//
// In quorum mode every instance probes every cycle and hands its raw result over as a vote
// (Turn.Vote); the coordinator gathers the fleet's votes and applies one verdict per cycle
// through Manager.Decide.
type Coordinator interface {
	// Exclusive reports whether the manager applies at most one result per check and cycle:
	// one instance probes each cycle (lock mode), or the cycle's verdict decides (quorum
	// mode). Otherwise (every instance probes and applies every result) one result per
	// instance and cycle is applied.
	Exclusive() bool
	// Sources returns the local addresses this instance's probes leave from (probe_source), at
	// most one per address family: the tcp and http checks without a probe_source of their own
	// bind to them. None lets the system choose. The manager asks once, when it is made.
	Sources() []netip.Addr
	// Seed returns the newest shared result of each of checks that has one. The manager calls
	// it, holding its lock, for the checks it starts to run, before their first probe: Seed
	// must bound its own time and must not call back into the manager.
	Seed(checks []Check) []Shared
	// Watch tells which checks the manager runs now, after every change. The manager holds its
	// lock: Watch must only take note.
	Watch(checks []Check)
	// Due hands over one due cycle of a check. It must not block, and it must end the turn with
	// exactly one call of its Probe, Vote or End, from any goroutine. The manager does not run
	// the check again while a turn of it is open.
	Due(t *Turn)
	// Publish shares the result of a probe this instance ran for a turn with Probe(true), or
	// hands over this instance's vote of a turn with Vote. It must not block.
	Publish(s Shared)
}

// Check is a check as the instances of a fleet know it.
type Check struct {
	// ID names the check fleet-wide. For a probed check it is the hex digest of its compiled
	// key (type, parameters, target), interval and retries, the same in every process with the
	// same configuration; for a passive backend it is the backend's key (record|address|port).
	ID string
	// Interval is the check's scrape_interval, Timeout its probe timeout.
	Interval, Timeout time.Duration
	// Phase is the offset of the check's runs in each of its cycles, the same on every
	// instance: cycle n runs at Unix time n*Interval + Phase.
	Phase time.Duration
	// Passive checks are never probed here: their results come from other instances or agents,
	// and their backends turn unknown when the newest result is older than twice the interval.
	Passive bool
}

// Shared is one raw result of a check as instances exchange it.
type Shared struct {
	// Check is the check's ID.
	Check string
	// Status holds, by backend key, the status of this check's machine for the backend at the
	// instance that probed, once the result was applied there. An instance that starts from
	// the fleet takes it over, so that it agrees with the fleet even in the middle of a rise or
	// fall; results without it (from agents) go through the machines like any other.
	Status map[string]Status
	// Cycle is the cycle the result belongs to (Unix time / interval, for probed checks).
	Cycle  int64
	OK     bool
	Reason string
	// At is when the probe finished.
	At time.Time
	// Instance names the instance that probed; empty for results of this instance.
	Instance string
	// HasLoad is set when the probe read the backend's load, Load (in the backend's units;
	// NaN when it could not be read): a property of the backend, not of where it was probed
	// from, so that every instance takes it, as it takes the result. The RTT is not shared: it
	// is the prober's own.
	HasLoad bool
	Load    float64
	// Latency is the probe's round-trip time, shared in votes only (quorum mode): the RTT the
	// voter's vantage point sees, by which a client near it is steered (State.VantageRTTs).
	Latency time.Duration
}

// Turn is one due cycle of a check in cluster mode, handed to the Coordinator to decide
// whether this instance probes it.
type Turn struct {
	// Check is the check that is due, Cycle the number of the cycle.
	Check Check
	Cycle int64
	m     *Manager
	j     *job
}

// Probe runs the turn's check here, like an ordinary scheduled probe: the result is applied
// through this instance's machines and, with publish, handed to Coordinator.Publish. It ends
// the turn. A probe that finds no in-flight slot is skipped.
func (t *Turn) Probe(publish bool) { t.run(publish, false) }

// Vote runs the turn's check here, like Probe, but does not apply the result: it goes to
// Coordinator.Publish as this instance's vote, and the coordinator applies the cycle's verdict
// with Decide (quorum mode). It ends the turn. A probe that finds no in-flight slot is skipped.
func (t *Turn) Vote() { t.run(true, true) }

// run starts the turn's probe, which publishes its result or hands it over as a vote.
func (t *Turn) run(publish, vote bool) {
	m, j := t.m, t.j
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopping.Load() || j.removed {
		m.doneLocked(j)
		return
	}
	j.shared.publish, j.shared.vote, j.shared.runCycle = publish, vote, t.Cycle
	j.running = false // start marks it running again, if a slot is free
	m.start(j)
}

// End ends the turn without a probe here: another instance's result settled the cycle.
func (t *Turn) End() {
	t.m.mu.Lock()
	t.m.doneLocked(t.j)
	t.m.mu.Unlock()
}

// Settled reports whether a result of the turn's cycle, or of a later one, has been applied.
func (t *Turn) Settled() bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	return t.j.shared.cycle >= t.Cycle
}

// Receive applies a result another instance (or an external agent) shared, through the
// machines of the backends of its check. Results of checks not run here, older than the newest
// applied, or already applied (per cycle in exclusive mode, per instance and cycle otherwise)
// are dropped, and so is everything once the manager stops. It reports whether the result was
// applied; without a Coordinator it is never.
func (m *Manager) Receive(s Shared) bool {
	m.mu.Lock()
	if m.cluster == nil || m.stopping.Load() {
		m.mu.Unlock()
		return false
	}
	j := m.cluster.byID[s.Check]
	if j == nil || !m.cluster.accept(j, s) {
		m.mu.Unlock()
		return false
	}
	notify := m.observeLocked(j, probe.Result{OK: s.OK, Reason: s.Reason, HasLoad: s.HasLoad, Load: s.Load}, s.Instance)
	m.mu.Unlock()
	for _, f := range notify {
		f()
	}
	return true
}

// Verdict is the fleet's decision on one cycle of a check in quorum mode, derived from the
// instances' votes.
type Verdict struct {
	// Check is the check's ID, Cycle the cycle decided.
	Check string
	Cycle int64
	// Status is Up or Down; Unknown when no usable vote was fresh.
	Status Status
	// Reason says how the votes went, for the log lines of transitions and the admin API.
	Reason string
	// Votes are the fresh votes the verdict saw, isolated ones included.
	Votes []Vote
}

// Vote is one instance's raw result of a check in quorum mode.
type Vote struct {
	// Instance names the voter, Site is its optional label (redis_site).
	Instance, Site string
	OK             bool
	Reason         string
	// At is when the voter's probe finished.
	At time.Time
	// Isolated votes come from an instance that failed most of its canaries: they count in
	// no verdict.
	Isolated bool
	// Latency is the voter's probe round-trip time, 0 when not measured.
	Latency time.Duration
}

// Decide applies a quorum verdict through the machines of the backends of its check: Up and
// Down as a raw result, Unknown by resetting them. Verdicts of checks not run here, of passive
// checks, or of a cycle no newer than the newest applied are dropped, and so is everything once
// the manager stops. It reports whether the verdict was applied; without a Coordinator it is
// never.
func (m *Manager) Decide(v Verdict) bool {
	m.mu.Lock()
	if m.cluster == nil || m.stopping.Load() {
		m.mu.Unlock()
		return false
	}
	j := m.cluster.byID[v.Check]
	if j == nil || j.shared.check.Passive || v.Cycle <= j.shared.cycle {
		m.mu.Unlock()
		return false
	}
	sh := j.shared
	sh.cycle, sh.votes = v.Cycle, v.Votes
	var notify []func()
	if v.Status == Unknown {
		notify = m.resetLocked(j, v.Reason)
	} else {
		verdict := probe.Result{OK: v.Status == Up, Reason: v.Reason, Latency: sh.latest.Latency}
		notify = m.observeMeasuredLocked(j, verdict, &sh.latest, v.Votes, "")
	}
	m.mu.Unlock()
	for _, f := range notify {
		f()
	}
	return true
}

// Votes returns, by backend key, the votes behind the newest verdicts of the backends' checks
// in quorum mode, one per instance, sorted by instance; nil otherwise. The vote of an instance
// on a backend with several checks passed when all its votes did, and gives the reason of a
// failed one.
func (m *Manager) Votes() map[string][]Vote {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cluster == nil {
		return nil
	}
	out := make(map[string][]Vote)
	for j := range m.queue.All() {
		if j.shared == nil {
			continue
		}
		for _, v := range j.shared.votes {
			for _, sub := range j.subscribers() {
				key := sub.backend.key()
				out[key] = mergeVote(out[key], v)
			}
		}
	}
	for _, votes := range out {
		slices.SortFunc(votes, func(a, b Vote) int { return strings.Compare(a.Instance, b.Instance) })
	}
	return out
}

// mergeVote adds v to votes, merged with the vote of the same instance if there is one.
func mergeVote(votes []Vote, v Vote) []Vote {
	i := slices.IndexFunc(votes, func(o Vote) bool { return o.Instance == v.Instance })
	if i < 0 {
		return append(votes, v)
	}
	o := &votes[i]
	if o.OK && !v.OK {
		o.Reason = v.Reason
	}
	o.OK = o.OK && v.OK
	o.Isolated = o.Isolated || v.Isolated
	if v.At.After(o.At) {
		o.At = v.At
	}
	return votes
}

// clusterState is the manager's side of cluster mode.
type clusterState struct {
	coord     Coordinator
	exclusive bool
	sources   []netip.Addr    // the instance's probe_source
	byID      map[string]*job // the jobs by check id
	// Filled by the scheduler loop under the manager's lock, handed over after it unlocks.
	turns  []*Turn
	notify []func()
}

// sharedJob is the cluster-mode state of a job.
type sharedJob struct {
	check Check
	phase time.Duration // offset of the runs in each cycle
	cycle int64         // the newest cycle applied
	at    time.Time     // when the newest applied result was probed
	// seen holds the newest cycle applied per instance (not exclusive mode).
	seen map[string]int64
	// The probe in flight: its cycle, whether its result is published, and whether it is a
	// vote (quorum mode: applied by the cycle's verdict, not here).
	runCycle int64
	publish  bool
	vote     bool
	// Quorum mode: this instance's newest vote (its latency, and the RTT and load it measured),
	// and the votes behind the newest verdict.
	latest probe.Result
	votes  []Vote
}

// passiveType is the type of the stand-in check of a passive backend; it has no prober.
const passiveType = "passive"

// acceptPassive returns a copy of the spec of a passive backend, which has no checks of its own,
// with a stand-in check that only receives shared results. Without a Coordinator nobody could
// send them: the spec is refused (nil) and the backend stays unknown.
func (m *Manager) acceptPassive(spec *Spec) *Spec {
	if m.cluster == nil {
		return nil
	}
	sum := sha256.Sum256([]byte(passiveType + "|" + spec.Key))
	ready := *spec
	ready.Checks = []*probe.Compiled{{Type: passiveType, Key: string(sum[:16])}}
	return &ready
}

// syncCluster gives jobs their cluster identity, tells the coordinator the current checks, and
// seeds the fresh jobs' backends from the fleet's newest results. It queues the fresh jobs it
// seeded (at their next cycle) and the passive ones, and returns the others, which the caller
// schedules as usual. Seeded state changes notify nobody: Sync's caller refreshes every record
// after Sync, as it does for the resets of Sync.
func (m *Manager) syncCluster(jobs map[jobIdentity]*job, fresh []*job, now time.Time) []*job {
	c := m.cluster
	c.byID = make(map[string]*job, len(jobs))
	all := make([]Check, 0, len(jobs))
	for _, j := range jobs {
		if j.shared == nil {
			j.shared = newSharedJob(j)
			j.prober = probe.WithInstanceSources(j.prober, j.typ(), c.sources)
		}
		c.byID[j.shared.check.ID] = j
		all = append(all, j.shared.check)
	}
	c.coord.Watch(all)
	if len(fresh) == 0 {
		return fresh
	}
	checks := make([]Check, len(fresh))
	for i, j := range fresh {
		checks[i] = j.shared.check
	}
	for _, s := range c.coord.Seed(checks) {
		if j := c.byID[s.Check]; j != nil && c.accept(j, s) {
			m.seedLocked(j, s)
		}
	}
	rest := fresh[:0]
	for _, j := range fresh {
		sh := j.shared
		switch {
		case sh.check.Passive:
			next := sh.staleAt()
			if sh.at.IsZero() {
				next = now.Add(sh.check.Interval)
			}
			j.setNext(next, now)
		case !sh.at.IsZero():
			j.setNext(sh.runAfter(now), now)
		default:
			rest = append(rest, j) // nothing shared yet: probe as soon as a new check would
			continue
		}
		m.queue.Push(j)
	}
	return rest
}

// seedLocked starts the machines of j's backends from a shared result: at the status the
// probing instance's machines had, or, where the result does not say, from the raw result.
func (m *Manager) seedLocked(j *job, s Shared) {
	for _, sub := range j.subscribers() {
		d := &sub.backend.details
		d.checked, d.reason = unixNano(s.At), s.Reason
		d.setOK(s.OK)
		if st := s.Status[sub.backend.key()]; st != Unknown {
			sub.machine.status, sub.machine.successes, sub.machine.failures = st, 0, 0
		} else {
			sub.machine.observe(s.OK, s.At.UnixNano())
		}
		m.updateLocked(sub.backend, s.Reason, s.Instance, s.At)
	}
}

func newSharedJob(j *job) *sharedJob {
	check := Check{Interval: j.interval, Timeout: j.timeout}
	if j.typ() == passiveType {
		check.ID, check.Passive = j.subscribers()[0].backend.key(), true
	} else {
		check.ID = checkID(j.key())
	}
	h := fnv.New64a()
	h.Write([]byte(check.ID))
	check.Phase = time.Duration(h.Sum64() % uint64(j.interval))
	return &sharedJob{check: check, phase: check.Phase}
}

// checkID is the fleet-wide id of the job with key k (its check's compiled key, interval and
// retries).
func checkID(k jobIdentity) string {
	sum := sha256.Sum256(k[:])
	return hex.EncodeToString(sum[:16])
}

// accept records that s is applied to j, unless it is a duplicate or older than what was.
func (c *clusterState) accept(j *job, s Shared) bool {
	sh := j.shared
	if c.exclusive {
		if s.Cycle <= sh.cycle {
			return false
		}
	} else {
		if last, ok := sh.seen[s.Instance]; ok && s.Cycle <= last {
			return false
		}
		if sh.seen == nil {
			sh.seen = make(map[string]int64)
		}
		sh.seen[s.Instance] = s.Cycle
		for id, cycle := range sh.seen {
			if cycle < s.Cycle-2 {
				delete(sh.seen, id) // an instance silent for two cycles: stopped, or lost Redis
			}
		}
	}
	sh.cycle = max(sh.cycle, s.Cycle)
	if s.At.After(sh.at) {
		sh.at = s.At
	}
	return true
}

// cycleOf returns the number of the cycle of length interval that t falls in.
func cycleOf(t time.Time, interval time.Duration) int64 {
	return t.UnixNano() / int64(interval)
}

// runTime returns when the check runs in cycle n.
func (sh *sharedJob) runTime(n int64) time.Time {
	return time.Unix(0, n*int64(sh.check.Interval)+int64(sh.phase))
}

// runAfter returns the first run time of the check after now.
func (sh *sharedJob) runAfter(now time.Time) time.Time {
	n := cycleOf(now, sh.check.Interval)
	if t := sh.runTime(n); t.After(now) {
		return t
	}
	return sh.runTime(n + 1)
}

// staleAt returns when the newest result is twice the interval old.
func (sh *sharedJob) staleAt() time.Time { return sh.at.Add(2 * sh.check.Interval) }

// nextRun returns when a shared job that was due at due runs next: at its offset in the next
// cycle, or interval/Interval cycles later when its records are idle, and never before now. A
// passive job is due when its newest result turns stale.
func (sh *sharedJob) nextRun(due, now time.Time, interval time.Duration) time.Time {
	if sh.check.Passive {
		if t := sh.staleAt(); t.After(due) {
			return t
		}
		return now.Add(sh.check.Interval)
	}
	next := sh.runTime(cycleOf(due, sh.check.Interval) + int64(max(interval/sh.check.Interval, 1)))
	if next.After(now) {
		return next
	}
	return sh.runAfter(now)
}

// dueShared dispatches a due shared job: a turn for the coordinator, or, for a passive job,
// the check that its newest result is not stale. Called by the scheduler loop, locked.
func (m *Manager) dueShared(j *job, due time.Time) {
	sh := j.shared
	if sh.check.Passive {
		if !sh.staleAt().After(due) {
			m.cluster.notify = append(m.cluster.notify, m.resetLocked(j, "no result for twice the interval")...)
		}
		return
	}
	j.running = true
	m.cluster.turns = append(m.cluster.turns, &Turn{Check: sh.check, Cycle: cycleOf(due, sh.check.Interval), m: m, j: j})
}

// handOver gives the turns the scheduler loop found due to the coordinator, and runs the
// change notifications of expired passive backends. Called by the loop, unlocked.
func (m *Manager) handOver() {
	c := m.cluster
	for i, t := range c.turns {
		c.coord.Due(t)
		c.turns[i] = nil
	}
	c.turns = c.turns[:0]
	for i, f := range c.notify {
		f()
		c.notify[i] = nil
	}
	c.notify = c.notify[:0]
}

// resetLocked turns the backends of j unknown, for reason: a passive job whose newest result
// is stale, or a quorum verdict without usable votes.
func (m *Manager) resetLocked(j *job, reason string) []func() {
	var notify []func()
	for _, s := range j.subscribers() {
		s.machine = newMachine(int(s.machine.rise), int(s.machine.fall))
		if f := m.updateLocked(s.backend, reason, "", time.Time{}); f != nil {
			notify = append(notify, f)
		}
	}
	return notify
}

// finishShared applies the result of a probe of a shared job and publishes it when the turn
// asked for that.
func (m *Manager) finishShared(j *job, res probe.Result) {
	sh := j.shared
	s := Shared{Check: sh.check.ID, Cycle: sh.runCycle, OK: res.OK, Reason: res.Reason, At: time.Now(), HasLoad: res.HasLoad, Load: res.Load}
	if sh.vote {
		s.Latency = res.Latency
	}
	m.mu.Lock()
	m.doneLocked(j)
	var notify []func()
	if sh.vote {
		sh.latest = res // a vote is applied by the cycle's verdict (Decide)
	} else if m.cluster.accept(j, s) {
		notify = m.observeLocked(j, res, "")
	}
	publish := sh.publish && !j.removed
	if publish {
		subs := j.subscribers()
		s.Status = make(map[string]Status, len(subs))
		for _, sub := range subs {
			s.Status[sub.backend.key()] = sub.machine.status
		}
	}
	m.mu.Unlock()
	if publish {
		m.cluster.coord.Publish(s)
	}
	for _, f := range notify {
		f()
	}
}
