package catalog

import (
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// A backend as the query path sees it: its health word, the operator's override and
// scheduled drain that decide whether it is served, and its key (record, address, port),
// which is never stored but made when asked for.

// Backend is one compiled backend of a record.
type Backend struct {
	Config *config.Backend
	// record is the record the backend is of, whose name its Key starts with.
	record *Record
	// State is the backend's health state: unprobedState, shared, for the backends that are
	// never probed and count as up (alwaysUp).
	State *health.State
	// override is the operator's Override of the configured enable flag, in its low byte, and
	// above it a shift's weight of the backend plus one (0: none; see SetShiftWeight): one word,
	// as a big zone holds many backends.
	override atomic.Int32
	// index is the backend's place in its record's Backends, where its counter of
	// Record.CountSelected is. It sits beside override: a big zone holds many backends, and
	// padding after either would cost 8 bytes a backend.
	index int32
	// drainAt is when a scheduled drain of the backend starts, in Unix nanoseconds; 0 for none.
	drainAt atomic.Int64
}

// Override is an operator's decision on a backend that takes precedence over the enable flag
// of its configuration, without editing the file (admin API, drains).
type Override int32

// The overrides.
const (
	// NoOverride serves the backend as its configuration says.
	NoOverride Override = iota
	// ForceEnable serves the backend even when its configuration disables it.
	ForceEnable
	// ForceDisable never serves the backend (disabled or drained).
	ForceDisable
	// ForceUp serves the backend as healthy whatever its probes say (and even when its
	// configuration disables it): the operator knows it works.
	ForceUp
)

// overrideMask is the part of Backend.override that holds the Override.
const overrideMask = 0xff

// MaxShiftWeight is the largest weight a shift gives a backend.
const MaxShiftWeight = 1<<23 - 2

// SetOverride sets the backend's override and reports whether it changed. Call the record's
// Refresh afterwards for answers to follow.
func (b *Backend) SetOverride(o Override) bool {
	for {
		old := b.override.Load()
		if b.override.CompareAndSwap(old, old&^overrideMask|int32(o)) {
			return Override(old&overrideMask) != o
		}
	}
}

// SetDrainAt sets when a scheduled drain of the backend starts (the zero time for none), and
// reports whether it changed. Before that instant the backend is served as its override and
// health say, but from one record_ttl before it the record's answers carry the drain TTL (see
// View.TTL). Call the record's Refresh afterwards, and again at the instants of NextTTLChange.
func (b *Backend) SetDrainAt(t time.Time) bool {
	var n int64
	if !t.IsZero() {
		n = t.UnixNano()
	}
	return b.drainAt.Swap(n) != n
}

// DrainAt returns when a scheduled drain of the backend starts, or the zero time.
func (b *Backend) DrainAt() time.Time {
	if n := b.drainAt.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// Override returns the backend's current override.
func (b *Backend) Override() Override { return Override(b.override.Load() & overrideMask) }

// Enabled reports whether the backend may be served: its configuration's enable flag, unless
// an override says otherwise, or a scheduled drain started (SetDrainAt).
func (b *Backend) Enabled() bool {
	if at := b.drainAt.Load(); at != 0 && time.Now().UnixNano() >= at {
		return false // a scheduled drain started: drained, whatever the override says yet
	}
	switch b.Override() {
	case ForceEnable, ForceUp:
		return true
	case ForceDisable:
		return false
	}
	return b.Config.Enable
}

// Healthy reports whether the backend is enabled and up, or forced up (ForceUp).
func (b *Backend) Healthy() bool {
	return b.Enabled() && (b.Override() == ForceUp || b.alwaysUp() || b.State.Status() == health.Up)
}

// servable reports whether a refresh serves the backend: it is healthy, or stale when the
// family serves its stale backends (see View.Degraded).
func (b *Backend) servable(stale bool) bool {
	return b.Healthy() || stale && b.Enabled() && b.Status() == health.Stale
}

// Status returns the backend's health status, Up for backends that are never probed.
func (b *Backend) Status() health.Status {
	if b.alwaysUp() {
		return health.Up
	}
	return b.State.Status()
}

// alwaysUp reports whether the backend is never probed and counts as up: its state is the
// shared unprobedState (a flag beside it would make every backend 8 bytes larger).
func (b *Backend) alwaysUp() bool { return b.State == unprobedState }

// inFamily reports whether the backend can answer a query of family f. Host-name backends
// (answered as CNAME) serve both families.
func (b *Backend) inFamily(f Family) bool {
	ip := b.Config.IP
	return !ip.IsValid() || (f == IPv4) == ip.Is4()
}

// Key returns the backend's BackendKey. A backend does not keep it (a big zone has hundreds
// of thousands): a probed backend's is its health state's (health.State.Key, the health
// manager's string), an unprobed backend's is made on each call. AppendKey makes it without
// allocating.
func (b *Backend) Key() string {
	if key := b.State.Key(); key != "" {
		return key
	}
	return config.BackendKey(b.record.Name(), b.Config)
}

// AppendKey appends the backend's BackendKey to dst.
func (b *Backend) AppendKey(dst []byte) []byte {
	return config.AppendBackendKey(dst, b.record.Name(), b.Config)
}

// sameKey reports whether a and b have the same BackendKey, without making either.
func sameKey(a, b *Backend) bool {
	var x, y [128]byte
	return string(a.AppendKey(x[:0])) == string(b.AppendKey(y[:0]))
}

// unprobedState is the health state of every backend that is never probed (alwaysUp): nothing
// writes it, so they share one instead of a state each in the health source, and it is how
// they are told apart.
var unprobedState = &health.State{}

// NewRR returns the backend's answer record for owner (its record's name when empty) with
// ttl: a *dns.A or *dns.AAAA for an address, a *dns.CNAME for a host name. It is made anew
// for each answer (one allocation), rather than kept for every backend of a big zone.
func (b *Backend) NewRR(owner string, ttl uint32) dns.RR {
	if owner == "" {
		owner = b.record.Name()
	}
	return addressRR(owner, ttl, b.Config)
}

// IsAddressOf reports whether the backend answers an address record of family f: it is an
// address (not a host name) of that family.
func (b *Backend) IsAddressOf(f Family) bool {
	return b.Config.IP.IsValid() && b.Config.IP.Is4() == (f == IPv4)
}
