package engine

import (
	"fmt"
	"github.com/meridian-gslb/meridian/internal/axfr"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/cluster"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/publish/externaldns"
	"github.com/meridian-gslb/meridian/internal/source/discovery"
	"github.com/meridian-gslb/meridian/internal/source/heartbeats"
	"github.com/meridian-gslb/meridian/internal/source/kubernetes"
	"github.com/meridian-gslb/meridian/internal/source/sites"
	"github.com/meridian-gslb/meridian/internal/source/statefile"
)

// Registry holds what outlives a Corefile reload: the health manager of each gslb block (with
// its Redis cluster client), and the admin API listeners and overrides stores that the blocks
// share, each counted by reference.
//
// CoreDNS builds a new plugin instance on every reload and starts it before it stops the old
// one. Health state and probes must outlive that overlap, neither resetting every backend to
// unknown nor probing twice, and the admin listener must neither be lost nor bound twice. The
// engines of consecutive loads therefore take their shares from one registry: Default, the one
// piece of package-level state of the process besides its metrics, for the same reason
// CoreDNS's own plugins keep their listeners in one.
//
// A load is an opaque, comparable value that identifies one Corefile load (the adapter passes
// caddy's context); the registry only compares loads.
type Registry struct {
	mu      sync.Mutex
	health  map[string]*sharedHealth     // by healthKey
	servers map[string]*admin.Server     // by listen address
	stores  map[string]overlay.Store     // by storeKey
	files   map[string]*statefile.Writer // state file writers, by path
	engines []*Engine                    // open engines holding shares, in order of opening
	// handoverFrom is the parent of a binary upgrade whose state files the first reads wait
	// for (AwaitHandover); 0 for none.
	handoverFrom int
}

// Default is the registry of the process, shared by every Corefile load.
var Default = NewRegistry()

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{
		health:  make(map[string]*sharedHealth),
		servers: make(map[string]*admin.Server),
		stores:  make(map[string]overlay.Store),
		files:   make(map[string]*statefile.Writer),
	}
}

// sharedHealth is the health manager of one gslb block and, in cluster mode, its Redis client;
// and the last good sets of its discovery blocks, whose backends' health the manager holds.
type sharedHealth struct {
	key        string
	manager    *health.Manager
	cluster    *cluster.Client // nil without cluster mode
	discovered *discovery.Memory
	// fleet is the block's view of the other sites, nil unless the block names its site;
	// keeper its heartbeats in the operator's DNS, nil unless it has a heartbeat zone.
	fleet  *sites.Fleet
	keeper *heartbeats.Keeper
	// kube follows the Services that the block's kubernetes backends name; it connects at
	// the first load that names one.
	kube *kubernetes.Watcher
	// delegation keeps the delegation through ExternalDNS, nil unless the block asks for it.
	delegation *externaldns.Keeper
	refs       int
	started    bool
	// writer writes the manager's state to the state file (nil when the block has none); seed
	// is what the file held at start, until the first engine reported it.
	writer *statefile.Writer
	seed   map[string]health.Status
	state  config.StateOptions // what the manager was made with
	// versioner keeps the zones' transfer serials once a transfer plugin found the block
	// (Engine.EnableTransfers sets transfers).
	versioner *axfr.Versioner
	transfers atomic.Bool
	// hooks are the block's webhooks, told of the manager's transitions.
	hooks *webhooks
}

// healthKey identifies a gslb block across reloads: its zones and the options its health
// manager was made with (coredns_gslb_metrics among them: it keeps the per-check counts), and
// its site, and its Kubernetes options. A block whose scheduler, cluster, site or Kubernetes
// options change gets a new manager (and a new Redis client, a new fleet, a new Kubernetes
// watcher); its peers and their timing may change without one.
func healthKey(o config.Options) string {
	var redis string
	if o.Cluster.Enable {
		redis = fmt.Sprintf("%+v", o.Cluster.WithDefaults())
	}
	return fmt.Sprint(o.Zones, o.MaxStaggerStart, o.BatchSizeStart, o.ResolutionIdleTimeout, o.HealthcheckIdleMultiplier, o.Cluster.ProbeSources, o.CoreDNSGSLBMetrics, o.API.Enable, redis, o.Sites.Site, o.Heartbeats.Enabled(), o.Kubernetes)
}

// acquireHealth returns the block's health manager, creating it on first use, and counts one
// more user.
func (r *Registry) acquireHealth(o config.Options, log Logger) *sharedHealth {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := healthKey(o)
	sh := r.health[key]
	if sh == nil {
		seed, w := r.openStateFile(o, log)
		sh = newSharedHealth(key, o, seed, log)
		if w != nil {
			w.Add(sh.manager)
			sh.writer, sh.seed = w, seed
		}
		sh.state = o.State
		r.health[key] = sh
	} else if sh.state != o.State {
		log.Warningf("the state_* options changed: a running health manager keeps its state file settings until Meridian restarts")
	}
	sh.refs++
	return sh
}

