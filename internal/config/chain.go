package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// ChainStep is one step of a chain record (mode: chain): a metric that narrows the
// candidates, or a rule that orders what is left.
type ChainStep string

// The chain's steps (docs/modes.md, "chain").
const (
	// StepHealth keeps the healthy candidates: always the chain's first step, implicit.
	StepHealth ChainStep = "health"
	// StepGeo and StepAffinity keep the candidates the geoip and geoip_affinity modes would
	// choose for the client.
	StepGeo      ChainStep = "geo"
	StepAffinity ChainStep = "affinity"
	// StepPriority keeps the best priority group.
	StepPriority ChainStep = "priority"
	// StepRTT keeps the fastest candidates, within the record's rtt_tolerance.
	StepRTT ChainStep = "rtt"
	// StepLoad leaves out the candidates above max_load (unless all are) and keeps the least
	// loaded.
	StepLoad ChainStep = "load"
	// The selection steps order what is left; one of them, if any, is the last step.
	StepWeighted   ChainStep = "weighted"
	StepHash       ChainStep = "hash"
	StepRandom     ChainStep = "random"
	StepRoundRobin ChainStep = "roundrobin"
)

// ChainSteps lists every step, in the documentation's order.
var ChainSteps = []ChainStep{StepHealth, StepGeo, StepAffinity, StepPriority, StepRTT, StepLoad, StepWeighted, StepHash, StepRandom, StepRoundRobin}

// Selects reports whether s is a selection step: it orders the candidates rather than
// narrowing them, and ends the chain.
func (s ChainStep) Selects() bool {
	return s == StepWeighted || s == StepHash || s == StepRandom || s == StepRoundRobin
}

// SteersByRTT reports whether r's answers depend on its backends' RTTs: a chain with an rtt
// step.
func (r *Record) SteersByRTT() bool {
	return r.Mode == ModeChain && slices.Contains(r.Steering().Chain, StepRTT)
}

// Tolerance is how much slower than the fastest a candidate may be and still be kept by the
// rtt step: a fraction of the fastest's RTT, or a duration, whichever is larger.
type Tolerance struct {
	Fraction float64
	Duration time.Duration
}

// DefaultRTTTolerance is the rtt step's tolerance when the record sets none: 20% of the
// fastest, so that a few milliseconds of noise do not flap the answers.
var DefaultRTTTolerance = Tolerance{Fraction: 0.2}

// Within reports whether rtt is within the tolerance of best.
func (t Tolerance) Within(rtt, best time.Duration) bool {
	slack := max(time.Duration(float64(best)*t.Fraction), t.Duration)
	return rtt <= best+slack
}

// String returns the tolerance as written: "20%" or "5ms".
func (t Tolerance) String() string {
	if t.Duration > 0 {
		return t.Duration.String()
	}
	return strconv.FormatFloat(t.Fraction*100, 'f', -1, 64) + "%"
}

// ParseTolerance parses a tolerance: a percentage ("20%") or a duration ("5ms").
func ParseTolerance(s string) (Tolerance, error) {
	s = strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || f < 0 || f > 1000 {
			return Tolerance{}, fmt.Errorf("%q is not a percentage from 0%% to 1000%%", s)
		}
		return Tolerance{Fraction: f / 100}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return Tolerance{}, fmt.Errorf("%q is neither a percentage (20%%) nor a duration (5ms)", s)
	}
	return Tolerance{Duration: d}, nil
}

// DefaultMaxLoad is the load step's threshold when the record sets no max_load: a candidate
// loaded above its capacity is left out unless all are.
const DefaultMaxLoad = 1.0

// chainSteps parses a chain: a list of step names, each at most once, health first if given,
// a selection step last if any.
func (p *parser) chainSteps(n *yaml.Node, path string) ([]ChainStep, bool) {
	names, ok := p.strList(n, path)
	if !ok {
		return nil, false
	}
	valid := make([]string, len(ChainSteps))
	for i, s := range ChainSteps {
		valid[i] = string(s)
	}
	var steps []ChainStep
	for i, name := range names {
		s := ChainStep(strings.ToLower(strings.TrimSpace(name)))
		ipath := index(path, i)
		switch {
		case !slices.Contains(ChainSteps, s):
			p.Errorf(n, ipath, "%v", unknownChoice("chain step", name, valid))
			return nil, false
		case slices.Contains(steps, s):
			p.Errorf(n, ipath, "the step %s is in the chain twice", s)
			return nil, false
		case s == StepHealth && i > 0:
			p.Errorf(n, ipath, "health is the chain's first step (and implicit): it cannot follow %s", steps[len(steps)-1])
			return nil, false
		case len(steps) > 0 && steps[len(steps)-1].Selects():
			p.Errorf(n, ipath, "%s chooses among what is left and ends the chain: %s cannot follow it", steps[len(steps)-1], s)
			return nil, false
		}
		steps = append(steps, s)
	}
	if len(steps) == 0 {
		p.Errorf(n, path, "a chain needs at least one step (valid: %s)", strings.Join(valid, ", "))
		return nil, false
	}
	if steps[0] == StepHealth {
		steps = steps[1:] // implicit
	}
	return steps, true
}

// chainOptions sets the chain settings of s, a record of mode's steering, from o, and reports
// the settings that do not fit its mode: a chain record needs its steps, and the chain's keys
// need mode chain (those inherited from defaults are ignored by other modes).
func (p *parser) chainOptions(s *Steering, mode Mode, o *recordOpts, e entry, path string) {
	s.Chain = o.chain.or(nil)
	s.MaxAnswers = o.maxAnswers.or(0)
	s.RTTTolerance = o.rttTolerance.or(DefaultRTTTolerance)
	s.MaxLoad = o.maxLoad.or(DefaultMaxLoad)
	if mode == ModeChain {
		if !o.chain.set {
			p.Errorf(e.k, child(path, "chain"), "mode chain needs a chain: the steps, such as [geo, rtt, load, weighted]")
		}
		return
	}
	for _, k := range []struct {
		set, inherited bool
		pos            Position
		path, key      string
	}{
		{o.chain.set, o.chain.inherited, o.chain.pos, o.chain.path, "chain"},
		{o.maxAnswers.set, o.maxAnswers.inherited, o.maxAnswers.pos, o.maxAnswers.path, "max_answers"},
		{o.rttTolerance.set, o.rttTolerance.inherited, o.rttTolerance.pos, o.rttTolerance.path, "rtt_tolerance"},
		{o.maxLoad.set, o.maxLoad.inherited, o.maxLoad.pos, o.maxLoad.path, "max_load"},
	} {
		if k.set && !k.inherited {
			p.ErrorAt(k.pos, k.path, "%s only applies with mode chain, not %s", k.key, mode)
		}
	}
	s.Chain = nil
}
