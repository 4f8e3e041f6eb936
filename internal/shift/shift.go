// Package shift moves a record's traffic from some of its backends to others in steps (10%,
// 25%, 50%, 100% every 5 minutes, say), watching a signal: the new backends' health-check
// failure rate, the load their checks' metric parameter scrapes, or a Prometheus query. When
// the signal degrades, the shift rolls back to its last good step by itself and says why.
//
// A shift is state like the operators' overrides: it is kept in the overrides store (an
// overlay.Override of action shift, its Data the Shift as JSON), so that it is shared by the
// instances of a cluster, survives restarts, and is listed and cancelled through the admin API.
// Each instance gives the record's backends the weights of the shift's step (Weights); the
// Controller, a component of each block, watches the signal and writes the next step, or the
// rollback, through the admin API's one place of changes.
package shift

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/overlay"
)

// The states of a shift.
const (
	// Running: the shift is at Step, and moves to the next one an Every after StepStarted if
	// the signal stays good.
	Running = "running"
	// RolledBack: the signal degraded; the shift holds its last good step (Step; -1: every
	// weight on From) until cancelled.
	RolledBack = "rolled-back"
	// Completed: the last step held for an Every; the shift holds it until cancelled (edit
	// the zone file's weights to match, then cancel it).
	Completed = "completed"
)

// The kinds of signal.
const (
	// SignalFailureRate is the share of the To backends' health-check results that failed
	// since the step started.
	SignalFailureRate = "failure_rate"
	// SignalMetric is the highest load of the To backends, relative to their capacity, as
	// their checks' metric parameter scrapes it.
	SignalMetric = "metric"
	// SignalPrometheus is a PromQL query against the block's Prometheus server (prometheus):
	// the highest value of its result.
	SignalPrometheus = "prometheus"
)

// Signal is what a shift watches, and when it counts as degraded: a value above Above or
// below Below.
type Signal struct {
	Kind  string   `json:"kind"`
	Query string   `json:"query,omitempty"`
	Above *float64 `json:"above,omitempty"`
	Below *float64 `json:"below,omitempty"`
}

// degraded reports whether v is past the signal's thresholds, and says how.
func (s Signal) degraded(v float64) (bool, string) {
	switch {
	case s.Above != nil && v > *s.Above:
		return true, fmt.Sprintf("%s %g is above %g", s, v, *s.Above)
	case s.Below != nil && v < *s.Below:
		return true, fmt.Sprintf("%s %g is below %g", s, v, *s.Below)
	}
	return false, ""
}

// String names the signal: its kind, and its query.
func (s Signal) String() string {
	if s.Query != "" {
		return fmt.Sprintf("%s %q", s.Kind, s.Query)
	}
	return s.Kind
}

// Duration is a time.Duration that JSON carries as Go writes it ("5m0s").
type Duration time.Duration

// MarshalJSON writes d as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string, or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		s = string(b)
	}
	v, err := config.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %s: %w", b, err)
	}
	*d = Duration(v)
	return nil
}

// Event is one step of a shift's history: a step taken, the rollback, the completion.
type Event struct {
	Time time.Time `json:"time"`
	Step int       `json:"step"`
	// Share is the share of the weight on To from then on.
	Share float64 `json:"share"`
	What  string  `json:"what"`
}

// Shift is one staged shift, as the store keeps it and the API lists it.
type Shift struct {
	ID     string `json:"id"`
	Record string `json:"record"`
	// From and To are what-if selectors (a backend key, an address, site:NAME,
	// location:NAME) of the record's backends, none in both.
	From []string `json:"from"`
	To   []string `json:"to"`
	// Steps are the shares of the From and To backends' weight that To carries at each step,
	// increasing, above 0 and at most 1.
	Steps []float64 `json:"steps"`
	Every Duration  `json:"every"`
	// Signal is what the shift watches; nil: it moves on the clock alone.
	Signal *Signal `json:"signal,omitempty"`
	Reason string  `json:"reason,omitempty"`
	By     string  `json:"by,omitempty"`
	// State, Step and StepStarted are its progress; Why says why it is in its state.
	State       string    `json:"state"`
	Step        int       `json:"step"`
	StepStarted time.Time `json:"step_started"`
	Why         string    `json:"why,omitempty"`
	History     []Event   `json:"history"`
}

// Key is the shift's key in the overrides store.
func (s *Shift) Key() string { return overlay.ShiftPrefix + s.ID }

// Share is the share of the weight on To at the shift's step.
func (s *Shift) Share() float64 {
	if s.Step < 0 {
		return 0
	}
	return s.Steps[min(s.Step, len(s.Steps)-1)]
}

// Change returns the change of the overrides store that stores s.
func (s *Shift) Change() (overlay.Change, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return overlay.Change{}, fmt.Errorf("encode shift %s: %w", s.ID, err)
	}
	return overlay.Change{Key: s.Key(), Action: overlay.Shift, Reason: s.Reason, Data: data}, nil
}

