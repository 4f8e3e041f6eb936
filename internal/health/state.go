// Package health holds what Meridian knows about the health of each backend: the state words
// the query path reads, the rise/fall machines that write them, and the Manager whose scheduler
// runs each distinct check (alone, or with the fleet through a Coordinator) and owns the probe
// poller's lifetime. The checks themselves, one prober per protocol, are package health/probe,
// which this package imports and which never imports it (see its package comment).
package health

import (
	"math"
	"sync/atomic"
	"time"
)

// Status is a backend's health as the selection modes see it.
type Status uint32

// The health statuses. The zero value is Unknown: no result has arrived yet.
const (
	Unknown Status = iota
	Up
	Down
	// Stale is another site's backend that was up when that site was last heard from, longer
	// ago than the split-brain threshold: not healthy, unless nothing else is (see
	// catalog.View).
	Stale
)

// String returns the lower-case name of the status.
func (s Status) String() string {
	switch s {
	case Up:
		return "up"
	case Down:
		return "down"
	case Stale:
		return "stale"
	default:
		return "unknown"
	}
}

// State is the shared, lock-free health of one backend: its status word, and what its checks
// measured (RTT, load) and when it last came back up, which catalog.Record.Refresh reads into
// the modes' candidates. The query path only loads the status; the manager writes them all.
type State struct {
	status atomic.Uint32
	// owner is the id of the Manager whose map holds the state (Manager.State), 0 once it
	// forgot it or for a state made otherwise: its lock guards it. (It fills the 4 bytes the
	// alignment of rtt leaves after status.)
	owner uint32
	rtt   atomic.Int64  // nanoseconds, 0 when not measured
	load  atomic.Uint64 // the load's bits XOR unknownLoad's: the zero value is unknown
	// recovered is when the backend last came back up from down (Unix nanoseconds), 0 when
	// it never did: slow start ramps from it.
	recovered atomic.Int64
	// vantages are the smoothed RTTs that quorum voters measured, by their site; nil for none.
	// The map a pointer holds is never written again.
	vantages atomic.Pointer[map[string]time.Duration]
	// key is the key of the backend the Manager made the state for (Manager.State); empty
	// for a state made otherwise.
	key string
	// b is the probed backend of the state, nil when it is not probed: the Manager's lock
	// guards it.
	b *backend
}

// Key returns the key of the backend the Manager made the state for: the same string as the
// Manager's, so that those who keep the key need not keep a copy; "" for a state not made
// by a Manager.
func (s *State) Key() string { return s.key }

// VantageRTTs returns the smoothed RTT of the backend as the instances of each site measured it
// (quorum mode, by redis_site), nil when none did. The map must not be written.
func (s *State) VantageRTTs() map[string]time.Duration {
	if p := s.vantages.Load(); p != nil {
		return *p
	}
	return nil
}

// SetVantageRTTs stores the RTTs by site (nil: none); the map must not be written after.
func (s *State) SetVantageRTTs(m map[string]time.Duration) {
	if len(m) == 0 {
		s.vantages.Store(nil)
		return
	}
	s.vantages.Store(&m)
}

// unknownLoad is the bit pattern of the NaN that stands for an unknown load, by which State
// flips the bits it stores, so that its zero value's load is unknown.
var unknownLoad = math.Float64bits(math.NaN())

// Status returns the current status.
func (s *State) Status() Status { return Status(s.status.Load()) }

// Set stores a new status and reports whether it differs from the previous one.
func (s *State) Set(st Status) (changed bool) {
	return Status(s.status.Swap(uint32(st))) != st
}

// RTT returns the backend's smoothed round-trip time (see rttEstimator), 0 when not measured.
func (s *State) RTT() time.Duration { return time.Duration(s.rtt.Load()) }

// Load returns the load the backend's checks last read, in the backend's own units (divide by
// its capacity for the relative load); NaN when unknown.
func (s *State) Load() float64 { return math.Float64frombits(s.load.Load() ^ unknownLoad) }

// Recovered returns when the backend last came back up after being down, the zero time when
// it never did (a backend up since its first result has not recovered).
func (s *State) Recovered() time.Time {
	if ns := s.recovered.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// SetRTT stores the backend's smoothed RTT (0: not measured). The manager calls it with what
// the backend's probes measured; so may whatever measures it elsewhere. Refresh the record
// for answers to follow.
func (s *State) SetRTT(d time.Duration) { s.rtt.Store(int64(d)) }

// SetLoad stores the backend's load in its own units (NaN: unknown), as SetRTT does the RTT.
func (s *State) SetLoad(v float64) { s.load.Store(math.Float64bits(v) ^ unknownLoad) }

// SetRecovered stores when the backend came back up after being down (the zero time: it did
// not), as SetRTT does the RTT.
func (s *State) SetRecovered(t time.Time) {
	var ns int64
	if !t.IsZero() {
		ns = t.UnixNano()
	}
	s.recovered.Store(ns)
}
