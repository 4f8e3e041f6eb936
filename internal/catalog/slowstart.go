package catalog

import (
	"math"
	"slices"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/policy"
)

// Slow start (a record's slow_start, see docs/modes.md): a backend that comes back up after
// being down (health.State.Recovered) joins the weighted, roundrobin and chain selections gradually,
// at a fraction of its weight that rises linearly from rampMin to 1 over slow_start. Candidates
// are prepared by Refresh, not per query, so Refresh computes the fractions at its time and a
// ramp timer refreshes the record at every rampStep while a backend ramps.
//
//   - weighted, and a chain ending in weighted or hash: the ramping backend's weight is its
//     weight times the fraction; while some
//     backend of the family ramps, every weight is multiplied by rampScale first, so that the
//     fractions of small weights stay distinct.
//   - roundrobin, which has no weights (and the other chains): the ramping backend is in the
//     rotation during a share
//     of the ramp steps equal to its fraction, spread evenly (rampIncluded), and out of it
//     during the others: over the ramp it gets the answers a weighted rotation would give it.
//     It is never left out when every servable backend of the family ramps.
const (
	// rampMin is the fraction a ramp starts at (Envoy's min_weight_percent default).
	rampMin = 0.1
	// rampScale multiplies the weights of a family while a backend of it ramps.
	rampScale = 100
)

// rampFraction returns the fraction of its weight a backend that recovered elapsed ago gets,
// over a ramp of slowStart: rampMin at 0, rising linearly to 1 at slowStart and after.
func rampFraction(elapsed, slowStart time.Duration) float64 {
	if slowStart <= 0 || elapsed >= slowStart {
		return 1
	}
	return rampMin + (1-rampMin)*float64(max(elapsed, 0))/float64(slowStart)
}

// rampStep is how often a ramping record is refreshed: a tenth of slowStart, from 100 ms to 1 s.
func rampStep(slowStart time.Duration) time.Duration {
	return min(max(slowStart/10, 100*time.Millisecond), time.Second)
}

// rampIncluded reports whether roundrobin has a backend that recovered elapsed ago in its
// rotation: during ramp step k (elapsed in [k·step, (k+1)·step)), when the integral of the
// fraction over the steps crosses a whole number within that step. So over any stretch of the
// ramp it is in for a share of the steps equal to its mean fraction there.
func rampIncluded(elapsed, slowStart time.Duration) bool {
	if rampFraction(elapsed, slowStart) >= 1 {
		return true
	}
	step := rampStep(slowStart)
	k := float64(max(elapsed, 0) / step)
	return math.Floor(rampArea(k+1, step, slowStart)) > math.Floor(rampArea(k, step, slowStart))
}

// rampArea is the integral of rampFraction over the first k ramp steps, in steps.
func rampArea(k float64, step, slowStart time.Duration) float64 {
	d := float64(slowStart) / float64(step) // the ramp, in steps
	t := min(k, d)
	return rampMin*t + (1-rampMin)*t*t/(2*d) + max(k-d, 0)
}

// slowStart applies the ramps of the record's recovering backends at now to one family's
// servable backends and their candidates, and returns them, with the time of the next ramp
// step of any of them (zero when none ramps).
func (r *Record) slowStart(now time.Time, healthy []*Backend, cands []policy.Candidate) ([]*Backend, []policy.Candidate, time.Time) {
	d := r.Config.Steering().SlowStart
	if d <= 0 || !slices.Contains(config.SlowStartModes, r.Config.Mode) {
		return healthy, cands, time.Time{}
	}
	fractions := make([]float64, len(healthy))
	var next time.Time
	full := false // some backend does not ramp
	step := rampStep(d)
	for i, b := range healthy {
		fractions[i] = 1
		rec := b.State.Recovered()
		if rec.IsZero() || now.Sub(rec) >= d {
			full = true
			continue
		}
		elapsed := now.Sub(rec)
		fractions[i] = rampFraction(elapsed, d)
		at := rec.Add((max(elapsed, 0)/step + 1) * step)
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	if next.IsZero() {
		return healthy, cands, next
	}
	if r.rampsWeights() {
		for i := range cands {
			w := float64(max(cands[i].Weight, 1)) * rampScale * fractions[i]
			cands[i].Weight = int(min(max(math.Round(w), 1), math.MaxInt32))
		}
		return healthy, cands, next
	}
	if !full {
		return healthy, cands, next
	}
	kept, keptCands := healthy[:0:0], cands[:0:0]
	for i, b := range healthy {
		if fractions[i] >= 1 || rampIncluded(now.Sub(b.State.Recovered()), d) {
			kept, keptCands = append(kept, b), append(keptCands, cands[i])
		}
	}
	return kept, keptCands, next
}

// rampsWeights reports whether a slow start ramps the record's weights (weighted, and a
// chain that ends in a weighted or hash step) rather than its backends' share of the rotation.
func (r *Record) rampsWeights() bool {
	switch c := r.Config; c.Mode {
	case config.ModeWeighted:
		return true
	case config.ModeChain:
		last := config.ChainStep("")
		if chain := c.Steering().Chain; len(chain) > 0 {
			last = chain[len(chain)-1]
		}
		return last == config.StepWeighted || last == config.StepHash
	}
	return false
}

// scheduleRamp makes the record refresh itself at next, while a backend ramps (next not
// zero), and stops that otherwise. The caller holds refreshMu.
func (r *Record) scheduleRamp(now, next time.Time) {
	if r.ramp != nil {
		r.ramp.Stop()
		r.ramp = nil
	}
	if !next.IsZero() {
		r.ramp = time.AfterFunc(max(next.Sub(now), 0), r.Refresh)
	}
}

// RelativeLoad returns the backend's load relative to its capacity (1 is full), -1 when
// unknown: policy.Candidate.Load.
func (b *Backend) RelativeLoad() float64 {
	load := b.State.Load()
	if math.IsNaN(load) {
		return -1
	}
	c := b.Config.Checks().Capacity
	if c <= 0 {
		c = config.DefaultCapacity
	}
	return load / c
}
