package gslb

import (
	"fmt"
	"sync"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/health"
)

// managers lets the instances of one gslb block share a health manager across Corefile
// reloads. CoreDNS builds a new plugin instance on every reload and starts it before it stops
// the old one; health state and probes must outlive that, neither resetting every backend to
// unknown nor probing twice. This registry is the plugin's one piece of package-level state
// besides its metrics, for the same reason CoreDNS's own plugins keep their listeners in one.
var managers = &sharedManagers{byKey: make(map[string]*sharedManager)}

type sharedManagers struct {
	mu    sync.Mutex
	byKey map[string]*sharedManager
}

type sharedManager struct {
	manager *health.Manager
	refs    int
}

// managerKey identifies a gslb block across reloads: its zones and the options its health
// manager was made with. A block whose scheduler options change gets a new manager.
func managerKey(o config.Options) string {
	return fmt.Sprint(o.Zones, o.MaxStaggerStart, o.BatchSizeStart, o.ResolutionIdleTimeout, o.HealthcheckIdleMultiplier)
}

// acquire returns the block's manager, creating it on first use, and counts one more user.
func (s *sharedManagers) acquire(o config.Options) *health.Manager {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := managerKey(o)
	sm := s.byKey[key]
	if sm == nil {
		sm = &sharedManager{manager: health.NewManager(engine.HealthOptions(o, log))}
		s.byKey[key] = sm
	}
	sm.refs++
	return sm.manager
}

// release counts one user less, and stops the manager when none is left.
func (s *sharedManagers) release(o config.Options) {
	s.mu.Lock()
	key := managerKey(o)
	sm := s.byKey[key]
	if sm == nil {
		s.mu.Unlock()
		return
	}
	sm.refs--
	if sm.refs > 0 {
		s.mu.Unlock()
		return
	}
	delete(s.byKey, key)
	s.mu.Unlock()
	sm.manager.Stop()
}
