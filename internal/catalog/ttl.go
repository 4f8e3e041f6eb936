package catalog

import (
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
)

// TTLReason says why a family of a record answers with the TTL it does (View.TTLReason). It
// is one byte, since every view holds two; String names it.
type TTLReason uint8

// The reasons, from the healthy case to the most degraded one.
const (
	// TTLHealthy is record_ttl: every enabled backend of the family is healthy.
	TTLHealthy TTLReason = iota
	// TTLBackendDown is degraded_ttl: an enabled backend of the family is not healthy.
	TTLBackendDown
	// TTLFailover is degraded_ttl: the failover mode answers from a worse priority.
	TTLFailover
	// TTLStale is degraded_ttl: only stale backends are served (View.Degraded).
	TTLStale
	// TTLFallback is degraded_ttl: the fallback policy answers.
	TTLFallback
	// TTLDrainAhead is the drain TTL, capped by the seconds left: a scheduled drain of a
	// backend of the family starts within record_ttl.
	TTLDrainAhead
)

// ttlReasonNames are the reasons' names, as the admin API and explain show them.
var ttlReasonNames = [...]string{TTLHealthy: "healthy", TTLBackendDown: "backend down", TTLFailover: "failover",
	TTLStale: "stale", TTLFallback: "fallback", TTLDrainAhead: "drain ahead"}

// String returns the reason's name: "healthy", "backend down", "failover", "stale",
// "fallback" or "drain ahead".
func (r TTLReason) String() string {
	if int(r) < len(ttlReasonNames) {
		return ttlReasonNames[r]
	}
	return "unknown"
}

// Degraded reports whether the reason is one of degraded_ttl's.
func (r TTLReason) Degraded() bool { return r != TTLHealthy && r != TTLDrainAhead }

// chooseTTL sets v.TTL[f] and v.TTLReason[f] from the rest of v's family f, and moves
// x.NextTTLChange (v's extra part) to the next instant after now at which the TTL changes by
// time alone.
func (r *Record) chooseTTL(v *View, x *ViewExtra, f Family, now time.Time) {
	why := r.degradation(v, f)
	ttl := r.Config.TTL
	if why.Degraded() {
		ttl = r.Config.DegradedAnswerTTL()
	}
	for _, b := range r.Backends {
		start := b.DrainAt()
		if start.IsZero() || !b.inFamily(f) || !now.Before(start) {
			continue
		}
		dttl, until := DrainTTL(r.Config, start, now)
		if !until.IsZero() && (x.NextTTLChange.IsZero() || until.Before(x.NextTTLChange)) {
			x.NextTTLChange = until
		}
		ahead := start.Sub(now) <= time.Duration(r.Config.TTL)*time.Second
		if ahead && (dttl < ttl || dttl == ttl && !why.Degraded()) {
			ttl, why = dttl, TTLDrainAhead
		}
	}
	v.TTL[f], v.TTLReason[f] = ttl, why
}

// degradation returns why family f of v is degraded, or TTLHealthy.
func (r *Record) degradation(v *View, f Family) TTLReason {
	switch {
	case v.FallbackApplies(f):
		return TTLFallback
	case v.Degraded[f]:
		return TTLStale
	case v.Failover[f]:
		return TTLFailover
	}
	for _, b := range v.Enabled[f] {
		if !b.Healthy() {
			return TTLBackendDown
		}
	}
	return TTLHealthy
}

// DrainTTL returns the TTL of rec's answers at now for a drain that starts at start, and the
// next instant at which it changes (zero once the drain started). Before start − record_ttl
// the drain does not lower the TTL: it returns record_ttl, until then. From there to start −
// drain_ttl it is drain_ttl (config.Record.DrainAnswerTTL), and in the last drain_ttl seconds
// it steps down every second, so that an answer given before start expires by start: with k
// the whole seconds left, rounded up, it is k − 1 until start − (k − 1) s. A resolver that
// honours TTLs holds no answer with the backend when the drain starts.
func DrainTTL(rec *config.Record, start, now time.Time) (ttl uint32, until time.Time) {
	left := start.Sub(now)
	switch {
	case left <= 0:
		return rec.TTL, time.Time{}
	case left > time.Duration(rec.TTL)*time.Second:
		return rec.TTL, start.Add(-time.Duration(rec.TTL) * time.Second)
	}
	d := rec.DrainAnswerTTL()
	if left > time.Duration(d)*time.Second {
		return d, start.Add(-time.Duration(d) * time.Second)
	}
	k := uint32((left + time.Second - 1) / time.Second) // whole seconds left, rounded up
	return k - 1, start.Add(-time.Duration(k-1) * time.Second)
}
