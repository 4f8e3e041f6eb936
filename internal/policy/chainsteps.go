package policy

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
)

// The steps of a chain, one type each behind one interface, chainStep, and registered in one
// table, chainSteps. A new step is a type, its row, and its case in runStep (which keeps the
// query path free of allocations; TestChainStepsAllocateNothing says when one is missing).

// chainStep is one step of a chain, prepared over the chain's candidates.
type chainStep interface {
	// perQuery reports whether the step depends on the query (its client, the client's
	// location, or chance), so that PrepareChain cannot run it ahead.
	perQuery() bool
	// needsLocation reports whether the step reads the client's location.
	needsLocation() bool
	// rule says, for explanations, how a selection step orders what is left; it is empty for
	// a step that narrows.
	rule() string
	// run runs the step over work, candidates of c, in place for q, and returns what it kept
	// (a prefix of work, in the step's order) and the EDNS Client Subnet scope its choice
	// depends on. A step run ahead gets the zero chainQuery.
	run(c *Chain, work []int, q *chainQuery) ([]int, int)
}

// chainQuery is what a chain picks for: the client, and its location in src (nil when no
// step needs it, or when the step runs ahead).
type chainQuery struct {
	client netip.Addr
	src    *geo.Sources
	loc    *geo.Location
}

// chainSteps are the chain's steps by name, each as its constructor: the step prepared over
// c's candidates, whose geographic fields are geoCands.
var chainSteps = map[config.ChainStep]func(c *Chain, geoCands []GeoCandidate) chainStep{
	// The chain's candidates are the healthy ones: the health step keeps them all.
	config.StepHealth: func(*Chain, []GeoCandidate) chainStep { return keepStep{} },
	config.StepGeo: func(_ *Chain, geoCands []GeoCandidate) chainStep {
		return geoStep{PrepareGeo(config.ModeGeoIP, geoCands)}
	},
	config.StepAffinity: func(_ *Chain, geoCands []GeoCandidate) chainStep {
		return geoStep{PrepareGeo(config.ModeGeoIPAffinity, geoCands)}
	},
	config.StepPriority: func(*Chain, []GeoCandidate) chainStep { return priorityStep{} },
	config.StepRTT: func(c *Chain, _ []GeoCandidate) chainStep {
		return rttStep{vantages: slices.ContainsFunc(c.cands, func(x Candidate) bool { return len(x.Vantages) > 0 })}
	},
	config.StepLoad:     func(*Chain, []GeoCandidate) chainStep { return loadStep{} },
	config.StepWeighted: func(*Chain, []GeoCandidate) chainStep { return weightedStep{} },
	config.StepHash: func(c *Chain, _ []GeoCandidate) chainStep {
		return hashStep{PrepareRendezvous(c.cands, c.opts.HashPrefix)}
	},
	config.StepRandom:     func(*Chain, []GeoCandidate) chainStep { return randomStep{} },
	config.StepRoundRobin: func(*Chain, []GeoCandidate) chainStep { return roundRobinStep{} },
}

// prepareStep returns the step name prepared over c's candidates; a name that is no step
// (config rejects them) keeps every candidate.
func prepareStep(name config.ChainStep, c *Chain, geoCands []GeoCandidate) chainStep {
	if newStep, ok := chainSteps[name]; ok {
		return newStep(c, geoCands)
	}
	return keepStep{}
}

// runStep runs s over work for a query from client, whose location is loc in src
// (chainStep.run). Each step is called on its own type: called through the interface, a step
// could keep work or the query for all Go's escape analysis knows, and the caller's stack
// buffer and location would move to the heap, an allocation a query. A step without a case
// here still runs, through the interface, on copies of what it is given (allocated: one
// query's worth, which TestChainStepsAllocateNothing reports).
func runStep(s chainStep, c *Chain, work []int, client netip.Addr, src *geo.Sources, loc *geo.Location) ([]int, int) {
	q := chainQuery{client: client, src: src, loc: loc}
	switch s := s.(type) {
	case keepStep:
		return s.run(c, work, &q)
	case geoStep:
		return s.run(c, work, &q)
	case priorityStep:
		return s.run(c, work, &q)
	case rttStep:
		return s.run(c, work, &q)
	case loadStep:
		return s.run(c, work, &q)
	case weightedStep:
		return s.run(c, work, &q)
	case hashStep:
		return s.run(c, work, &q)
	case randomStep:
		return s.run(c, work, &q)
	case roundRobinStep:
		return s.run(c, work, &q)
	}
	copied := chainQuery{client: detached(client)}
	if src != nil {
		sources := *src
		copied.src = &sources
	}
	if loc != nil {
		location := *loc
		copied.loc = &location
	}
	kept, scope := s.run(c, slices.Clone(work), &copied)
	return work[:copy(work, kept)], scope
}

