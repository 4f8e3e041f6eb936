package policy

import (
	"fmt"
	"net/netip"
	"slices"
	"sync/atomic"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
)

// ChainOptions are a chain record's settings (config.Record's Chain, MaxAnswers, RTTTolerance,
// MaxLoad).
type ChainOptions struct {
	Steps        []config.ChainStep
	MaxAnswers   int
	RTTTolerance config.Tolerance
	MaxLoad      float64
	// HashPrefix is the client subnet the hash step hashes (consistent-hash's).
	HashPrefix config.HashPrefix
	// MinHealthy is the priority step's min_healthy: a priority group with fewer candidates
	// counts as down (0 counts as 1).
	MinHealthy int
}

// Chain is one record's candidates for one address family, prepared for mode chain: each step
// narrows the candidates, and the chain stops when one is left or after the last step. The
// steps that do not depend on the query (priority, rtt, load) before the first one that does
// run once, in PrepareChain; Pick runs the others per query, in place in its destination. Each
// step is a chainStep (chainsteps.go).
type Chain struct {
	opts  ChainOptions
	cands []Candidate
	// steps are opts.Steps, prepared over cands.
	steps []chainStep
	// base are the candidates the prepared steps kept, and from the index of the first step
	// Pick runs.
	base []int
	from int
	// needsLocation is set when a step reads the client's location (NeedsLocation).
	needsLocation bool
	next          *atomic.Uint64
}

// PrepareChain prepares opts's chain over cands, the healthy candidates of one family; geoCands
// are the same candidates' geographic fields (in the same order), read by the geo and
// affinity steps. counter is the record's rotation counter (the roundrobin step).
func PrepareChain(opts ChainOptions, cands []Candidate, geoCands []GeoCandidate, counter *atomic.Uint64) *Chain {
	c := &Chain{opts: opts, cands: cands, next: counter, steps: make([]chainStep, len(opts.Steps))}
	for i, name := range opts.Steps {
		c.steps[i] = prepareStep(name, c, geoCands)
		c.needsLocation = c.needsLocation || c.steps[i].needsLocation()
	}
	c.base = seq(len(cands))
	for c.from < len(c.steps) && len(c.base) > 1 && !c.steps[c.from].perQuery() {
		c.base, _ = runStep(c.steps[c.from], c, c.base, netip.Addr{}, nil, nil) // the steps run ahead depend on no query
		c.from++
	}
	return c
}

// Len returns the number of candidates the chain chooses from.
func (c *Chain) Len() int { return len(c.cands) }

// NeedsLocation reports whether a step of the chain looks the client's location up (geo,
// affinity, rtt by vantage), which the caller must then give Pick.
func (c *Chain) NeedsLocation() bool { return c.needsLocation }

// Pick appends to dst the candidates chosen for a query from client (whose location, for the
// geo steps, is loc in src) and returns dst and the EDNS Client Subnet scope the choice
// depends on. It appends nothing when there is no candidate.
func (c *Chain) Pick(client netip.Addr, src *geo.Sources, loc *geo.Location, dst []int) ([]int, int) {
	start := len(dst)
	dst = append(dst, c.base...)
	work, scope := dst[start:], 0
	for _, s := range c.steps[c.from:] {
		if len(work) <= 1 {
			break
		}
		var sc int
		work, sc = runStep(s, c, work, client, src, loc)
		scope = max(scope, sc)
	}
	if c.opts.MaxAnswers > 0 && len(work) > c.opts.MaxAnswers {
		work = work[:c.opts.MaxAnswers]
	}
	return dst[:start+len(work)], scope
}

// keepIf moves the elements of work that keep reports true for to its front, in order, and
// returns them; when none is kept, work is left unchanged and an empty slice returned.
func keepIf(work []int, keep func(int) bool) []int {
	n := 0
	for _, i := range work {
		if keep(i) {
			n++
		}
	}
	if n == 0 {
		return work[:0]
	}
	k := 0
	for j, i := range work {
		if keep(i) {
			work[k], work[j] = work[j], work[k]
			k++
		}
	}
	return work[:k]
}

// front moves work[pos] to the front, the others keeping their order.
func front(work []int, pos int) {
	v := work[pos]
	copy(work[1:pos+1], work[:pos])
	work[0] = v
}

// ChainTrace is one step of a chain's selection for one client, as explanations show it.
type ChainTrace struct {
	Step config.ChainStep
	// Kept are the candidates left after the step, in order; Prepared is set for the steps
	// run ahead, when health or metrics changed.
	Kept     []int
	Prepared bool
	// Note says how the step chose, or why it did not narrow.
	Note string
}

// Explain returns the chain's steps for client, each with what it kept. It allocates: it is
// for the admin API, not the query path. The random and roundrobin steps draw as a query
// would, and take a turn of the rotation.
func (c *Chain) Explain(client netip.Addr, src *geo.Sources, loc *geo.Location) []ChainTrace {
	out := []ChainTrace{{Step: config.StepHealth, Kept: seq(len(c.cands)), Prepared: true, Note: fmt.Sprintf("%d healthy", len(c.cands))}}
	work := seq(len(c.cands))
	for k, s := range c.steps {
		name := c.opts.Steps[k]
		if len(work) <= 1 {
			out = append(out, ChainTrace{Step: name, Kept: slices.Clone(work), Note: "not run: one candidate left"})
			continue
		}
		before := len(work)
		var note string
		work, _ = runStep(s, c, work, client, src, loc)
		switch rule := s.rule(); {
		case rule != "":
			note = "orders what is left: " + rule
		case len(work) == before:
			note = "kept every candidate"
		default:
			note = fmt.Sprintf("kept %d of %d", len(work), before)
		}
		out = append(out, ChainTrace{Step: name, Kept: slices.Clone(work), Prepared: k < c.from, Note: note})
	}
	if c.opts.MaxAnswers > 0 && len(work) > c.opts.MaxAnswers {
		out = append(out, ChainTrace{Step: "max_answers", Kept: slices.Clone(work[:c.opts.MaxAnswers]), Note: fmt.Sprintf("the first %d", c.opts.MaxAnswers)})
	}
	return out
}

// seq returns 0..n-1.
func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// Decider returns the step that decided the chain's choice for client (whose location is loc
// in src): the last one that narrowed the candidates, or that put one first while more than
// one was left (weighted, hash, random, roundrobin); the health step when none did. It draws
// nothing and turns no rotation (the steps that order are named, not run), and it allocates:
// it is for the answer log, not the query path.
func (c *Chain) Decider(client netip.Addr, src *geo.Sources, loc *geo.Location) config.ChainStep {
	decider := config.StepHealth
	work := seq(len(c.cands))
	for k, s := range c.steps {
		if len(work) <= 1 {
			break
		}
		if s.rule() != "" {
			decider = c.opts.Steps[k]
			continue
		}
		before := len(work)
		if work, _ = runStep(s, c, work, client, src, loc); len(work) < before {
			decider = c.opts.Steps[k]
		}
	}
	return decider
}
