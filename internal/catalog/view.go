package catalog

import (
	"slices"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/policy"
)

// A record's View: the candidate sets the query path selects from, rebuilt by Refresh
// whenever health, measurements, overrides or a timer change them, and published with one
// atomic store so that queries never wait for it.

// View is a record's candidate sets at one moment of health: what the query path selects from.
type View struct {
	// Healthy holds, per family, the healthy and enabled backends in the order of Sets.
	Healthy [2][]*Backend
	// Sets are the mode's prepared selections over Healthy.
	Sets [2]*policy.Set
	// Enabled holds, per family, every enabled backend (the fail-open answer).
	Enabled [2][]*Backend
	// Configured tells, per family, whether the record has any backend of it at all.
	Configured [2]bool
	// AnyHealthy is set when some backend of the record, of either family, is healthy.
	AnyHealthy bool
	// Degraded tells, per family, that no backend of it is healthy and its stale ones (other
	// sites' targets not confirmed for the split-brain threshold) are served instead: a stale
	// answer beats an empty one.
	Degraded [2]bool
	// Failover tells, per family, that the failover mode answers from a worse priority than
	// the best of the record's enabled backends.
	Failover [2]bool
	// TTL is, per family, the TTL of the record's answers (its fallback answers included),
	// and TTLReason why: record_ttl while healthy, degraded_ttl while degraded, the drain TTL
	// ahead of a scheduled drain (see ChooseTTL).
	TTL       [2]uint32
	TTLReason [2]TTLReason
	// extra is what only some records' views have, nil when there is none of it (read it
	// with Extra): most records of a big zone have none, and a view of each is kept.
	extra *ViewExtra
}

// ViewExtra is the part of a view that only the records of some modes, fallbacks and
// deployments have.
type ViewExtra struct {
	// Chains are, for mode chain, per family, the chain prepared over Healthy (in its order);
	// nil for the other modes.
	Chains [2]*policy.Chain
	// Geo holds, for the geo modes, per family, the selection table over every backend of the
	// family, healthy or not (so that an explanation can say why one was skipped), in the
	// order of GeoBackends. It is nil for the other modes.
	Geo         [2]*policy.GeoTable
	GeoBackends [2][]*Backend
	// Published holds, per family, the localtargets-<record> answer: the healthy backends of
	// this site, for the other sites (config.Record.Publish).
	Published [2][]dns.RR
	// PublishedRTTs is the localrtt-<record> answer: this site's RTT to each of the record's
	// backends, for the other sites (config.Record.PublishRTT); nil otherwise.
	PublishedRTTs []dns.RR
	// LastGood holds, per family, the backends that were healthy the last time any was, still
	// enabled: the last-known-good fallback's answer (empty until one ever was, and for the
	// other fallback policies).
	LastGood [2][]*Backend
	// NextTTLChange is the next instant at which the TTL changes by time alone (a scheduled
	// drain's lead-in or one of its steps); zero for none. The record must be refreshed then.
	NextTTLChange time.Time
	// Watch follows a change of the record to its first answer (Record.Watch); nil for none.
	Watch *AnswerWatch
	// Signed are the view's prepared signatures (DNSSEC) in a signed zone; nil otherwise.
	Signed *SignedView
}

// noExtra is the extra part of the views that have none.
var noExtra ViewExtra

// Extra returns the part of the view that only some records have: the zero ViewExtra, shared,
// when it has none. It must not be modified.
func (v *View) Extra() *ViewExtra {
	if v.extra == nil {
		return &noExtra
	}
	return v.extra
}

// empty reports whether x holds nothing.
func (x *ViewExtra) empty() bool {
	for f := range 2 {
		if x.Chains[f] != nil || x.Geo[f] != nil || len(x.GeoBackends[f]) > 0 || len(x.Published[f]) > 0 || len(x.LastGood[f]) > 0 {
			return false
		}
	}
	return len(x.PublishedRTTs) == 0 && x.NextTTLChange.IsZero() && x.Watch == nil && x.Signed == nil
}