// detached returns a copy of a that shares no pointer with it (its zone interned anew): given
// away, the copy does not make a escape.
func detached(a netip.Addr) netip.Addr {
	switch {
	case a.Is4():
		return netip.AddrFrom4(a.As4())
	case a.IsValid():
		return netip.AddrFrom16(a.As16()).WithZone(a.Zone())
	}
	return netip.Addr{}
}

// keepStep keeps every candidate: the health step (the chain's candidates are the healthy
// ones).
type keepStep struct{}

func (keepStep) perQuery() bool      { return false }
func (keepStep) needsLocation() bool { return false }
func (keepStep) rule() string        { return "" }
func (keepStep) run(_ *Chain, work []int, _ *chainQuery) ([]int, int) {
	return work, 0
}

// geoStep keeps the candidates that its table, geoip's (the geo step) or geoip_affinity's
// (affinity), selects for the client.
type geoStep struct{ table *GeoTable }

func (geoStep) perQuery() bool      { return true }
func (geoStep) needsLocation() bool { return true }
func (geoStep) rule() string        { return "" }
func (s geoStep) run(_ *Chain, work []int, q *chainQuery) ([]int, int) {
	return keepPicked(s.table, work, q.src, q.loc)
}

// keepPicked keeps the candidates of work that t selects for the client, in work's order;
// all of work when it has none of them (the step yields no winner among what is left). The
// scope is that of t's decision either way.
func keepPicked(t *GeoTable, work []int, src *geo.Sources, loc *geo.Location) ([]int, int) {
	var buf [maxInline]int
	picks, scope := t.Select(src, loc, buf[:0])
	kept := keepIf(work, func(i int) bool { return slices.Contains(picks, i) })
	if len(kept) == 0 {
		// keepIf kept none: work is unchanged. That too depends on where the client is: the
		// scope is the lookup's, so that resolvers do not give it to clients elsewhere.
		return work, scope
	}
	return kept, scope
}

// maxInline is how many geo picks fit a step's stack buffer.
const maxInline = 16

// priorityStep keeps the best priority group (with at least min_healthy candidates).
type priorityStep struct{}

func (priorityStep) perQuery() bool      { return false }
func (priorityStep) needsLocation() bool { return false }
func (priorityStep) rule() string        { return "" }
func (priorityStep) run(c *Chain, work []int, _ *chainQuery) ([]int, int) {
	best := c.bestGroup(work)
	return keepIf(work, func(i int) bool { return c.cands[i].Priority == best }), 0
}

// rttStep keeps the fastest candidates, within rtt_tolerance. With RTTs by vantage site
// (vantages), it runs per query, by the client's vantage site: its location in the map.
type rttStep struct{ vantages bool }

func (s rttStep) perQuery() bool      { return s.vantages }
func (s rttStep) needsLocation() bool { return s.vantages }
func (rttStep) rule() string          { return "" }
func (rttStep) run(c *Chain, work []int, q *chainQuery) ([]int, int) {
	site, scope := "", 0
	if q.loc != nil {
		site, scope = q.loc.Map.Location, q.loc.Map.Bits
	}
	return c.fastest(work, site), scope
}

// loadStep leaves out the candidates above max_load (unless all are) and keeps the least
// loaded.
type loadStep struct{}

func (loadStep) perQuery() bool      { return false }
func (loadStep) needsLocation() bool { return false }
func (loadStep) rule() string        { return "" }
func (loadStep) run(c *Chain, work []int, _ *chainQuery) ([]int, int) {
	return c.leastLoaded(work), 0
}

// weightedStep puts first one candidate drawn in proportion to its weight.
type weightedStep struct{}

func (weightedStep) perQuery() bool      { return true }
func (weightedStep) needsLocation() bool { return false }
func (weightedStep) rule() string        { return "one drawn in proportion to weight first" }
func (weightedStep) run(c *Chain, work []int, _ *chainQuery) ([]int, int) {
	front(work, c.weighted(work))
	return work, 0
}

// hashStep puts first the candidate consistent hashing of the client's subnet chooses.
type hashStep struct{ hash *Rendezvous }

func (hashStep) perQuery() bool      { return true }
func (hashStep) needsLocation() bool { return false }
func (hashStep) rule() string {
	return "the one consistent hashing of the client's subnet chooses first"
}
func (s hashStep) run(c *Chain, work []int, q *chainQuery) ([]int, int) {
	front(work, max(s.hash.Pick(work, q.client), 0))
	return work, HashBits(c.opts.HashPrefix, q.client)
}

