package health

import "time"

// CheckStats counts the results of one check of one backend that were probed here: the
// per-backend view of CoreDNS-GSLB's health-check metrics (see engine's cgmetrics.go).
// Results received from other instances in cluster mode do not count.
type CheckStats struct {
	// Type is the check's type, such as http.
	Type string
	// Success and Failure count the results.
	Success, Failure uint64
	// Reasons counts the failures by CoreDNS-GSLB's reason classes, in the order of
	// CheckReasons.
	Reasons [len(CheckReasons)]uint64
	// Buckets count the probes' durations by the upper bounds of CheckBuckets, each probe
	// once (not cumulative); the last one counts the longer probes. Seconds is their sum.
	Buckets [len(checkBuckets) + 1]uint64
	Seconds float64
	// Checked is set once a result came in; LastOK is the last result.
	Checked, LastOK bool
}

// CheckReasons are CoreDNS-GSLB's classes of failure reasons.
var CheckReasons = [...]string{"timeout", "connection", "protocol", "other"}

// cgReasonOf maps Meridian's reason classes (reasonClasses, by index) to CheckReasons indexes.
var cgReasonOf = [len(reasonClasses)]int{
	0: 2, // mismatch: protocol
	1: 2, // status: protocol
	2: 0, // timeout
	3: 1, // refused: connection
	4: 1, // reset: connection
	5: 1, // unreachable: connection
	6: 1, // tls: connection
	7: 3, // other
}

// checkBuckets are the duration buckets of CoreDNS-GSLB's probe histogram (Prometheus's
// default buckets), as an array so that CheckStats holds its counts without an allocation.
var checkBuckets = [...]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// CheckBuckets returns the upper bounds, in seconds, of CheckStats.Buckets.
func CheckBuckets() []float64 { return checkBuckets[:] }

// observe counts one result of a check of type typ that took d.
func (s *CheckStats) observe(typ string, ok bool, reason string, d time.Duration) {
	s.Type, s.Checked, s.LastOK = typ, true, ok
	if ok {
		s.Success++
	} else {
		s.Failure++
		s.Reasons[cgReasonOf[reasonClassIndex(reason)]]++
	}
	sec := d.Seconds()
	i := 0
	for i < len(checkBuckets) && sec > checkBuckets[i] {
		i++
	}
	s.Buckets[i]++
	s.Seconds += sec
}

// CheckStats returns the stats of every probed backend's checks, by backend key, in the
// order of its Spec's Checks: zero values unless Options.CheckStats.
func (m *Manager) CheckStats() map[string][]CheckStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string][]CheckStats, len(m.backends))
	for _, b := range m.backends {
		subs := b.subscriptions()
		stats := make([]CheckStats, len(subs))
		for i, s := range subs {
			if s.stats != nil {
				stats[i] = *s.stats
			}
		}
		out[b.key()] = stats
	}
	return out
}