// FallbackApplies reports whether family f must be answered by the fallback policy: no backend
// of f is healthy, and either the record has backends of f or the whole record is down. A
// family the record does not serve stays NODATA while the other family is healthy.
func (v *View) FallbackApplies(f Family) bool {
	return len(v.Healthy[f]) == 0 && (v.Configured[f] || !v.AnyHealthy)
}

// inOrder returns healthy in the selection set's order: enabled itself when that is the same
// backends in the same order (every enabled backend healthy, the set in configuration order,
// the common case), so that the view keeps one slice for both; a new slice otherwise. A
// view's slices are never written once it is published.
func inOrder(healthy []*Backend, order []int, enabled []*Backend) []*Backend {
	same := len(order) == len(enabled)
	for i := 0; same && i < len(order); i++ {
		same = healthy[order[i]] == enabled[i]
	}
	if same {
		return slices.Clip(enabled)
	}
	out := make([]*Backend, len(order))
	for i, idx := range order {
		out[i] = healthy[idx]
	}
	return out
}

// run returns list, backends of the record in their order, as a subslice of Backends when it
// is a run of them (most views list every backend of a family, and a big zone keeps a view of
// each record), else as a copy; nil when list is empty.
func (r *Record) run(list []*Backend) []*Backend {
	if len(list) == 0 {
		return nil
	}
	if i, j := int(list[0].index), int(list[0].index)+len(list); j <= len(r.Backends) && slices.Equal(r.Backends[i:j], list) {
		return r.Backends[i:j:j]
	}
	return slices.Clone(list)
}

// View returns the record's current candidate sets. It never blocks.
func (r *Record) View() *View { return r.view.Load() }

// Refresh rebuilds the record's candidate sets from the current health words and publishes
// them. Call it after any of the record's backends changed state.
func (r *Record) Refresh() { r.refresh(time.Now()) }

// refresh is Refresh at now.
func (r *Record) refresh(now time.Time) {
	r.refreshMu.Lock()
	defer r.refreshMu.Unlock()
	v := &View{}
	var x ViewExtra
	var rampNext time.Time // the next step of a slow start, zero when none ramps
	for f := IPv4; f <= IPv6; f++ {
		stale := r.onlyStale(f)
		v.Degraded[f] = stale
		// The family's backends are gathered on the stack (most records have a few), and only
		// what the view keeps is copied to the heap.
		var healthyBuf, enabledBuf [4]*Backend
		var candsBuf [4]policy.Candidate
		healthy, enabled, cands := healthyBuf[:0], enabledBuf[:0], candsBuf[:0]
		for _, b := range r.Backends {
			if !b.inFamily(f) {
				continue
			}
			v.Configured[f] = true
			if !b.Enabled() {
				continue
			}
			enabled = append(enabled, b)
			if rr := r.publishedRR(int(b.index)); rr != nil && b.Healthy() {
				x.Published[f] = append(x.Published[f], rr)
			}
			if b.servable(stale) {
				healthy = append(healthy, b)
				cands = append(cands, policy.Candidate{
					Priority: int(b.Config.Priority),
					Weight:   b.Weight(),
					Addr:     b.Config.IP,
					Host:     b.Config.Address,
					Share:    b.Config.Share(),
					RTT:      b.State.RTT(),
					Load:     b.RelativeLoad(),
					Vantages: b.State.VantageRTTs(),
				})
			}
		}
		v.Enabled[f] = r.run(enabled)
		healthy, cands = shiftIdle(healthy, cands)
		var next time.Time
		if healthy, cands, next = r.slowStart(now, healthy, cands); !next.IsZero() && (rampNext.IsZero() || next.Before(rampNext)) {
			rampNext = next
		}
		if policy.IsGeo(r.Config.Mode) {
			x.Geo[f], x.GeoBackends[f] = r.geoTable(f, stale)
		}
		set := policy.Prepare(r.Config.Mode, cands, policy.OptionsOf(r.Config), &r.counter)
		v.Failover[f] = r.Config.Mode == config.ModeFailover && len(healthy) > 0 &&
			(bestPriority(healthy) > bestPriority(v.Enabled[f]) || set.SkippedGroups())
		v.Sets[f] = set
		v.AnyHealthy = v.AnyHealthy || len(healthy) > 0
		v.Healthy[f] = inOrder(healthy, set.Order, v.Enabled[f])
		if r.Config.Mode == config.ModeChain {
			x.Chains[f] = r.chain(v.Healthy[f], cands, set.Order)
		}
		if r.Config.Settings().Fallback.Mode == config.FallbackLastKnownGood {
			if len(healthy) > 0 {
				r.extra.lastGood[f] = v.Healthy[f]
			}
			x.LastGood[f] = slices.DeleteFunc(slices.Clone(r.extra.lastGood[f]), func(b *Backend) bool { return !b.Enabled() })
		}
		r.chooseTTL(v, &x, f, now)
	}
	x.Watch = r.watch()
	x.PublishedRTTs = r.publishedRTTs()
	switch {
	case r.Zone.signing != nil:
		extra := x
		v.extra = &extra
		extra.Signed = r.signView(v, now) // what it answers is in v, with its extra part
	case !x.empty():
		extra := x // x itself stays on the stack
		v.extra = &extra
	}
	r.view.Store(v)
	if x.Watch != nil {
		x.Watch.swapped.CompareAndSwap(0, time.Now().UnixNano())
	}
	r.Zone.changes.Add(1)
	r.scheduleRamp(now, rampNext)
}

