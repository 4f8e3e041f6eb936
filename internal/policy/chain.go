package policy

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
)

// loadTie is how much more loaded than the least loaded candidate another may be and still
// count as least loaded (five points of capacity): loads read a few seconds apart are noisy.
const loadTie = 0.05

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
// steps that do not depend on the client (priority, rtt, load) before the first one that does
// run once, in PrepareChain; Pick runs the others per query, in place in its destination.
type Chain struct {
	opts  ChainOptions
	cands []Candidate
	// geo and affinity are the geo steps' tables over cands (nil without the step), and hash
	// the hash step's rendezvous hashing.
	geo, affinity *GeoTable
	hash          *Rendezvous
	// base are the candidates the prepared steps kept, and from the index of the first step
	// Pick runs.
	base []int
	from int
	// vantages is set when a candidate has RTTs by vantage site: the rtt step then depends on
	// the client's location, and runs per query.
	vantages bool
	next     *atomic.Uint64
}

// PrepareChain prepares opts's chain over cands, the healthy candidates of one family; geoCands
// are the same candidates' geographic fields (in the same order), read by the geo and
// affinity steps. counter is the record's rotation counter (the roundrobin step).
func PrepareChain(opts ChainOptions, cands []Candidate, geoCands []GeoCandidate, counter *atomic.Uint64) *Chain {
	c := &Chain{opts: opts, cands: cands, next: counter}
	for _, s := range opts.Steps {
		switch s {
		case config.StepGeo:
			c.geo = PrepareGeo(config.ModeGeoIP, geoCands)
		case config.StepAffinity:
			c.affinity = PrepareGeo(config.ModeGeoIPAffinity, geoCands)
		case config.StepHash:
			c.hash = PrepareRendezvous(cands, opts.HashPrefix)
		}
	}
	c.base = make([]int, len(cands))
	for i := range c.base {
		c.base[i] = i
	}
	c.vantages = slices.Contains(opts.Steps, config.StepRTT) && slices.ContainsFunc(cands, func(x Candidate) bool { return len(x.Vantages) > 0 })
	for c.from < len(opts.Steps) && len(c.base) > 1 && !c.perQuery(opts.Steps[c.from]) {
		c.base = c.narrow(opts.Steps[c.from], c.base)
		c.from++
	}
	return c
}

// perQuery reports whether step s depends on the query (its client, or chance), so that it
// cannot be run ahead: rtt does when RTTs by vantage site are known.
func (c *Chain) perQuery(s config.ChainStep) bool {
	return s == config.StepGeo || s == config.StepAffinity || s.Selects() || s == config.StepRTT && c.vantages
}

// Len returns the number of candidates the chain chooses from.
func (c *Chain) Len() int { return len(c.cands) }

// NeedsLocation reports whether a step of the chain looks the client's location up (geo,
// affinity, rtt by vantage), which the caller must then give Pick.
func (c *Chain) NeedsLocation() bool { return c.geo != nil || c.affinity != nil || c.vantages }

// Pick appends to dst the candidates chosen for a query from client (whose location, for the
// geo steps, is loc in src) and returns dst and the EDNS Client Subnet scope the choice
// depends on. It appends nothing when there is no candidate.
func (c *Chain) Pick(client netip.Addr, src *geo.Sources, loc *geo.Location, dst []int) ([]int, int) {
	start := len(dst)
	dst = append(dst, c.base...)
	work, scope := dst[start:], 0
	for _, s := range c.opts.Steps[c.from:] {
		if len(work) <= 1 {
			break
		}
		var sc int
		work, sc = c.step(s, work, client, src, loc)
		scope = max(scope, sc)
	}
	if c.opts.MaxAnswers > 0 && len(work) > c.opts.MaxAnswers {
		work = work[:c.opts.MaxAnswers]
	}
	return dst[:start+len(work)], scope
}

// step runs one step over work, in place, and returns what it kept (a prefix of work, in the
// step's order) and the scope it depends on.
func (c *Chain) step(s config.ChainStep, work []int, client netip.Addr, src *geo.Sources, loc *geo.Location) ([]int, int) {
	switch s {
	case config.StepGeo:
		return keepPicked(c.geo, work, src, loc)
	case config.StepAffinity:
		return keepPicked(c.affinity, work, src, loc)
	case config.StepWeighted:
		front(work, c.weighted(work))
	case config.StepHash:
		front(work, max(c.hash.Pick(work, client), 0))
		return work, HashBits(c.opts.HashPrefix, client)
	case config.StepRandom:
		for i := len(work) - 1; i > 0; i-- {
			j := rand.IntN(i + 1)
			work[i], work[j] = work[j], work[i]
		}
	case config.StepRTT: // per query: by the client's vantage site, its location in the map
		site, scope := "", 0
		if loc != nil {
			site, scope = loc.Map.Location, loc.Map.Bits
		}
		return c.fastest(work, site), scope
	case config.StepRoundRobin:
		k := int(c.next.Add(1)-1) % len(work)
		slices.Reverse(work[:k]) // rotate left by k, in place
		slices.Reverse(work[k:])
		slices.Reverse(work)
	default:
		return c.narrow(s, work), 0
	}
	return work, 0
}

// narrow runs a step that does not depend on the query over work, in place.
func (c *Chain) narrow(s config.ChainStep, work []int) []int {
	switch s {
	case config.StepPriority:
		best := c.bestGroup(work)
		return keepIf(work, func(i int) bool { return c.cands[i].Priority == best })
	case config.StepRTT:
		return c.fastest(work, "")
	case config.StepLoad:
		return c.leastLoaded(work)
	}
	return work
}

// bestGroup returns the priority of the best (lowest) group of work with at least
// MinHealthy candidates, as failover's min_healthy has it; the best group of all when none
// has that many. It runs when the chain is prepared, never per query.
func (c *Chain) bestGroup(work []int) int {
	counts := map[int]int{}
	for _, i := range work {
		counts[c.cands[i].Priority]++
	}
	groups := slices.Sorted(maps.Keys(counts))
	for _, p := range groups {
		if counts[p] >= max(c.opts.MinHealthy, 1) {
			return p
		}
	}
	return groups[0]
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
	for k, s := range c.opts.Steps {
		if len(work) <= 1 {
			out = append(out, ChainTrace{Step: s, Kept: slices.Clone(work), Note: "not run: one candidate left"})
			continue
		}
		before := len(work)
		var note string
		work, _ = c.step(s, work, client, src, loc)
		switch {
		case s.Selects():
			note = "orders what is left: " + selectRule(s)
		case len(work) == before:
			note = "kept every candidate"
		default:
			note = fmt.Sprintf("kept %d of %d", len(work), before)
		}
		out = append(out, ChainTrace{Step: s, Kept: slices.Clone(work), Prepared: k < c.from, Note: note})
	}
	if c.opts.MaxAnswers > 0 && len(work) > c.opts.MaxAnswers {
		out = append(out, ChainTrace{Step: "max_answers", Kept: slices.Clone(work[:c.opts.MaxAnswers]), Note: fmt.Sprintf("the first %d", c.opts.MaxAnswers)})
	}
	return out
}

// selectRule says how a selection step orders the candidates.
func selectRule(s config.ChainStep) string {
	switch s {
	case config.StepWeighted:
		return "one drawn in proportion to weight first"
	case config.StepRandom:
		return "shuffled"
	case config.StepRoundRobin:
		return "rotated, one turn per query"
	}
	return "the one consistent hashing of the client's subnet chooses first" // hash
}

// seq returns 0..n-1.
func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
