package catalog

import "sync/atomic"

// Heartbeat is a site's heartbeat: the TXT strings it serves at heartbeat-<site>.<zone> in each
// of its zones, for the other sites to read (see docs/sites.md). The sites source sets it; the
// query path only loads it. A snapshot without one serves no published names.
type Heartbeat struct {
	label string
	txt   atomic.Pointer[[]string]
}

// HeartbeatPrefix starts the label of a site's heartbeat name: heartbeat-<site>.
const HeartbeatPrefix = "heartbeat-"

// NewHeartbeat returns the heartbeat of site, with no strings until Set.
func NewHeartbeat(site string) *Heartbeat {
	return &Heartbeat{label: HeartbeatPrefix + site}
}

// Label returns the first label of the heartbeat's name, heartbeat-<site>.
func (h *Heartbeat) Label() string { return h.label }

// Set makes txt the heartbeat's strings. The caller must not change txt afterwards.
func (h *Heartbeat) Set(txt []string) { h.txt.Store(&txt) }

// TXT returns the heartbeat's current strings, nil before the first Set.
func (h *Heartbeat) TXT() []string {
	if p := h.txt.Load(); p != nil {
		return *p
	}
	return nil
}

// SetHeartbeat makes h the heartbeat the snapshot serves; the engine gives every snapshot of a
// site the same one.
func (s *Snapshot) SetHeartbeat(h *Heartbeat) { s.heartbeat = h }

// Heartbeat returns the snapshot's heartbeat, nil when sites are off.
func (s *Snapshot) Heartbeat() *Heartbeat { return s.heartbeat }