// FromOverrides returns the shifts of the overrides store's list; an entry that does not
// decode is left out.
func FromOverrides(list []overlay.Override) []*Shift {
	var out []*Shift
	for _, o := range list {
		if !o.IsShift() {
			continue
		}
		var s Shift
		if json.Unmarshal(o.Data, &s) == nil && s.ID != "" && len(s.Steps) > 0 {
			out = append(out, &s)
		}
	}
	return out
}

// match returns the backends of r that any of sels names.
func match(r *catalog.Record, sels []string) map[*catalog.Backend]bool {
	m := make(map[*catalog.Backend]bool)
	for _, b := range r.Backends {
		if slices.ContainsFunc(sels, func(sel string) bool { return catalog.Matches(b, sel) }) {
			m[b] = true
		}
	}
	return m
}

// Check returns what is wrong with s for the record r of the snapshot served, nil when
// nothing is; prometheus says whether the block has a Prometheus server.
func (s *Shift) Check(r *catalog.Record, prometheus bool) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !r.SteersByWeight() {
		bad("record %s is in mode %s: a shift moves weights (mode weighted, or a chain ending in weighted or hash)", r.Name(), r.Config.Mode)
	}
	from, to := match(r, s.From), match(r, s.To)
	switch {
	case len(from) == 0:
		bad("from %v names no backend of %s", s.From, r.Name())
	case len(to) == 0:
		bad("to %v names no backend of %s", s.To, r.Name())
	}
	for b := range from {
		if to[b] {
			bad("backend %s is in both from and to", b.Key())
		}
	}
	for f := catalog.IPv4; f <= catalog.IPv6; f++ {
		if has(from, f) && !has(to, f) {
			bad("from has %s backends and to none: the shift would leave %s answers without their weight", f, f)
		}
	}
	if len(s.Steps) == 0 {
		bad("no steps")
	}
	for i, st := range s.Steps {
		if st <= 0 || st > 1 || i > 0 && st <= s.Steps[i-1] {
			bad("steps must increase, each above 0%% and at most 100%%: %s", shares(s.Steps))
			break
		}
	}
	if time.Duration(s.Every) < time.Second {
		bad("every %v is shorter than a second", time.Duration(s.Every))
	}
	if sig := s.Signal; sig != nil {
		switch {
		case sig.Kind != SignalFailureRate && sig.Kind != SignalMetric && sig.Kind != SignalPrometheus:
			bad("signal kind %q is not failure_rate, metric or prometheus", sig.Kind)
		case sig.Above == nil && sig.Below == nil:
			bad("signal %s has no threshold: give above or below", sig)
		case sig.Kind == SignalPrometheus && sig.Query == "":
			bad("a prometheus signal needs a query")
		case sig.Kind == SignalPrometheus && !prometheus:
			bad("a prometheus signal needs the block's prometheus option (the server to query)")
		case sig.Kind != SignalPrometheus && sig.Query != "":
			bad("only a prometheus signal takes a query")
		}
	}
	return errors.Join(errs...)
}

// has reports whether one of bs answers family f.
func has(bs map[*catalog.Backend]bool, f catalog.Family) bool {
	for b := range bs {
		if b.Serves(f) {
			return true
		}
	}
	return false
}

// shares writes steps as percentages.
func shares(steps []float64) string {
	parts := make([]string, len(steps))
	for i, s := range steps {
		parts[i] = config.FormatShare(s)
	}
	return strings.Join(parts, ", ")
}

// weightScale multiplies the configured weights, so that a step's share has a resolution of
// a hundredth of a backend's weight.
const weightScale = 100

// Weights returns the weight of each backend of r at the shift's step: the From backends
// share (1 - share) of the weight they and the To backends have in the configuration, the To
// backends share the rest, each in proportion to its configured weight, and the record's other
// backends keep theirs.
func (s *Shift) Weights(r *catalog.Record) map[*catalog.Backend]int {
	from, to := match(r, s.From), match(r, s.To)
	zeroIdle := r.Config.Steering().ZeroWeightIdle
	weight := func(b *catalog.Backend) float64 {
		w := float64(b.Config.Weight)
		if w <= 0 && !zeroIdle {
			w = 1
		}
		return max(w, 0)
	}
	var sumFrom, sumTo float64
	for b := range from {
		sumFrom += weight(b)
	}
	for b := range to {
		sumTo += weight(b)
	}
	share := s.Share()
	out := make(map[*catalog.Backend]int, len(r.Backends))
	for _, b := range r.Backends {
		w := weight(b) * weightScale
		switch {
		case from[b] && sumFrom > 0:
			w = (sumFrom + sumTo) * (1 - share) * weight(b) / sumFrom * weightScale
		case to[b] && sumTo > 0:
			w = (sumFrom + sumTo) * share * weight(b) / sumTo * weightScale
		}
		out[b] = int(min(math.Round(w), catalog.MaxShiftWeight))
	}
	return out
}
