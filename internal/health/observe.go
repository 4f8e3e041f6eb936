package health

import (
	"time"

	"github.com/meridian-gslb/meridian/internal/health/probe"
)

// From evidence to a backend's status: a probe's result (here or, in cluster mode, elsewhere)
// fed to the rise/fall machines of the backends that share the check, a source's report on an
// External backend, and the transition that follows, logged, counted and announced once.

// report is one status a source reported for an External backend, and why and when.
type report struct {
	status Status
	reason string
	at     time.Time
}

// notReported is the reason shown for an External backend with checks before its first report.
const notReported = "not reported by its source yet"

// restored is the reason shown for a backend whose status comes from the state file.
const restored = "restored from the state file"

// checksStatus returns the combined status of b's checks' machines: up when it has none, or
// when they only measure it (Spec.MeasureOnly).
func (b *backend) checksStatus() Status {
	if b.measureOnly {
		return Up
	}
	subs := b.subscriptions()
	statuses := make([]Status, len(subs))
	for i, sub := range subs {
		statuses[i] = sub.machine.status
	}
	return combine(statuses)
}

// reportExplains reports whether b's status is its source's report rather than its checks'
// verdict: b is External and has no checks, or its report is not up and no better than the
// checks' verdict (see withReport). The details of such a backend show the report.
func (b *backend) reportExplains() bool {
	if !b.external {
		return false
	}
	r := b.report()
	return len(b.subscriptions()) == 0 || b.measureOnly || r.status != Up && withReport(b.checksStatus(), r.status) == r.status
}

// apply feeds one raw result of j to every subscriber's machine and publishes the changes.
func (m *Manager) apply(j *job, res probe.Result) {
	m.mu.Lock()
	m.doneLocked(j)
	notify := m.observeLocked(j, res, "")
	m.mu.Unlock()
	for _, f := range notify {
		f()
	}
}

// doneLocked notes that j's probe (or cluster turn) ended.
func (m *Manager) doneLocked(j *job) {
	j.running = false
	if j.removed {
		probe.Release(j.prober)
	}
}

// observeLocked feeds res to the machines and measurements of j's subscribers and returns the
// OnChange functions of the backends whose status changed, and the OnMeasure functions of
// those whose RTT or load moved enough. by names the instance that probed, when another one
// did (an agent, another instance of the cluster): its RTT is its own, and only its load
// feeds the measurements.
func (m *Manager) observeLocked(j *job, res probe.Result, by string) []func() {
	measured := &res
	if by != "" {
		measured = nil
		if res.HasLoad {
			measured = &probe.Result{HasLoad: true, Load: res.Load}
		}
	}
	return m.observeMeasuredLocked(j, res, measured, nil, by)
}

// observeMeasuredLocked is observeLocked with the result whose RTT and load the backends'
// measurements take, nil for none (a quorum's verdict is not a probe of this instance, whose
// newest vote is), and the votes of a quorum verdict, whose RTTs by site the backends'
// measurements take too (nil otherwise).
func (m *Manager) observeMeasuredLocked(j *job, res probe.Result, measured *probe.Result, votes []Vote, by string) []func() {
	var notify []func()
	now := time.Now()
	for _, s := range j.subscribers() {
		b := s.backend
		b.details.setCheck(now, res.OK, res.Reason, res.Latency)
		b.history().observe(now, res.OK, res.Latency)
		if by == "" && s.stats != nil {
			s.stats.observe(j.typ(), res.OK, res.Reason, res.Latency)
		}
		first := s == &b.subscriptions()[0]
		moved := measured != nil && b.measure(first, *measured)
		if votes != nil && first && b.measureVantages(votes) {
			moved = true
		}
		var f func()
		if s.machine.observe(res.OK, now.Add(-res.Latency).UnixNano()) {
			f = m.updateLocked(b, res.Reason, by, time.Unix(0, s.machine.since))
		}
		if f == nil && moved {
			f = b.onMeasure
		}
		if f != nil {
			notify = append(notify, f)
		}
	}
	return notify
}

// updateLocked recomputes b's status from its checks' machines, and on an External backend its
// last report (withReport), and sets it (setLocked); since is when the evidence began (zero:
// now).
func (m *Manager) updateLocked(b *backend, reason, by string, since time.Time) func() {
	next := b.checksStatus()
	if b.external {
		next = withReport(next, b.report().status)
	}
	return m.setLocked(b, next, reason, by, since)
}

// Report records next as the status the source of the external backend with key
// (Spec.External) judged it at, for reason, which names who judged it (a site, a Kubernetes
// Service). A backend without checks takes that status; one with checks combines it with its
// checks' verdict (withReport), which the report does not overwrite. It reports false when no
// external backend has key. The backend's OnChange runs, outside the manager's lock, when the
// status changed.
func (m *Manager) Report(key string, next Status, reason string) bool {
	m.mu.Lock()
	b := m.backendLocked(key)
	if b == nil || !b.external {
		m.mu.Unlock()
		return false
	}
	r := b.report()
	*r = report{status: next, reason: reason, at: time.Now()}
	notify := m.updateLocked(b, reason, "", r.at)
	m.mu.Unlock()
	if notify != nil {
		notify()
	}
	return true
}

// setLocked makes next b's status. On a change it logs it with reason (and by, the instance
// that probed, when not this one), counts and stores it, and returns b's OnChange; since is
// when the evidence for the change began (zero: now).
func (m *Manager) setLocked(b *backend, next Status, reason, by string, since time.Time) func() {
	if next == b.status {
		return nil
	}
	if by != "" {
		reason += ", probed by " + by
	}
	m.opts.Log.Infof("backend %s of %s is %s: %s (was %s)", b.name, b.record, next, reason, b.status)
	recordTransition(b.status, next)
	now := time.Now()
	b.details.changed = unixNano(now)
	if since.IsZero() || since.After(now) {
		since = now
	}
	tr := Transition{Time: now, Since: since, Record: b.record, Backend: b.name, Key: b.key(), From: b.status, To: next, Reason: reason}
	m.history.add(tr)
	b.history().change(now, next, reason)
	if m.opts.OnTransition != nil {
		m.opts.OnTransition(tr)
	}
	b.status = next
	b.noteStatus(next, now)
	b.state.Set(next)
	return b.onChange
}
