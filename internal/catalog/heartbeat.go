package catalog

import "github.com/meridian-gslb/meridian/internal/published"

// SetHeartbeat makes h the heartbeat the snapshot serves; the engine gives every snapshot of a
// site the same one.
func (s *Snapshot) SetHeartbeat(h *published.Served) { s.heartbeat = h }

// Heartbeat returns the snapshot's heartbeat, nil when sites are off.
func (s *Snapshot) Heartbeat() *published.Served { return s.heartbeat }
