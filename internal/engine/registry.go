package engine

import (
	"slices"
	"sync"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/cluster"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/cookie"
	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/statefile"
)

// Registry holds what outlives a Corefile reload: the health manager of each gslb block (with
// its Redis cluster client and state file), the block's components that outlive reloads (see
// component.survives), and the admin API listeners and overrides stores that the blocks share,
// each counted by reference.
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
	mu         sync.Mutex
	health     map[string]*sharedHealth     // by managerKey
	components map[string]*sharedComponent  // the components that outlive reloads, by component.key
	servers    map[string]*admin.Server     // by listen address
	stores     map[string]overlay.Store     // by storeKey
	files      map[string]*statefile.Writer // state file writers, by path
	engines    []*Engine                    // open engines holding shares, in order of opening
	// handoverFrom is the parent of a binary upgrade whose state files the first reads wait
	// for (AwaitHandover); 0 for none.
	handoverFrom int
	// live are the shutdown callbacks of the blocks whose servers run (OnShutdown), in the
	// order they were registered; upgrades is done once SIGUSR2 is handled (PrepareUpgrades).
	live     []*liveStop
	upgrades sync.Once
	// cookies is the random cookie secret of the blocks without a cookie_secret_file.
	cookies *cookie.Secrets
}

// Default is the registry of the process, shared by every Corefile load.
var Default = NewRegistry()

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{
		health:     make(map[string]*sharedHealth),
		components: make(map[string]*sharedComponent),
		servers:    make(map[string]*admin.Server),
		stores:     make(map[string]overlay.Store),
		files:      make(map[string]*statefile.Writer),
	}
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
	return remove(&r.engines, e)
}

// remove deletes the first x from *list, keeping the order, and reports whether it was there.
func remove[T comparable](list *[]T, x T) bool {
	i := slices.Index(*list, x)
	if i < 0 {
		return false
	}
	*list = slices.Delete(*list, i, i+1)
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
