package policy

import (
	"slices"
	"strings"

	"github.com/meridian-gslb/meridian/internal/config"
)

// The answers a prepared selection may give, for whoever prepares something per answer ahead
// of the queries (the signer of a signed zone signs each). A Set's are exactly those Pick
// gives; a GeoTable's and a Chain's are the common ones (a rarer combination is made when a
// query meets it).

// Answers calls yield with each set of indexes Pick may return, once each (in no particular
// order within a set): every candidate alone for the modes that pick one, the whole set for
// random, the group that failover answers with.
func (s *Set) Answers(yield func([]int)) {
	n := len(s.Order)
	if n == 0 {
		return
	}
	switch s.mode {
	case config.ModeRoundRobin, config.ModeWeighted, config.ModeIPHash, config.ModeConsistentHash:
		singles(n, yield)
	case config.ModeRandom:
		yield(seq(n))
	default:
		g := make([]int, 0, s.groupEnd-s.groupStart)
		for i := s.groupStart; i < s.groupEnd; i++ {
			g = append(g, i)
		}
		yield(g)
	}
}

// singles yields each of n indexes alone.
func singles(n int, yield func([]int)) {
	for i := range n {
		yield([]int{i})
	}
}

// Answers calls yield with the common sets of indexes Select returns: the best priority of the
// healthy candidates, each healthy candidate alone (the ASN step, and a weighted table's
// draw), and the healthy candidates that share a site or a place field (city, subdivision,
// country, continent, location), whole and their best priority.
func (t *GeoTable) Answers(yield func([]int)) {
	if t.healthy == 0 {
		return
	}
	var seen [][]int
	emit := func(set []int) {
		if len(set) == 0 {
			return
		}
		for _, s := range seen {
			if slices.Equal(s, set) {
				return
			}
		}
		seen = append(seen, set)
		yield(set)
	}
	emit(t.best)
	for i := range t.cands {
		if t.cands[i].Healthy {
			emit([]int{i})
		}
	}
	if t.weighted {
		return // every group answers with one of its candidates
	}
	keys := []func(c *prepared) string{
		func(c *prepared) string {
			if !c.HasCoords {
				return ""
			}
			return string(rune(c.site + 1))
		},
		func(c *prepared) string { return strings.ToLower(c.City) },
		func(c *prepared) string { return strings.ToLower(c.Subdivision) },
		func(c *prepared) string { return strings.ToLower(c.Country) },
		func(c *prepared) string { return strings.ToLower(c.Continent) },
		func(c *prepared) string { return strings.ToLower(c.Location) },
	}
	for _, key := range keys {
		groups := map[string][]int{}
		var order []string
		for i := range t.cands {
			c := &t.cands[i]
			if k := key(c); c.Healthy && k != "" {
				if _, ok := groups[k]; !ok {
					order = append(order, k)
				}
				groups[k] = append(groups[k], i)
			}
		}
		for _, k := range order {
			emit(groups[k])
			emit(t.bestOf(groups[k]))
		}
	}
}

// bestOf returns the candidates of group that have the best priority among them.
func (t *GeoTable) bestOf(group []int) []int {
	best := t.cands[group[0]].Priority
	for _, i := range group {
		best = min(best, t.cands[i].Priority)
	}
	var out []int
	for _, i := range group {
		if t.cands[i].Priority == best {
			out = append(out, i)
		}
	}
	return out
}

// Answers calls yield with the common sets of indexes Pick returns: the candidates the steps
// run ahead kept (at most max_answers of them), and each candidate alone.
func (c *Chain) Answers(yield func([]int)) {
	if len(c.cands) == 0 {
		return
	}
	base := c.base
	if c.opts.MaxAnswers > 0 && len(base) > c.opts.MaxAnswers {
		base = base[:c.opts.MaxAnswers]
	}
	yield(base)
	for i := range c.cands {
		if len(base) != 1 || base[0] != i {
			yield([]int{i})
		}
	}
}
