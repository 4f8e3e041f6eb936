package engine

import (
	"fmt"
	"reflect"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/source"
)

// component is one kind of input or publisher of a gslb block: one row of the constructor
// table (components).
type component struct {
	// name names it in logs, errors and docs/configuration.md's table of reloads.
	name  string
	roles source.Role
	// on reports whether a block with these options has the component.
	on func(config.Options) bool
	// survives says that one instance serves every Corefile load of the block, the overlap of
	// a reload included, for as long as the block's health manager lives and restart returns
	// the same value. Without it, each load builds its own.
	survives bool
	// restart returns what of the options, changed by a reload, makes a new instance (nil:
	// nothing but the health manager's own options); restartOptions names them for the docs.
	restart        func(config.Options) any
	restartOptions string
	// check merges what `meridian check` can know of the component without running it (nil:
	// it adds nothing before it runs).
	check func(zones []*config.Zone, o config.Options) ([]*config.Zone, error)
	// build makes an instance for a block. It starts nothing: Start does, if the instance
	// has one.
	build func(b *blockEnv) any
	// configure tells a running instance the engine's options and snapshot after each load
	// that succeeded, and again when a failed reload leaves the engine serving (nil: nothing).
	configure func(instance any, e *Engine)
	// typ is the type build returns, which TestEveryInputIsRegistered reads.
	typ reflect.Type
}

// row returns c built by build and configured by configure (which may be nil), typed.
func row[T any](c component, build func(*blockEnv) T, configure func(T, *Engine)) component {
	c.typ = reflect.TypeFor[T]()
	c.build = func(b *blockEnv) any { return build(b) }
	if configure != nil {
		c.configure = func(x any, e *Engine) { configure(x.(T), e) }
	}
	return c
}

// key identifies an instance that outlives reloads: the component, the block's health
// manager (whose verdicts it reports, and whose life bounds its own) and its restart options.
func (c *component) key(manager string, o config.Options) string {
	k := c.name + "\x00" + manager
	if c.restart != nil {
		k += "\x00" + fmt.Sprintf("%+v", c.restart(o))
	}
	return k
}

// blockEnv is what a component is built with: the block's options, its health manager (where
// verdicts go) and its log, and the name of this instance in what it publishes.
type blockEnv struct {
	opts     config.Options
	manager  *health.Manager
	log      Logger
	instance string
}

// runner is a component with background work: started when the server starts, stopped with
// the last engine that uses it.
type runner interface {
	Start()
	Stop()
}

// viewer is a component that outlives reloads and gives each load its own view as a source of
// backend sets.
type viewer interface {
	Source() source.BackendSets
}

// transitionReader is a component told of every health transition of its block.
type transitionReader interface {
	Transition(health.Transition)
}

// componentUse is one engine's use of an instance: its own, or its share of one that outlives
// reloads (shared).
type componentUse struct {
	kind     *component
	instance any
	shared   *sharedComponent
	// view is the instance as this engine's source of backend sets; nil when it is none.
	view source.BackendSets
}

// newUse returns the use of instance as kind's.
func newUse(kind *component, instance any, shared *sharedComponent) *componentUse {
	u := &componentUse{kind: kind, instance: instance, shared: shared}
	switch x := instance.(type) {
	case viewer:
		u.view = x.Source()
	case source.BackendSets:
		u.view = x
	}
	return u
}

// sharedComponent is an instance that outlives reloads, counted by reference.
type sharedComponent struct {
	key      string
	instance any
	refs     int
	started  bool
	// unsubscribe ends its subscription to the health manager's transitions (nil: none).
	unsubscribe func()
}

// instanceOf returns the engine's instance of type T, if it has one.
func instanceOf[T any](e *Engine) (T, bool) {
	return find[T](e, func(u *componentUse) any { return u.instance })
}

// viewOf returns the engine's source of backend sets of type T, if it has one.
func viewOf[T any](e *Engine) (T, bool) {
	return find[T](e, func(u *componentUse) any { return u.view })
}

// find returns the first part of the engine's components that is a T.
func find[T any](e *Engine, part func(*componentUse) any) (T, bool) {
	for _, u := range e.uses {
		if x, ok := part(u).(T); ok {
			return x, true
		}
	}
	var zero T
	return zero, false
}

// checkComponents merges, in order, what each component that opts wants can know of the zones
// before it runs (meridian check).
func checkComponents(zones []*config.Zone, opts config.Options) ([]*config.Zone, error) {
	for i := range components {
		c := &components[i]
		if c.check == nil || !c.on(opts) {
			continue
		}
		var err error
		if zones, err = c.check(zones, opts); err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
	}
	return zones, nil
}

// acquireComponents returns the engine's uses of every component its options want, in table
// order: its own instances, and shares of those that outlive reloads (made on first use).
func (r *Registry) acquireComponents(o config.Options, sh *sharedHealth, log Logger) []*componentUse {
	env := &blockEnv{opts: o, manager: sh.manager, log: log, instance: sh.instance()}
	var uses []*componentUse
	for i := range components {
		c := &components[i]
		if !c.on(o) {
			continue
		}
		if !c.survives {
			uses = append(uses, newUse(c, c.build(env), nil))
			continue
		}
		r.mu.Lock()
		key := c.key(sh.key, o)
		shared := r.components[key]
		if shared == nil {
			shared = &sharedComponent{key: key, instance: c.build(env)}
			if t, ok := shared.instance.(transitionReader); ok {
				shared.unsubscribe = sh.listeners.add(t.Transition)
			}
			r.components[key] = shared
		}
		shared.refs++
		r.mu.Unlock()
		uses = append(uses, newUse(c, shared.instance, shared))
	}
	return uses
}

// startComponent starts u's instance: its own, or a shared one once.
func (r *Registry) startComponent(u *componentUse) {
	x, ok := u.instance.(runner)
	if !ok {
		return
	}
	if u.shared != nil {
		r.mu.Lock()
		started := u.shared.started
		u.shared.started = true
		r.mu.Unlock()
		if started {
			return
		}
	}
	x.Start()
}

// releaseComponent ends u: its own instance stops; a shared one stops with its last user.
func (r *Registry) releaseComponent(u *componentUse) {
	if s := u.shared; s != nil {
		r.mu.Lock()
		s.refs--
		last := s.refs == 0
		if last {
			delete(r.components, s.key)
		}
		r.mu.Unlock()
		if !last {
			return
		}
		if s.unsubscribe != nil {
			s.unsubscribe()
		}
	}
	if x, ok := u.instance.(runner); ok {
		x.Stop()
	}
}
