package engine

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/meridian-gslb/meridian/internal/axfr"
	"github.com/meridian-gslb/meridian/internal/cluster"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/statefile"
)

// managerOptions are the options a block's health manager is made with, as the Corefile
// names them: a reload that changes one of them (or the block's zones) makes a new manager,
// and with it new instances of every component (the rule docs/configuration.md states, which
// TestReloadRulesAreDocumented compares). Every other option is applied to the running
// manager and components.
const managerOptions = "the block's zones (origins and files), max_stagger_start, batch_size_start, " +
	"resolution_idle_timeout, healthcheck_idle_multiplier, probe_source, coredns_gslb_metrics, " +
	"and in cluster mode the redis_* options (redis_enable among them)"

// managerKey identifies a gslb block's health manager across reloads: the block's zones and
// the options its manager was made with (managerOptions).
func managerKey(o config.Options) string {
	var redis string
	if o.Cluster.Enable {
		redis = fmt.Sprintf("%+v", o.Cluster.WithDefaults())
	}
	return fmt.Sprint(o.Zones, o.MaxStaggerStart, o.BatchSizeStart, o.ResolutionIdleTimeout, o.HealthcheckIdleMultiplier,
		o.Cluster.ProbeSources, o.CoreDNSGSLBMetrics, redis)
}

// HealthOptions returns the health manager options that opts asks for.
func HealthOptions(opts config.Options, log Logger) health.Options {
	return health.Options{
		MaxStaggerStart: opts.MaxStaggerStart,
		BatchSizeStart:  opts.BatchSizeStart,
		IdleTimeout:     opts.ResolutionIdleTimeout,
		IdleMultiplier:  opts.HealthcheckIdleMultiplier,
		ProbeSources:    opts.Cluster.ProbeSources,
		CheckStats:      opts.CoreDNSGSLBMetrics,
		History:         opts.API.Enable, // only the admin API reads it
		Log:             log,
	}
}

// sharedHealth is the health manager of one gslb block and what lives as long as it does: in
// cluster mode its Redis client, its state file, the zones' transfer serials, and the
// publishers told of its transitions.
type sharedHealth struct {
	key     string
	manager *health.Manager
	cluster *cluster.Client // nil without cluster mode
	refs    int
	started bool
	// writer writes the manager's state to the state file (nil when the block has none); seed
	// is what the file held at start, until the first engine reported it.
	writer *statefile.Writer
	seed   map[string]health.Status
	state  config.StateOptions // what the manager was made with
	// versioner keeps the zones' transfer serials once a transfer plugin found the block
	// (Engine.EnableTransfers sets transfers).
	versioner *axfr.Versioner
	transfers atomic.Bool
	// listeners are told of the manager's transitions.
	listeners fanout
}

// instance names this instance in what its publishers write: the cluster client's id, or ""
// for the host name.
func (sh *sharedHealth) instance() string {
	if sh.cluster != nil {
		return sh.cluster.ID()
	}
	return ""
}

// fanout is a list of functions told of every transition, read without a lock.
type fanout struct {
	mu   sync.Mutex // serialises add and remove
	subs atomic.Pointer[[]*subscriber]
}

// subscriber is one function of a fanout.
type subscriber struct{ fn func(health.Transition) }

// send tells every function of tr, in the order they were added. It is the health manager's
// OnTransition.
func (f *fanout) send(tr health.Transition) {
	if subs := f.subs.Load(); subs != nil {
		for _, s := range *subs {
			s.fn(tr)
		}
	}
}

// add adds fn, until the returned function is called.
func (f *fanout) add(fn func(health.Transition)) (remove func()) {
	s := &subscriber{fn: fn}
	f.update(func(subs []*subscriber) []*subscriber { return append(subs, s) })
	return func() {
		f.update(func(subs []*subscriber) []*subscriber {
			return slices.DeleteFunc(subs, func(x *subscriber) bool { return x == s })
		})
	}
}

// update replaces the list by change's copy of it.
func (f *fanout) update(change func([]*subscriber) []*subscriber) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var subs []*subscriber
	if p := f.subs.Load(); p != nil {
		subs = slices.Clone(*p)
	}
	subs = change(subs)
	f.subs.Store(&subs)
}

// acquireHealth returns the block's health manager, creating it on first use, and counts one
// more user.
func (r *Registry) acquireHealth(o config.Options, log Logger) *sharedHealth {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := managerKey(o)
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
	// Applied to the running manager; the next Sync gives or takes the backends' histories.
	sh.manager.SetHistory(o.API.Enable)
	sh.refs++
	return sh
}

// newSharedHealth makes the health manager of o. In cluster mode its Redis client connects and
// subscribes here, waiting at most the dial timeout, rather than when the server starts: the
// engine's first load seeds every backend from the fleet (in the manager's first Sync), and
// that must happen before the first snapshot serves, or a restarted instance would answer from
// unknown states. The client's loops start with the manager, in Start.
func newSharedHealth(key string, o config.Options, seed map[string]health.Status, log Logger) *sharedHealth {
	opts := HealthOptions(o, log)
	opts.Seed = seed
	sh := &sharedHealth{key: key, versioner: axfr.NewVersioner()}
	if o.Cluster.Enable {
		c, err := cluster.New(o.Cluster, log)
		if err != nil { // the TLS files were readable when the Corefile was parsed
			log.Errorf("cluster mode is off, every check is probed here: %v", err)
		} else {
			opts.Coordinator = c
			sh.cluster = c
		}
	}
	opts.OnTransition = sh.listeners.send
	sh.manager = health.NewManager(opts)
	if sh.cluster != nil {
		sh.cluster.Connect(sh.manager)
	}
	return sh
}

// startHealth starts the scheduler, the Redis loops and the state file writer of sh, once.
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
	sh.manager.Stop()
	if sh.cluster != nil {
		sh.cluster.Close()
	}
}
