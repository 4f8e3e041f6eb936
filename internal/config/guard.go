package config

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// DrainGuard is a record's drain guard (drain_guard): the least healthy capacity that must stay
// served when an operator takes backends out. A drain, disable or change of override that would
// leave one of the record's address families below it is refused unless forced with a reason,
// and a scheduled drain that would at its start is held. The zero DrainGuard is no guard.
type DrainGuard struct {
	// MinHealthy is how many of a family's backends must stay served (healthy and enabled);
	// 0 for no minimum.
	MinHealthy int
	// MinShare is the share of a family's weight that must stay served, from 0 to 1; 0 for no
	// minimum.
	MinShare float64
}

// On reports whether the guard asks for anything.
func (g DrainGuard) On() bool { return g.MinHealthy > 0 || g.MinShare > 0 }

// String says what the guard asks, as drain_guard is written.
func (g DrainGuard) String() string {
	var parts []string
	if g.MinHealthy > 0 {
		parts = append(parts, fmt.Sprintf("min_healthy %d", g.MinHealthy))
	}
	if g.MinShare > 0 {
		parts = append(parts, "min_share "+FormatShare(g.MinShare))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// FormatShare writes a share from 0 to 1 as a percentage ("50%", "33.3%").
func FormatShare(f float64) string {
	return strconv.FormatFloat(f*100, 'f', -1, 64) + "%"
}

// Allows reports whether served backends out of a family, carrying share of its weight, are
// enough for the guard.
func (g DrainGuard) Allows(served int, share float64) bool {
	// A share within a millionth of the floor counts as on it: weights are integers, and
	// 1/3 of 3 is not below 33.3333% written as a percentage.
	return served >= g.MinHealthy && share+1e-9 >= g.MinShare
}

// drainGuard parses drain_guard: a mapping of min_healthy (an integer, at least 0) and
// min_share (a percentage, "50%", or a fraction from 0 to 1).
func (p *parser) drainGuard(n *yaml.Node, path string) (DrainGuard, bool) {
	var g DrainGuard
	ok := true
	for _, e := range p.entries(n, path) {
		kpath := child(path, e.key)
		switch e.key {
		case "min_healthy":
			v, good := p.integer(e.v, kpath, 0, 1<<20)
			g.MinHealthy, ok = int(v), ok && good
		case "min_share":
			v, good := p.share(e.v, kpath)
			g.MinShare, ok = v, ok && good
		default:
			p.unknownKey(e, path, []string{"min_healthy", "min_share"})
			ok = false
		}
	}
	return g, ok
}

// share parses a share: a percentage from 0% to 100%, or a number from 0 to 1.
func (p *parser) share(n *yaml.Node, path string) (float64, bool) {
	s := YAMLResolve(n)
	if s.Kind == yaml.ScalarNode {
		if pct, found := strings.CutSuffix(strings.TrimSpace(s.Value), "%"); found {
			v, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
			if err != nil || v < 0 || v > 100 {
				p.Errorf(s, path, "must be a percentage from 0%% to 100%%, not %q", s.Value)
				return 0, false
			}
			return v / 100, true
		}
	}
	return p.number(n, path, 0, 1)
}
