package config

import (
	"fmt"
	"strings"
	"time"
)

// FailoverBudget is the worst case time a record may send clients to a dead backend, from its
// own timers (failover_target), and whether it holds.
//
// For a backend this instance probes it is detection plus record_ttl: the backend dies just
// after a probe started (and passed); the next fall probes, scrape_interval apart, fail, the
// last of them by scrape_timeout at worst (retries run within that timeout); and a resolver
// that cached the answer just before holds it for record_ttl:
//
//	fall × scrape_interval + scrape_timeout + record_ttl
//
// For another site's backend (sites: a placeholder, or a target learned from a peer) it is
// the longer of that site's detection (the same timers) plus the time to read it
// (peer_interval + peer_timeout, or heartbeat_interval), and the time a silent site's
// targets stay fresh (split_brain_threshold + peer_interval, or the healthy duration +
// heartbeat_interval); plus record_ttl. The record's worst case is its worst backend's.
type FailoverBudget struct {
	// Target is failover_target; 0 when the record sets none.
	Target time.Duration
	// Worst is the worst case; Terms add up to it, in order, each named with its formula.
	Worst time.Duration
	Terms []BudgetTerm
	// Never names a backend that is never found down (no health check), when there is one:
	// the worst case is then unbounded and Worst meaningless.
	Never string
}

// BudgetTerm is one timer of a FailoverBudget.
type BudgetTerm struct {
	// Name says what the term is, with its formula.
	Name string
	D    time.Duration
	// Fix says what to change to shorten it.
	Fix string
}

// Holds reports whether the record's worst case is within its target (false without one).
func (b FailoverBudget) Holds() bool { return b.Target > 0 && b.Never == "" && b.Worst <= b.Target }

// Dominant returns the longest term.
func (b FailoverBudget) Dominant() BudgetTerm {
	var d BudgetTerm
	for _, t := range b.Terms {
		if t.D > d.D {
			d = t
		}
	}
	return d
}

// String says the worst case, against the target, and when it does not hold what dominates
// and what to change.
func (b FailoverBudget) String() string {
	if b.Never != "" {
		return fmt.Sprintf("unbounded: %s; give it a health check", b.Never)
	}
	terms := make([]string, len(b.Terms))
	for i, t := range b.Terms {
		terms[i] = fmt.Sprintf("%s %v", t.Name, t.D)
	}
	s := fmt.Sprintf("worst case %v (%s)", b.Worst, strings.Join(terms, " + "))
	switch {
	case b.Target == 0:
		return s
	case b.Holds():
		return fmt.Sprintf("%s, within failover_target %v", s, b.Target)
	}
	d := b.Dominant()
	return fmt.Sprintf("%s, over failover_target %v by %v: %s dominates; %s", s, b.Target, b.Worst-b.Target, d.Name, d.Fix)
}

// FailoverBudget computes the record's FailoverBudget under the block options o: the knowledge
// of the timers that `meridian check`, the admin API and the dashboard show.
func (rec *Record) FailoverBudget(o Options) FailoverBudget {
	ttl := BudgetTerm{Name: "record_ttl", D: time.Duration(rec.TTL) * time.Second, Fix: "lower record_ttl"}
	budget := FailoverBudget{Target: rec.Settings().FailoverTarget}
	var worst []BudgetTerm
	sum := func(ts []BudgetTerm) (d time.Duration) {
		for _, t := range ts {
			d += t.D
		}
		return d
	}
	for i := range rec.Backends {
		b := &rec.Backends[i]
		remote := b.Remote || b.IsPlaceholder()
		if !remote && !b.Probed() {
			budget.Never = fmt.Sprintf("backend %s has no health check: it is never found down", b.Address)
			return budget
		}
		terms := []BudgetTerm{detection(rec, b)}
		if remote {
			terms = otherSite(rec, terms[0], o)
		}
		terms = append(terms, ttl)
		if worst == nil || sum(terms) > sum(worst) {
			worst = terms
		}
	}
	budget.Terms, budget.Worst = worst, sum(worst)
	return budget
}

// detection is the time to find backend b of rec down: fall × scrape_interval + its timeout.
func detection(rec *Record, b *Backend) BudgetTerm {
	checks := b.Checks()
	fall := checks.Fall
	if fall <= 0 {
		fall = DefaultFall
	}
	settings := rec.Settings()
	timeout := settings.ScrapeTimeout
	if checks.Timeout > 0 {
		timeout = checks.Timeout
	}
	return BudgetTerm{
		Name: fmt.Sprintf("detection (fall %d × scrape_interval %v + timeout %v)", fall, settings.ScrapeInterval, timeout),
		D:    time.Duration(fall)*settings.ScrapeInterval + timeout,
		Fix:  "lower scrape_interval, fall or scrape_timeout",
	}
}

// otherSite returns the terms of another site's backend before record_ttl: the longer of its
// site's detection and reading it, and a silent site's freshness.
func otherSite(rec *Record, det BudgetTerm, o Options) []BudgetTerm {
	var read, silent BudgetTerm
	switch {
	case o.Heartbeats.Enabled():
		h := o.Heartbeats.WithDefaults()
		healthy := max(h.LocalHealthy, h.GlobalHealthy)
		read = BudgetTerm{Name: fmt.Sprintf("heartbeat_interval %v", h.Interval), D: h.Interval, Fix: "lower heartbeat_interval"}
		silent = BudgetTerm{Name: fmt.Sprintf("silent site (healthy duration %v + heartbeat_interval %v)", healthy, h.Interval),
			D: healthy + h.Interval, Fix: "lower local_healthy_duration/global_healthy_duration or heartbeat_interval"}
	default:
		s := o.Sites.WithDefaults()
		threshold := s.SplitBrainThreshold
		if t := rec.Settings().SplitBrainThreshold; t > 0 {
			threshold = t
		}
		read = BudgetTerm{Name: fmt.Sprintf("peer read (peer_interval %v + peer_timeout %v)", s.PeerInterval, s.PeerTimeout),
			D: s.PeerInterval + s.PeerTimeout, Fix: "lower peer_interval"}
		silent = BudgetTerm{Name: fmt.Sprintf("silent site (split_brain_threshold %v + peer_interval %v)", threshold, s.PeerInterval),
			D: threshold + s.PeerInterval, Fix: "lower split_brain_threshold or peer_interval"}
	}
	if silent.D > det.D+read.D {
		return []BudgetTerm{silent}
	}
	return []BudgetTerm{det, read}
}
