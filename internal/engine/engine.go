// Package engine wires Meridian's parts for one gslb block: it loads and validates the zone
// files, owns the current catalog snapshot that queries read, keeps backend health across
// reloads, and reloads the files when they change on disk, keeping the old snapshot when a new
// file is invalid.
package engine

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/health"
)

// Logger is where the engine reports state changes: what the health manager logs, and errors.
// CoreDNS's plugin logger satisfies it.
type Logger interface {
	health.Logger
	Errorf(format string, args ...any)
}

// Engine serves one gslb block's zones.
type Engine struct {
	opts   config.Options
	log    Logger
	health *health.Manager
	// ownsHealth is set when Stop must stop the manager (it is not shared with a next load).
	ownsHealth bool
	// specs are what the current snapshot gave the health manager (which points into them).
	specs []health.Spec
	snap  atomic.Pointer[catalog.Snapshot]
	// overrides are the operators' overrides by backend key, applied to every snapshot.
	overrides map[string]catalog.Override

	reloadMu sync.Mutex // serialises reloads
	watch    *watcher
	// geo holds the GeoIP sources, nil when none are configured; geoWatch follows their files.
	geo      *geo.Store
	geoWatch *watcher
}

// LoadZones reads the shared health-check profiles and every zone file of opts, and returns
// the zones or every error found in any of the files.
func LoadZones(opts config.Options) ([]*config.Zone, error) {
	var errs []error
	var shared map[string]config.HealthCheck
	if opts.HealthcheckProfilesFile != "" {
		p, err := config.LoadProfiles(opts.HealthcheckProfilesFile)
		if err != nil {
			errs = append(errs, err)
		}
		shared = p
	}
	zones := make([]*config.Zone, 0, len(opts.Zones))
	for _, src := range opts.Zones {
		z, err := config.LoadZone(src, shared)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		zones = append(zones, z)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return zones, nil
}

// Check validates everything New would load, health checks included (their parameters,
// scripts and programs), without serving or probing. It returns every error found.
func Check(opts config.Options) error {
	zones, err := LoadZones(opts)
	if st, geoErr := openGeo(opts.GeoIP); geoErr != nil {
		err = errors.Join(err, geoErr)
	} else if st != nil {
		_ = st.Sources().Close()
	}
	if err != nil {
		return err
	}
	probeless := health.NewManager(health.Options{})
	snap, err := catalog.Build(zones, probeless)
	if err != nil {
		return fmt.Errorf("compile zones: %w", err)
	}
	specs, err := healthSpecs(snap)
	for _, s := range specs {
		for _, c := range s.Checks {
			health.Release(c.Prober)
		}
	}
	return err
}

// HealthOptions returns the health manager options that opts asks for.
func HealthOptions(opts config.Options, log Logger) health.Options {
	return health.Options{
		MaxStaggerStart: opts.MaxStaggerStart,
		BatchSizeStart:  opts.BatchSizeStart,
		IdleTimeout:     opts.ResolutionIdleTimeout,
		IdleMultiplier:  opts.HealthcheckIdleMultiplier,
		ProbeSources:    opts.Cluster.ProbeSources,
		Log:             log,
	}
}

// New loads every file of opts and compiles the first snapshot, with a health manager of its
// own that Stop stops. It fails when any file is invalid. Call Start to follow file changes
// and probe, and Stop when done.
func New(opts config.Options, log Logger) (*Engine, error) {
	return newEngine(opts, log, health.NewManager(HealthOptions(opts, log)), true)
}

// NewShared is New with a health manager that outlives the engine: the plugin hands the same
// manager to the engine of the next Corefile load, so that health state and probes carry over.
// Stop leaves it running.
func NewShared(opts config.Options, log Logger, m *health.Manager) (*Engine, error) {
	return newEngine(opts, log, m, false)
}

func newEngine(opts config.Options, log Logger, m *health.Manager, owned bool) (*Engine, error) {
	st, err := openGeo(opts.GeoIP)
	if err != nil {
		return nil, err
	}
	e := &Engine{opts: opts, log: log, health: m, ownsHealth: owned, geo: st}
	if err := e.load(); err != nil {
		return nil, err
	}
	return e, nil
}

// Resync hands the engine's current backends to its health manager again: after a Corefile
// reload failed, the manager may hold the backends of the load that was abandoned.
func (e *Engine) Resync() error {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	e.health.Sync(e.specs, backendKeys(e.Snapshot()))
	for _, r := range e.Snapshot().Records() {
		r.Refresh()
	}
	return nil
}

// Snapshot returns the current snapshot. It never blocks and never returns nil after New.
func (e *Engine) Snapshot() *catalog.Snapshot { return e.snap.Load() }

// Reload reads every file again and swaps in the new snapshot. On error the current snapshot
// keeps serving, the error is logged and counted, and returned.
func (e *Engine) Reload() error {
	start := time.Now()
	err := e.load()
	if err != nil {
		reloadsTotal.WithLabelValues("failure").Inc()
		e.log.Errorf("reload failed, still serving the previous configuration: %v", err)
		return err
	}
	reloadsTotal.WithLabelValues("success").Inc()
	s := e.Snapshot()
	e.log.Infof("reloaded %d zones, %d records in %s", s.Zones(), len(s.Records()), time.Since(start).Round(time.Millisecond))
	return nil
}

func (e *Engine) load() error {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	zones, err := LoadZones(e.opts)
	if err != nil {
		return err
	}
	warnGeoless(zones, e.opts.GeoIP, e.log)
	snap, err := catalog.Build(zones, e.health)
	if err != nil {
		return fmt.Errorf("compile zones: %w", err)
	}
	for _, r := range snap.Records() {
		for _, b := range r.Backends {
			b.SetOverride(e.overrides[b.Key])
		}
	}
	specs, err := healthSpecs(snap)
	if err != nil {
		return err
	}
	e.health.Sync(specs, backendKeys(snap))
	e.specs = specs
	for _, r := range snap.Records() {
		r.Refresh() // Sync may have reset the state of backends whose checks changed
		publishRecordHealth(r)
	}
	forgetRecords(e.snap.Swap(snap), snap)
	recordsGauge.Set(float64(len(snap.Records())))
	lastReloadTime.SetToCurrentTime()
	return nil
}

// SetOverrides makes overrides (by backend key; absent keys have none) the operators'
// overrides of the enable flags, now and for every later snapshot. Answers follow at once. A
// backend its configuration disables and an override enables must be probed first: such a
// change reloads the configuration, which starts its probes.
func (e *Engine) SetOverrides(overrides map[string]catalog.Override) error {
	e.reloadMu.Lock()
	e.overrides = maps.Clone(overrides)
	reprobe := false
	for _, r := range e.Snapshot().Records() {
		changed := false
		for _, b := range r.Backends {
			wasWanted := enabledOrForced(b)
			if b.SetOverride(overrides[b.Key]) {
				changed = true
				reprobe = reprobe || enabledOrForced(b) != wasWanted
			}
		}
		if changed {
			r.Refresh()
			publishRecordHealth(r)
		}
	}
	e.reloadMu.Unlock()
	if reprobe {
		return e.Reload()
	}
	return nil
}

// Start follows changes of the configuration files. A file change triggers a reload.
func (e *Engine) Start() error {
	w, err := newWatcher(e.watchedFiles(), func() { _ = e.Reload() }, e.log)
	if err != nil {
		return fmt.Errorf("watch configuration files: %w", err)
	}
	e.watch = w
	if e.geo != nil {
		gw, err := newWatcher(e.geo.Sources().Files(), e.reloadGeo, e.log)
		if err != nil {
			return fmt.Errorf("watch geoip files: %w", err)
		}
		e.geoWatch = gw
	}
	e.health.Start()
	return nil
}

// Stop ends file watching. It is safe to call more than once and without Start.
func (e *Engine) Stop() error {
	for _, w := range []**watcher{&e.watch, &e.geoWatch} {
		if *w != nil {
			(*w).close()
			*w = nil
		}
	}
	if e.ownsHealth {
		e.health.Stop()
	}
	return nil
}

func (e *Engine) watchedFiles() []string {
	files := make([]string, 0, len(e.opts.Zones)+1)
	for _, z := range e.opts.Zones {
		files = append(files, z.File)
	}
	if e.opts.HealthcheckProfilesFile != "" {
		files = append(files, e.opts.HealthcheckProfilesFile)
	}
	return files
}