// randomStep shuffles the candidates.
type randomStep struct{}

func (randomStep) perQuery() bool      { return true }
func (randomStep) needsLocation() bool { return false }
func (randomStep) rule() string        { return "shuffled" }
func (randomStep) run(_ *Chain, work []int, _ *chainQuery) ([]int, int) {
	for i := len(work) - 1; i > 0; i-- {
		j := rand.IntN(i + 1)
		work[i], work[j] = work[j], work[i]
	}
	return work, 0
}

// roundRobinStep rotates the candidates, one turn per query (the record's counter).
type roundRobinStep struct{}

func (roundRobinStep) perQuery() bool      { return true }
func (roundRobinStep) needsLocation() bool { return false }
func (roundRobinStep) rule() string        { return "rotated, one turn per query" }
func (roundRobinStep) run(c *Chain, work []int, _ *chainQuery) ([]int, int) {
	k := int(c.next.Add(1)-1) % len(work)
	slices.Reverse(work[:k]) // rotate left by k, in place
	slices.Reverse(work[k:])
	slices.Reverse(work)
	return work, 0
}

// loadTie is how much more loaded than the least loaded candidate another may be and still
// count as least loaded (five points of capacity): loads read a few seconds apart are noisy.
const loadTie = 0.05

// bestGroup returns the priority of the best (lowest) group of work with at least
// MinHealthy candidates, as failover's min_healthy has it; the best group of all when none
// has that many. work holds a candidate at least. It counts in place: after a step that
// depends on the query, the priority step runs per query.
func (c *Chain) bestGroup(work []int) int {
	lowest := c.cands[work[0]].Priority
	for _, i := range work[1:] {
		lowest = min(lowest, c.cands[i].Priority)
	}
	need := max(c.opts.MinHealthy, 1)
	if need == 1 {
		return lowest
	}
	best, found := 0, false
	for _, i := range work {
		p := c.cands[i].Priority
		if found && p >= best {
			continue
		}
		n := 0
		for _, j := range work {
			if c.cands[j].Priority == p {
				n++
			}
		}
		if n >= need {
			best, found = p, true
		}
	}
	if !found {
		return lowest
	}
	return best
}

// fastest keeps the candidates whose RTT is within the tolerance of the fastest's; those not
// measured are kept only when none is. The RTTs are those the vantage site measured when the
// client's location is one (and it measured them), this instance's otherwise.
func (c *Chain) fastest(work []int, site string) []int {
	var best time.Duration
	for _, i := range work {
		if r := c.rtt(i, site); r > 0 && (best == 0 || r < best) {
			best = r
		}
	}
	if best == 0 {
		return work
	}
	return keepIf(work, func(i int) bool {
		r := c.rtt(i, site)
		return r > 0 && c.opts.RTTTolerance.Within(r, best)
	})
}

// rtt returns candidate i's RTT as seen from site (its own when site measured none).
func (c *Chain) rtt(i int, site string) time.Duration {
	if site != "" {
		if r := c.cands[i].Vantages[site]; r > 0 {
			return r
		}
	}
	return c.cands[i].RTT
}

// leastLoaded leaves out the candidates loaded above max_load, unless all are (load
// shedding: the others take the traffic), and keeps the least loaded ones (within loadTie);
// those whose load is not known are kept only when none is known.
func (c *Chain) leastLoaded(work []int) []int {
	least, under := -1.0, false
	for _, i := range work {
		if l := c.cands[i].Load; l >= 0 {
			under = under || l <= c.opts.MaxLoad
			if least < 0 || l < least {
				least = l
			}
		}
	}
	if least < 0 {
		return work
	}
	return keepIf(work, func(i int) bool {
		l := c.cands[i].Load
		return l >= 0 && (!under || l <= c.opts.MaxLoad) && l <= least+loadTie
	})
}

// weighted returns the position in work of one candidate drawn in proportion to its weight
// (shared, as in mode weighted); the first when no weight is positive.
func (c *Chain) weighted(work []int) int {
	var sum uint64
	for _, i := range work {
		sum += c.share(i)
	}
	if sum == 0 {
		return 0
	}
	r := rand.Uint64N(sum)
	for pos, i := range work {
		if w := c.share(i); r < w {
			return pos
		} else {
			r -= w
		}
	}
	return len(work) - 1
}

// share returns candidate i's weight, divided by its share, scaled as mode weighted does.
func (c *Chain) share(i int) uint64 {
	w := c.cands[i].Weight
	if w <= 0 {
		return 0
	}
	return uint64(w) * shareScale / uint64(max(c.cands[i].Share, 1))
}
