// Package drill runs practice drills: what-if runs against the live configuration, on a
// schedule or on demand ("eu is down", "the primary of every failover record is down"). A run
// reports, for every record the supposition touches, what would be answered, whether the
// record's drain guard would be broken, and how long its failover takes from its own timers
// and TTL against its failover_target; a drill fails when a record would answer from its
// fallback policy, fall below its guard or miss its target. A live drill also drains backends
// for real, for a bounded time, through the admin API with the drain guard on.
//
// The Runner is a component of its block (a publisher: it writes reports to the webhooks),
// built from the constructor table; it never touches the served snapshot.
package drill

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
)

// Hypothesis is what a drill supposes.
type Hypothesis struct {
	// Down and Drained are what-if selectors: a backend key, an address, site:NAME or
	// location:NAME (catalog.Hypothesis).
	Down    []string `json:"down,omitempty"`
	Drained []string `json:"drained,omitempty"`
	// Primaries supposes down the backends of the best priority of every failover record.
	Primaries bool `json:"primaries,omitempty"`
}

// Empty reports whether h supposes nothing.
func (h Hypothesis) Empty() bool { return len(h.Down) == 0 && len(h.Drained) == 0 && !h.Primaries }

// String says what h supposes.
func (h Hypothesis) String() string {
	var parts []string
	if len(h.Down) > 0 {
		parts = append(parts, "down "+strings.Join(h.Down, ", "))
	}
	if len(h.Drained) > 0 {
		parts = append(parts, "drained "+strings.Join(h.Drained, ", "))
	}
	if h.Primaries {
		parts = append(parts, "the primaries of the failover records down")
	}
	return strings.Join(parts, "; ")
}

// Report is the result of one run of a drill.
type Report struct {
	// Drill is the drill's name; empty for a run on demand of an unnamed hypothesis.
	Drill      string     `json:"drill,omitempty"`
	Hypothesis Hypothesis `json:"hypothesis"`
	Time       time.Time  `json:"time"`
	// Matched is how many backends the hypothesis names.
	Matched int `json:"matched"`
	// Records are the records with a backend the hypothesis names, by name.
	Records []RecordReport `json:"records"`
	// Failed is set when a record fails (RecordReport.Failures); Summary says it in a line.
	Failed  bool   `json:"failed"`
	Summary string `json:"summary"`
	// Live is, for a live drill, its real drain: until when, and why it was not made.
	Live *Live `json:"live,omitempty"`
}

// Live is the real drain of a live drill.
type Live struct {
	Backends []string  `json:"backends"`
	Until    time.Time `json:"until"`
	// Error is why the drain was not made (the drain guard refused it, the store failed);
	// the drill fails then.
	Error string `json:"error,omitempty"`
}

// RecordReport is what a drill finds of one record.
type RecordReport struct {
	Record string `json:"record"`
	Mode   string `json:"mode"`
	// Answers are, by family (A, AAAA), what the record would answer: the backends a failover
	// record picks, the candidates of the other modes, or "fallback MODE" when none is left.
	Answers map[string][]string `json:"answers"`
	// BelowGuard says how the record would fall below its drain guard; empty when it would
	// not.
	BelowGuard []string `json:"below_guard,omitempty"`
	// Failover is the record's worst case time to stop sending clients to a dead backend,
	// from its timers and TTL, against its failover_target (config.FailoverBudget).
	Failover Failover `json:"failover"`
	// Failures say why the record fails the drill; empty when it passes.
	Failures []string `json:"failures,omitempty"`
}

// Failover is a record's failover budget as a drill reports it.
type Failover struct {
	WorstMS   float64 `json:"worst_case_ms"`
	TargetMS  float64 `json:"target_ms,omitempty"`
	Unbounded bool    `json:"unbounded,omitempty"`
	Holds     bool    `json:"holds"`
	Text      string  `json:"text"`
}