// startHealth starts the scheduler and the Redis loops of sh, once.
func (r *Registry) startHealth(sh *sharedHealth) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if sh.started {
		return
	}
	sh.started = true
	if sh.cluster != nil {
		sh.cluster.Run()
	}
	sh.manager.Start()
	if sh.fleet != nil {
		sh.fleet.Start()
	}
	if sh.keeper != nil {
		sh.keeper.Start()
	}
	sh.kube.Start()
	if sh.delegation != nil {
		sh.delegation.Start()
	}
	if sh.writer != nil {
		sh.writer.Start()
	}
}

// releaseHealth counts one user less of sh, and stops it when none is left.
func (r *Registry) releaseHealth(sh *sharedHealth) {
	r.mu.Lock()
	sh.refs--
	if sh.refs > 0 {
		r.mu.Unlock()
		return
	}
	delete(r.health, sh.key)
	// The state is saved before the manager stops and forgets it.
	if sh.writer != nil && sh.writer.Remove(sh.manager) {
		delete(r.files, sh.writer.Path())
	}
	r.mu.Unlock()
	if sh.fleet != nil {
		sh.fleet.Stop()
	}
	if sh.keeper != nil {
		sh.keeper.Stop()
	}
	if sh.delegation != nil {
		sh.delegation.Stop()
	}
	sh.kube.Stop()
	sh.manager.Stop()
	if sh.cluster != nil {
		sh.cluster.Close()
	}
	sh.hooks.stop()
}

// newSharedHealth makes the health manager of o. In cluster mode its Redis client connects and
// subscribes here, waiting at most the dial timeout, rather than when the server starts: the
// engine's first load seeds every backend from the fleet (in the manager's first Sync), and
// that must happen before the first snapshot serves, or a restarted instance would answer from
// unknown states. The client's loops start with the manager, in Start.
func newSharedHealth(key string, o config.Options, seed map[string]health.Status, log Logger) *sharedHealth {
	opts := HealthOptions(o, log)
	opts.Seed = seed
	sh := &sharedHealth{key: key, discovered: discovery.NewMemory(), versioner: axfr.NewVersioner()}
	if o.Cluster.Enable {
		c, err := cluster.New(o.Cluster, log)
		if err != nil { // the TLS files were readable when the Corefile was parsed
			log.Errorf("cluster mode is off, every check is probed here: %v", err)
		} else {
			opts.Coordinator = c
			sh.cluster = c
		}
	}
	sh.hooks = newWebhooks(sh.cluster)
	opts.OnTransition = sh.hooks.transition
	sh.manager = health.NewManager(opts)
	if sh.cluster != nil {
		sh.cluster.Connect(sh.manager)
	}
	if o.Sites.Enabled() {
		sh.fleet = sites.NewFleet(o.Sites, sh.manager, log)
	}
	if o.Heartbeats.Enabled() {
		sh.keeper = heartbeats.NewKeeper(o.Sites.Site, o.Heartbeats, sh.manager, log)
	}
	sh.kube = kubernetes.NewWatcher(o.Kubernetes, sh.manager, log)
	if o.Kubernetes.ExternalDNS.Enabled() {
		sh.delegation = externaldns.New(o.Kubernetes)
	}
	return sh
}

// track adds e to the engines that hold shares.
func (r *Registry) track(e *Engine) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.engines = append(r.engines, e)
}

// untrack removes e from the engines that hold shares, and reports whether it was there.
func (r *Registry) untrack(e *Engine) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.Index(r.engines, e)
	if i < 0 {
		return false
	}
	r.engines = slices.Delete(r.engines, i, i+1)
	return true
}

// KeepOnly releases the shares of every engine that is not of load. CoreDNS calls it (through
// the running instance's OnRestartFailed) when a reload failed after some gslb blocks of the
// new load were set up: those engines never start nor shut down.
func (r *Registry) KeepOnly(load any) {
	r.mu.Lock()
	others := slices.DeleteFunc(slices.Clone(r.engines), func(e *Engine) bool { return e.corefileLoad == load })
	r.mu.Unlock()
	for _, e := range others {
		e.release()
	}
}

// CheckRedisTLS reads the TLS files of cluster mode that t names, as the Redis client will.
func CheckRedisTLS(t config.ClusterTLS) error {
	_, err := cluster.TLSConfig(t)
	return err
}
