// Package engine wires Meridian's parts for one gslb block: it loads and validates the zone
// files, owns the current catalog snapshot that queries read, keeps backend health across
// reloads, and reloads the files when they change on disk, keeping the old snapshot when a new
// file is invalid.
package engine

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// Logger is where the engine reports state changes; CoreDNS's plugin logger satisfies it.
type Logger interface {
	Infof(format string, args ...any)
	Warningf(format string, args ...any)
	Errorf(format string, args ...any)
}

// Engine serves one gslb block's zones.
type Engine struct {
	opts   config.Options
	log    Logger
	health *health.Manager
	snap   atomic.Pointer[catalog.Snapshot]

	reloadMu sync.Mutex // serialises reloads
	watch    *watcher
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
	if err != nil {
		return err
	}
	probeless := health.NewManager(health.Options{})
	snap, err := catalog.Build(zones, probeless)
	if err != nil {
		return fmt.Errorf("compile zones: %w", err)
	}
	specs, _, err := healthSpecs(snap)
	for _, s := range specs {
		for _, c := range s.Checks {
			health.Release(c.Prober)
		}
	}
	return err
}

// New loads every file of opts and compiles the first snapshot. It fails when any file is
// invalid. Call Start to follow file changes, and Stop when done.
func New(opts config.Options, log Logger) (*Engine, error) {
	e := &Engine{opts: opts, log: log, health: health.NewManager(health.Options{
		MaxStaggerStart: opts.MaxStaggerStart,
		BatchSizeStart:  opts.BatchSizeStart,
		IdleTimeout:     opts.ResolutionIdleTimeout,
		IdleMultiplier:  opts.HealthcheckIdleMultiplier,
		Log:             log,
	})}
	if err := e.load(); err != nil {
		return nil, err
	}
	return e, nil
}

// Snapshot returns the current snapshot. It never blocks and never returns nil after New.
func (e *Engine) Snapshot() *catalog.Snapshot { return e.snap.Load() }

// Health returns the engine's health manager.
func (e *Engine) Health() *health.Manager { return e.health }

// Options returns the options the engine was made with.
func (e *Engine) Options() config.Options { return e.opts }

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
	snap, err := catalog.Build(zones, e.health)
	if err != nil {
		return fmt.Errorf("compile zones: %w", err)
	}
	specs, keep, err := healthSpecs(snap)
	if err != nil {
		return err
	}
	e.health.Sync(specs, keep)
	for _, r := range snap.Records() {
		r.Refresh() // Sync may have reset the state of backends whose checks changed
		publishRecordHealth(r)
	}
	forgetRecords(e.snap.Swap(snap), snap)
	recordsGauge.Set(float64(len(snap.Records())))
	lastReloadTime.SetToCurrentTime()
	return nil
}

// Start follows changes of the configuration files. A file change triggers a reload.
func (e *Engine) Start() error {
	w, err := newWatcher(e.watchedFiles(), func() { _ = e.Reload() }, e.log)
	if err != nil {
		return fmt.Errorf("watch configuration files: %w", err)
	}
	e.watch = w
	e.health.Start()
	return nil
}

// Stop ends file watching. It is safe to call more than once and without Start.
func (e *Engine) Stop() error {
	if e.watch != nil {
		e.watch.close()
		e.watch = nil
	}
	e.health.Stop()
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
