package health

import (
	"time"
)

// Details is what the manager knows of one probed backend beyond its status: for the admin
// API and the dashboard.
type Details struct {
	// Record and Backend name the backend, as its Spec does.
	Record, Backend string
	Status          Status
	// LastCheck is when the last result of any of its checks arrived (zero before the first),
	// LastOK and Reason what it said, and Latency how long the probe took (0 for results that
	// another instance probed). On an External backend whose status is its source's report
	// (it has no checks, or the report is not up and no better than the checks' verdict),
	// they are the report's instead: when it came, whether it said up, and its reason, with
	// no latency. So the reason names the failing side.
	LastCheck time.Time
	LastOK    bool
	Reason    string
	Latency   time.Duration
	// LastChange is when the status last changed (zero while it never did).
	LastChange time.Time
}

// lastResult is what a backend keeps for its Details: their fields but the names and the
// status, which the backend has of its own, with the times in Unix nanoseconds (0 for the zero
// time) and LastOK folded into the latency's word: 40 bytes rather than 80, in every probed
// backend.
type lastResult struct {
	checked, changed int64 // LastCheck and LastChange
	// outcome is Latency in nanoseconds shifted left by one, and LastOK in the low bit.
	outcome int64
	reason  string
}

// setCheck records a result: when it arrived, whether it passed, why, and how long it took.
func (r *lastResult) setCheck(at time.Time, ok bool, reason string, latency time.Duration) {
	r.checked, r.reason = unixNano(at), reason
	r.outcome = int64(latency) << 1
	r.setOK(ok)
}

// setOK sets LastOK, keeping the latency.
func (r *lastResult) setOK(ok bool) {
	r.outcome &^= 1
	if ok {
		r.outcome |= 1
	}
}

// ok returns LastOK.
func (r *lastResult) ok() bool { return r.outcome&1 != 0 }

// latency returns Latency.
func (r *lastResult) latency() time.Duration { return time.Duration(r.outcome >> 1) }

// unixNano returns t in Unix nanoseconds, 0 for the zero time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromUnixNano returns the time of Unix nanoseconds ns, the zero time for 0.
func fromUnixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// Transition is one change of a backend's status.
type Transition struct {
	Time time.Time
	// Since is when the evidence for the change began: the start of the first probe of the run
	// of results that changed it (here or, in cluster mode, on the instance that probed), or
	// the time of a source's report; Time at the latest.
	Since           time.Time
	Record, Backend string // as Spec names them
	Key             string // the backend's key
	From, To        Status
	Reason          string
}

// transitionHistory is how many recent transitions the manager keeps.
const transitionHistory = 256

// transitions is a ring of the most recent transitions.
type transitions struct {
	ring [transitionHistory]Transition
	next int // index of the next write
	n    int // how many are stored
}

func (t *transitions) add(tr Transition) {
	t.ring[t.next] = tr
	t.next = (t.next + 1) % transitionHistory
	t.n = min(t.n+1, transitionHistory)
}

// newest returns up to limit transitions, newest first.
func (t *transitions) newest(limit int) []Transition {
	limit = min(limit, t.n)
	out := make([]Transition, 0, max(limit, 0))
	for i := 1; i <= limit; i++ {
		out = append(out, t.ring[(t.next-i+transitionHistory)%transitionHistory])
	}
	return out
}

// Details returns the details of every probed backend, by key. Backends that are not probed
// (no checks, assume_healthy, disabled) are absent.
func (m *Manager) Details() map[string]Details {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]Details, len(m.backends))
	for _, b := range m.backends {
		r := b.details
		d := Details{Record: b.record, Backend: b.name, Status: b.status, LastCheck: fromUnixNano(r.checked),
			LastOK: r.ok(), Reason: r.reason, Latency: r.latency(), LastChange: fromUnixNano(r.changed)}
		if b.reportExplains() {
			r := b.report()
			d.LastCheck, d.LastOK, d.Reason, d.Latency = r.at, r.status == Up, r.reason, 0
		}
		out[b.key()] = d
	}
	return out
}

// Transitions returns up to limit of the most recent status changes, newest first. The manager
// keeps the last 256.
func (m *Manager) Transitions(limit int) []Transition {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.history.newest(limit)
}
