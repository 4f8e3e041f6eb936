package catalog

import (
	"maps"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/health"
)

// Hypothesis is what a what-if explanation supposes of some backends: down, drained, or both
// lists. A selector is a backend key (record|address|port), an address (every backend with
// it), site:NAME (every backend of that site) or location:NAME (every backend with that
// location, as ctl's -location selects).
type Hypothesis struct {
	Down, Drained []string
}

// Empty reports whether h supposes nothing.
func (h Hypothesis) Empty() bool { return len(h.Down) == 0 && len(h.Drained) == 0 }

// Matches reports whether the selector sel names b.
func Matches(b *Backend, sel string) bool {
	if site, ok := strings.CutPrefix(sel, "site:"); ok {
		return b.Config.Site() == site
	}
	if loc, ok := strings.CutPrefix(sel, "location:"); ok {
		return b.Config.Labels().Location == loc
	}
	return b.Key() == sel || b.Config.Address == sel || b.Config.IP.IsValid() && b.Config.IP.String() == sel
}

// WhatIf returns a snapshot like s in which the backends h selects are down or drained (a
// drained one is disabled by an operator), and the keys of those backends: what the answers
// would be. The records with none of them are shared with s; the others are copies, refreshed
// with the hypothesis. It is for explanations, never served: its copies' health is frozen.
func (s *Snapshot) WhatIf(h Hypothesis) (*Snapshot, []string) {
	out := &Snapshot{zones: maps.Clone(s.zones), heartbeat: s.heartbeat, records: make([]*Record, len(s.records))}
	var matched []string
	copied := map[string]*Zone{}
	for i, r := range s.records {
		var down, drained []bool
		hit := false
		for _, b := range r.Backends {
			d, dr := matchesAny(b, h.Down), matchesAny(b, h.Drained)
			down, drained = append(down, d), append(drained, dr)
			if d || dr {
				hit = true
				matched = append(matched, b.Key())
			}
		}
		if !hit {
			out.records[i] = r
			continue
		}
		c := r.supposing(down, drained)
		z := copied[r.Zone.Origin]
		if z == nil {
			z = r.Zone.clone()
			copied[z.Origin] = z
			out.zones[z.Origin] = z
		}
		c.Zone = z
		z.relink(r, c)
		c.Refresh()
		c.refreshMu.Lock()
		c.scheduleRamp(time.Time{}, time.Time{}) // a copy is never refreshed again
		c.refreshMu.Unlock()
		out.records[i] = c
	}
	out.indexZones()
	return out, matched
}

// matchesAny reports whether a selector of sels names b.
func matchesAny(b *Backend, sels []string) bool {
	for _, sel := range sels {
		if Matches(b, sel) {
			return true
		}
	}
	return false
}

// supposing returns a copy of r whose backends are as they are, except those down (a frozen
// down state) or drained (disabled) by index.
func (r *Record) supposing(down, drained []bool) *Record {
	c := &Record{Config: r.Config}
	c.counter.Store(r.counter.Load())
	copies := make(map[*Backend]*Backend, len(r.Backends))
	for i, b := range r.Backends {
		nb := &Backend{Config: b.Config, record: c, State: b.State, index: b.index}
		nb.override.Store(b.override.Load())
		nb.drainAt.Store(b.drainAt.Load())
		if down[i] {
			nb.State = &health.State{}
			nb.State.Set(health.Down)
		}
		if drained[i] {
			nb.SetOverride(ForceDisable)
		}
		c.Backends = append(c.Backends, nb)
		copies[b] = nb
	}
	if r.extra != nil {
		c.extra = &recordExtra{ips: r.extra.ips, cname: r.extra.cname, published: r.extra.published}
		r.refreshMu.Lock()
		for f, good := range r.extra.lastGood {
			for _, b := range good {
				c.extra.lastGood[f] = append(c.extra.lastGood[f], copies[b])
			}
		}
		r.refreshMu.Unlock()
	}
	return c
}

// relink makes the zone's copied name tree point at c where it pointed at r.
func (z *Zone) relink(r, c *Record) {
	for name, n := range z.nodes {
		if n.record == r || n.wildcard == r {
			nc := *n
			if nc.record == r {
				nc.record = c
			}
			if nc.wildcard == r {
				nc.wildcard = c
			}
			z.nodes[name] = &nc
		}
	}
}
