package health

import (
	"math"
	"time"
)

// rareState is what few backends have, kept out of line so that the backend struct every
// probed backend takes stays in a small allocation class: it is allocated on first use
// (backend.more) and nil on most backends.
type rareState struct {
	// subs are the subscriptions of a backend of several checks, in spec order (a backend of
	// one check keeps its own in backend.one).
	subs []subscription
	// report is, on an External backend, what its source last said (Report): Unknown before
	// the first report, or the seeded status.
	report *report
	// history is its last hour of results and status changes (history.go); nil without
	// Options.History or past Options.MaxHistories.
	history *history
	// capacity is the Spec's Capacity when it is neither 0 nor DefaultCapacity's 1, else 0.
	capacity float64
	// loadAnnounced is the load last announced (NaN: unknown).
	loadAnnounced float64
	// bySite are its RTTs by site, nil for none: only quorum mode and other sites' published
	// RTTs give any.
	bySite *siteRTTs
}

// more returns b's rare state, allocated on first use.
func (b *backend) more() *rareState {
	if b.rare == nil {
		b.rare = &rareState{loadAnnounced: math.NaN()}
	}
	return b.rare
}

// subscriptions returns b's checks' subscriptions, in spec order.
func (b *backend) subscriptions() []subscription {
	if b.one[0].backend != nil {
		return b.one[:]
	}
	if b.rare != nil {
		return b.rare.subs
	}
	return nil
}

// report returns what the source of External backend b last said, nil on other backends.
func (b *backend) report() *report {
	if b.rare == nil {
		return nil
	}
	return b.rare.report
}

// history returns b's history, nil when it keeps none.
func (b *backend) history() *history {
	if b.rare == nil {
		return nil
	}
	return b.rare.history
}

// setHistory sets b's history (nil: none).
func (b *backend) setHistory(h *history) {
	if h != nil || b.rare != nil {
		b.more().history = h
	}
}

// capacity returns the load at which b is full (Spec.Capacity, 1 for 0).
func (b *backend) capacity() float64 {
	if b.rare == nil || b.rare.capacity == 0 {
		return 1
	}
	return b.rare.capacity
}

// setCapacity sets b's capacity (Spec.Capacity).
func (b *backend) setCapacity(c float64) {
	if c > 0 && c != 1 {
		b.more().capacity = c
	} else if b.rare != nil {
		b.rare.capacity = 0
	}
}

// loadAnnounced returns the load last announced of b, NaN for none.
func (b *backend) loadAnnounced() float64 {
	if b.rare == nil {
		return math.NaN()
	}
	return b.rare.loadAnnounced
}

// vantages returns the smoothed RTTs of the quorum's sites, nil for none.
func (b *backend) vantages() map[string]time.Duration {
	if b.rare == nil || b.rare.bySite == nil {
		return nil
	}
	return b.rare.bySite.vantages
}

// sites returns b's RTTs by site, allocated on first use.
func (b *backend) sites() *siteRTTs {
	r := b.more()
	if r.bySite == nil {
		r.bySite = &siteRTTs{}
	}
	return r.bySite
}