// chain prepares the record's chain over healthy, the family's healthy backends in the set's
// order, whose candidates are cands in the order given to policy.Prepare (order maps one to the
// other).
func (r *Record) chain(healthy []*Backend, cands []policy.Candidate, order []int) *policy.Chain {
	ordered := make([]policy.Candidate, len(order))
	geoCands := make([]policy.GeoCandidate, len(order))
	for i, idx := range order {
		ordered[i] = cands[idx]
		geoCands[i] = geoCandidate(healthy[i], true)
	}
	s := r.Config.Steering()
	return policy.PrepareChain(policy.ChainOptions{Steps: s.Chain, MaxAnswers: s.MaxAnswers, RTTTolerance: s.RTTTolerance, MaxLoad: s.MaxLoad, HashPrefix: s.HashPrefix, MinHealthy: s.MinHealthy},
		ordered, geoCands, &r.counter)
}

// onlyStale reports whether no enabled backend of family f is healthy and some are stale.
func (r *Record) onlyStale(f Family) bool {
	stale := false
	for _, b := range r.Backends {
		if !b.inFamily(f) || !b.Enabled() {
			continue
		}
		if b.Healthy() {
			return false
		}
		stale = stale || b.Status() == health.Stale
	}
	return stale
}

// bestPriority returns the best (lowest) priority of backends, which must not be empty.
func bestPriority(backends []*Backend) int {
	best := backends[0].Config.Priority
	for _, b := range backends[1:] {
		best = min(best, b.Config.Priority)
	}
	return int(best)
}

// geoTable prepares the geo modes' table over the record's backends of family f, serving its
// stale backends when stale is set.
func (r *Record) geoTable(f Family, stale bool) (*policy.GeoTable, []*Backend) {
	var backends []*Backend
	var cands []policy.GeoCandidate
	for _, b := range r.Backends {
		if !b.inFamily(f) {
			continue
		}
		backends = append(backends, b)
		cands = append(cands, geoCandidate(b, b.servable(stale)))
	}
	return policy.PrepareGeo(r.Config.Mode, cands), backends
}

// geoCandidate returns b as the geo modes see it, healthy or not.
func geoCandidate(b *Backend, healthy bool) policy.GeoCandidate {
	c, l := b.Config, b.Config.Labels()
	return policy.GeoCandidate{
		Healthy:     healthy,
		Priority:    int(c.Priority),
		Weight:      b.Weight(),
		Share:       c.Share(),
		Country:     l.Country,
		Subdivision: l.Subdivision,
		City:        l.City,
		Continent:   l.Continent,
		Location:    l.Location,
		ASN:         l.ASN,
		Lat:         l.Latitude,
		Lon:         l.Longitude,
		HasCoords:   l.HasCoords,
	}
}
