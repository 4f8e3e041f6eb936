package gslb

import (
	"fmt"
	"sync"

	"github.com/meridian-gslb/meridian/internal/cluster"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/health"
)

// managers lets the instances of one gslb block share a health manager (and, in cluster mode,
// its Redis client) across Corefile reloads. CoreDNS builds a new plugin instance on every reload and starts it before it stops
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
	cluster *cluster.Client // nil without cluster mode
	refs    int
}

// managerKey identifies a gslb block across reloads: its zones and the options its health
// manager was made with. A block whose scheduler or cluster options change gets a new manager
// (and a new Redis client).
func managerKey(o config.Options) string {
	var redis string
	if o.Cluster.Enable {
		redis = fmt.Sprintf("%+v", o.Cluster.WithDefaults())
	}
	return fmt.Sprint(o.Zones, o.MaxStaggerStart, o.BatchSizeStart, o.ResolutionIdleTimeout, o.HealthcheckIdleMultiplier, o.Cluster.ProbeSources, redis)
}

// acquire returns the block's manager, creating it on first use, and counts one more user.
func (s *sharedManagers) acquire(o config.Options) *health.Manager {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := managerKey(o)
	sm := s.byKey[key]
	if sm == nil {
		sm = newSharedManager(o)
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
	if sm.cluster != nil {
		sm.cluster.Close()
	}
}

// newSharedManager makes the health manager of o. In cluster mode its Redis client connects
// and subscribes first (waiting at most the dial timeout), so that the engine's first load
// seeds every backend from the fleet before the scheduler starts.
func newSharedManager(o config.Options) *sharedManager {
	opts := engine.HealthOptions(o, log)
	if !o.Cluster.Enable {
		return &sharedManager{manager: health.NewManager(opts)}
	}
	c, err := cluster.New(o.Cluster, log)
	if err != nil { // the TLS files were readable when the Corefile was parsed
		log.Errorf("cluster mode is off, every check is probed here: %v", err)
		return &sharedManager{manager: health.NewManager(opts)}
	}
	opts.Coordinator = c
	m := health.NewManager(opts)
	c.Start(m)
	return &sharedManager{manager: m, cluster: c}
}
