package health

import "math"

// machine is the rise/fall damping of one check of one backend. The first result sets the
// status directly; after that it takes rise consecutive successes to go up and fall
// consecutive failures to go down.
type machine struct {
	rise, fall int32 // from 1 to math.MaxInt32, as the configuration allows
	status     Status
	successes  int32 // consecutive, while not up (counting stops at the most rise can be)
	failures   int32 // consecutive, while not down (likewise)
	// since is when the first result of the current run of successes or failures began (Unix
	// nanoseconds): once the run changes the status, when the evidence for the change began.
	since int64
}

func newMachine(rise, fall int) machine {
	var m machine
	m.setThresholds(rise, fall)
	return m
}

// setThresholds sets rise and fall, at least 1 and at most math.MaxInt32.
func (m *machine) setThresholds(rise, fall int) {
	m.rise, m.fall = int32(min(max(rise, 1), math.MaxInt32)), int32(min(max(fall, 1), math.MaxInt32))
}

// observe applies one raw result, of a probe that started at (Unix nanoseconds), and reports
// whether the status changed.
func (m *machine) observe(ok bool, at int64) (changed bool) {
	before := m.status
	if ok {
		m.failures = 0
		m.successes = min(m.successes, math.MaxInt32-1) + 1
		if m.successes == 1 {
			m.since = at
		}
		if m.status == Unknown || m.successes >= m.rise {
			m.status = Up
		}
	} else {
		m.successes = 0
		m.failures = min(m.failures, math.MaxInt32-1) + 1
		if m.failures == 1 {
			m.since = at
		}
		if m.status == Unknown || m.failures >= m.fall {
			m.status = Down
		}
	}
	if m.status != before {
		m.successes, m.failures = 0, 0
	}
	return m.status != before
}

// combine returns a backend's status from its checks' statuses: up when every check is up,
// down when any is down, unknown otherwise.
func combine(statuses []Status) Status {
	all := Up
	for _, s := range statuses {
		switch s {
		case Down:
			return Down
		case Unknown:
			all = Unknown
		}
	}
	return all
}

// severity orders the statuses from the best to the worst for withReport.
var severity = [...]int{Up: 0, Stale: 1, Unknown: 2, Down: 3}

// withReport returns the status of an External backend from its checks' combined status and
// its source's last report: the worse of the two, in the order up, stale, unknown, down. So it
// is down when either is down; up only when both are; stale when the report is stale and the
// checks are up (they reach the backend, but its source has not judged it lately: served only
// when nothing else is, as any stale backend); unknown otherwise (no report yet, or no check
// result yet). A backend without checks (checks Up, see combine) has the reported status.
func withReport(checks, reported Status) Status {
	if severity[reported] > severity[checks] {
		return reported
	}
	return checks
}
