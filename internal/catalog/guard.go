package catalog

import (
	"fmt"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// The drain guard (config.DrainGuard): how much of a record's capacity is served, by address
// family, and which changes of the overrides would leave a record below its guard.

// Capacity is how much of a record's backends of one address family is served (healthy and
// enabled): a host-name backend counts in both families, as it answers both.
type Capacity struct {
	Served, Backends    int
	Weight, TotalWeight int64
}

// Share is the served share of the family's weight, from 0 to 1 (0 without backends).
func (c Capacity) Share() float64 {
	if c.TotalWeight == 0 {
		return 0
	}
	return float64(c.Weight) / float64(c.TotalWeight)
}

// String says it for people: "1 of 3 backends served, 33.3% of the weight".
func (c Capacity) String() string {
	return fmt.Sprintf("%d of %d backends served, %s of the weight", c.Served, c.Backends, config.FormatShare(round3(c.Share())))
}

// round3 rounds a share to a tenth of a percent, for messages.
func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

// Breach is a record family that a change would leave below its drain guard, or that a
// hypothesis finds below it.
type Breach struct {
	Record string
	Family Family
	Guard  config.DrainGuard
	// Before is the capacity served now; After what the change or hypothesis leaves.
	Before, After Capacity
}

// String says it for people and logs.
func (b Breach) String() string {
	return fmt.Sprintf("%s %s: %s (was %d), drain_guard wants %s", b.Record, b.Family, b.After, b.Before.Served, b.Guard)
}

// String names the family as the DNS type it answers.
func (f Family) String() string {
	if f == IPv6 {
		return "AAAA"
	}
	return "A"
}

// Capacity returns the record's capacity in family f as it would be if served(b) said which
// backends are served, and whether the record has backends of the family at all.
func (r *Record) Capacity(f Family, served func(*Backend) bool) (Capacity, bool) {
	var c Capacity
	zeroIdle := r.Config.Steering().ZeroWeightIdle
	for _, b := range r.Backends {
		if !b.inFamily(f) || b.Config.Address == "" {
			continue
		}
		w := int64(b.Config.Weight)
		if w <= 0 && !zeroIdle {
			w = 1 // weighted counts a weight of 0 as 1 (policy.scaledWeight)
		}
		w = max(w, 0)
		c.Backends++
		c.TotalWeight += w
		if served(b) {
			c.Served++
			c.Weight += w
		}
	}
	return c, c.Backends > 0
}

// Guarded returns the breaches of the record's drain guard that the backends served by after
// (instead of those served now by their overrides, Backend.ServedNow) would make: a family whose capacity after
// is below the guard and less than now. A change that takes out nothing served now breaks
// nothing, even on a record already below its guard. Without a guard, none.
func (r *Record) Guarded(after func(*Backend) bool) []Breach {
	g := r.Config.Settings().Guard
	if !g.On() {
		return nil
	}
	var out []Breach
	for f := IPv4; f <= IPv6; f++ {
		before, ok := r.Capacity(f, (*Backend).ServedNow)
		if !ok {
			continue
		}
		a, _ := r.Capacity(f, after)
		if (a.Served < before.Served || a.Weight < before.Weight) && !g.Allows(a.Served, a.Share()) {
			out = append(out, Breach{Record: r.Name(), Family: f, Guard: g, Before: before, After: a})
		}
	}
	return out
}

// Below returns the families of the record that are below its drain guard now: on a what-if
// snapshot, what a drill reports. Before is what the record serves in s, its served
// snapshot's record (nil: the same as After).
func (r *Record) Below(served *Record) []Breach {
	g := r.Config.Settings().Guard
	if !g.On() {
		return nil
	}
	var out []Breach
	for f := IPv4; f <= IPv6; f++ {
		a, ok := r.Capacity(f, (*Backend).Healthy)
		if !ok || g.Allows(a.Served, a.Share()) {
			continue
		}
		before := a
		if served != nil {
			before, _ = served.Capacity(f, (*Backend).Healthy)
		}
		out = append(out, Breach{Record: r.Name(), Family: f, Guard: g, Before: before, After: a})
	}
	return out
}

// ServedWith reports whether b would be served with the override o in place of its own: o
// enables or disables it (ForceUp also serves it as healthy), NoOverride leaves it to its
// configuration. A scheduled drain's start is not looked at: o decides.
func (b *Backend) ServedWith(o Override) bool {
	enabled := b.Config.Enable
	switch o {
	case ForceEnable, ForceUp:
		enabled = true
	case ForceDisable:
		enabled = false
	}
	return enabled && (o == ForceUp || b.alwaysUp() || b.State.Status() == health.Up)
}

// ServedNow reports whether b is served by its override and health, whether or not a
// scheduled drain's start has passed: what the drain guard compares a change with.
func (b *Backend) ServedNow() bool { return b.ServedWith(b.Override()) }

// GuardBreaches returns the breaches of the drain guards of the records of s that the
// overrides after (by backend key; the backends not in it keep theirs) would make.
func (s *Snapshot) GuardBreaches(after map[string]Override) []Breach {
	if len(after) == 0 {
		return nil
	}
	var out []Breach
	var buf [128]byte
	for _, r := range s.records {
		if !r.Config.Settings().Guard.On() {
			continue
		}
		var changed map[*Backend]Override
		for _, b := range r.Backends {
			if o, ok := after[string(b.AppendKey(buf[:0]))]; ok {
				if changed == nil {
					changed = make(map[*Backend]Override)
				}
				changed[b] = o
			}
		}
		if changed == nil {
			continue
		}
		out = append(out, r.Guarded(func(b *Backend) bool {
			if o, ok := changed[b]; ok {
				return b.ServedWith(o)
			}
			return b.ServedNow()
		})...)
	}
	return out
}
