// Package health holds what Meridian knows about the health of each backend: the state words
// the query path reads, the rise/fall machines that write them, and the Manager whose scheduler
// runs each distinct check (alone, or with the fleet through a Coordinator) and owns the probe
// poller's lifetime. The checks themselves, one prober per protocol, are package health/probe,
// which this package imports and which never imports it (see its package comment).
package health

import "sync/atomic"

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

// State is the shared, lock-free health word of one backend. The query path only loads it.
type State struct {
	status atomic.Uint32
}

// Status returns the current status.
func (s *State) Status() Status { return Status(s.status.Load()) }

// Set stores a new status and reports whether it differs from the previous one.
func (s *State) Set(st Status) (changed bool) {
	return Status(s.status.Swap(uint32(st))) != st
}