// Run supposes h on snap, served with the block options o, and reports on every record it
// touches. It changes nothing: the snapshot it reads is a what-if copy (catalog.WhatIf).
func Run(snap *catalog.Snapshot, o config.Options, h Hypothesis, now time.Time) Report {
	rep := Report{Hypothesis: h, Time: now, Records: []RecordReport{}}
	down := slices.Clone(h.Down)
	if h.Primaries {
		down = append(down, primaries(snap)...)
	}
	what, matched := snap.WhatIf(catalog.Hypothesis{Down: down, Drained: h.Drained})
	rep.Matched = len(matched)
	hit := make(map[string]bool, len(matched))
	for _, k := range matched {
		hit[k] = true
	}
	served := snap.Records()
	failing := 0
	for i, r := range what.Records() {
		if !touched(r, hit) {
			continue
		}
		rr := recordReport(r, served[i], o)
		if len(rr.Failures) > 0 {
			failing++
		}
		rep.Records = append(rep.Records, rr)
	}
	rep.Failed = failing > 0
	switch {
	case rep.Matched == 0:
		rep.Summary = fmt.Sprintf("%s: no backend matches; nothing to drill", h)
	case rep.Failed:
		rep.Summary = fmt.Sprintf("%s: %d of %d records touched fail", h, failing, len(rep.Records))
	default:
		rep.Summary = fmt.Sprintf("%s: the %d records touched pass", h, len(rep.Records))
	}
	return rep
}

// touched reports whether a backend of r is among the keys hit.
func touched(r *catalog.Record, hit map[string]bool) bool {
	var buf [128]byte
	for _, b := range r.Backends {
		if hit[string(b.AppendKey(buf[:0]))] {
			return true
		}
	}
	return false
}

// primaries returns the keys of the best-priority enabled backends of every failover record.
func primaries(snap *catalog.Snapshot) []string {
	var keys []string
	for _, r := range snap.Records() {
		if r.Config.Mode != config.ModeFailover {
			continue
		}
		best, found := int32(0), false
		for _, b := range r.Backends {
			if b.Enabled() && (!found || b.Config.Priority < best) {
				best, found = b.Config.Priority, true
			}
		}
		for _, b := range r.Backends {
			if found && b.Enabled() && b.Config.Priority == best {
				keys = append(keys, b.Key())
			}
		}
	}
	return keys
}

// recordReport reports on r, a what-if copy of served.
func recordReport(r, served *catalog.Record, o config.Options) RecordReport {
	rr := RecordReport{Record: r.Name(), Mode: string(r.Config.Mode), Answers: map[string][]string{}}
	v := r.View()
	fallback := r.Config.Settings().Fallback.Mode
	for f := catalog.IPv4; f <= catalog.IPv6; f++ {
		if !v.Configured[f] {
			continue
		}
		healthy := v.Healthy[f]
		if len(healthy) == 0 {
			rr.Answers[f.String()] = []string{"fallback " + string(fallback)}
			rr.Failures = append(rr.Failures, fmt.Sprintf("no %s backend left: the fallback policy (%s) answers", f, fallback))
			continue
		}
		picked := healthy
		if r.Config.Mode == config.ModeFailover {
			picked = nil
			for _, i := range v.Sets[f].Pick(netip.Addr{}, nil) {
				picked = append(picked, healthy[i])
			}
		}
		for _, b := range picked {
			rr.Answers[f.String()] = append(rr.Answers[f.String()], b.Config.Address)
		}
	}
	for _, b := range r.Below(served) {
		rr.BelowGuard = append(rr.BelowGuard, b.String())
		rr.Failures = append(rr.Failures, "below its drain guard: "+b.String())
	}
	budget := r.Config.FailoverBudget(o)
	rr.Failover = Failover{WorstMS: millis(budget.Worst), TargetMS: millis(budget.Target), Unbounded: budget.Never != "",
		Holds: budget.Holds(), Text: budget.String()}
	if budget.Target > 0 && !budget.Holds() {
		rr.Failures = append(rr.Failures, "failover misses its target: "+budget.String())
	}
	return rr
}

// millis is d in milliseconds.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
