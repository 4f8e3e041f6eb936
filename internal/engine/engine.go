// Package engine is Meridian's one wiring point. For each gslb block it merges the sources of
// backend sets (the zone files, and the inputs that follow) and the source of health verdicts
// (the health manager, with the Redis fleet behind it) into the immutable catalog snapshot
// that queries read; it owns the snapshot, the sources' lifecycle, the operators' overrides
// and the admin API's view, and its Registry keeps what must survive a Corefile reload. The
// CoreDNS adapter talks to nothing else.
package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/meridian-gslb/meridian/internal/answer"
	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/dnssec"
	"github.com/meridian-gslb/meridian/internal/gctune"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/notify"
	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/published"
	"github.com/meridian-gslb/meridian/internal/source"
	"github.com/meridian-gslb/meridian/internal/source/files"
)

// Logger is where the engine reports state changes: what the health manager logs, and errors.
// CoreDNS's plugin logger satisfies it.
type Logger interface {
	health.Logger
	Errorf(format string, args ...any)
}

// Engine serves one gslb block's zones.
type Engine struct {
	opts config.Options
	log  Logger
	// uses are the block's inputs and publishers (components), in table order.
	uses []*componentUse
	// backends are the sources of backend sets among them, merged in order (the zone files
	// first); judges those that report verdicts, each asked to report all of them again once
	// a new snapshot's backends reached the health manager.
	backends []source.BackendSets
	judges   []source.Verdicts
	// health is the block's health manager: the store of health words that the catalog's
	// backends read, the local probes, and the verdicts the judges report.
	health *health.Manager
	snap   atomic.Pointer[catalog.Snapshot]
	// overrides are the operators' overrides by backend key, applied to every snapshot;
	// drains the starts of their scheduled drains.
	overrides map[string]catalog.Override
	drains    map[string]time.Time
	// list is the overrides store's list applied last; held the scheduled drains of it held
	// by the drain guard at their start, by backend key, with why; heldTimer checks them
	// again (guard.go). All three with reloadMu.
	list      []overlay.Override
	held      map[string]string
	heldTimer *time.Timer
	// notified is what the webhooks were last told of the overrides store.
	notified notify.Baseline
	// ttl refreshes the records whose TTL changes by time alone (a drain ahead), with reloadMu.
	ttl ttlTimer
	// transferCheck is how often the zones are checked for a NOTIFY (0: axfr.DefaultCheck).
	transferCheck time.Duration

	reloadMu sync.Mutex // serialises reloads
	// stops end what Start started: the sources' watches, the geo files' watch, the override
	// subscription.
	stops []func()
	// geo holds the GeoIP sources, nil when none are configured.
	geo *geo.Store
	// sec is the rate limiter, the cookie secrets and the DNS over TLS certificate.
	sec security
	// signers are the signers of the signed zones (dnssec blocks), by origin; nil for none.
	signers map[string]*dnssec.Signer

	// The engine's shares of the registry: its Corefile load, its health manager and its
	// admin API (nil when the block does not enable it).
	reg          *Registry
	corefileLoad any
	shared       *sharedHealth
	api          *apiUse
}

// Check validates everything New would load, health checks included (their parameters,
// scripts and programs), without serving or probing. It returns every error found, and when
// the zones load, their warnings (those New logs) and the zones of the files as they loaded,
// but for the health checks' parameters, which compiling the checks consumed (nil).
func Check(opts config.Options) (fileZones []*config.Zone, warnings []error, err error) {
	defer gctune.Loading()()
	zones, err := files.Load(opts)
	fileZones = zones
	if err == nil {
		zones, err = checkComponents(zones, opts)
	}
	if err == nil {
		err = checkPlaceholders(zones)
	}
	if _, keyErr := newSigners(opts, time.Now()); keyErr != nil {
		err = errors.Join(err, keyErr)
	}
	if st, geoErr := openGeo(opts.GeoIP, opts.MaxFileSize); geoErr != nil {
		err = errors.Join(err, geoErr)
	} else if st != nil {
		_ = st.Sources().Close()
	}
	err = errors.Join(err, checkSecurity(opts))
	if err != nil {
		return nil, nil, err
	}
	for _, z := range zones {
		for _, w := range z.Warnings {
			warnings = append(warnings, w)
		}
	}
	probeless := health.NewManager(health.Options{})
	snap, err := catalog.Build(zones, probeless)
	if err != nil {
		return nil, warnings, fmt.Errorf("compile zones: %w", err)
	}
	ps, err := compileProbes(snap)
	if err != nil {
		return nil, warnings, err
	}
	ps.release()
	return fileZones, warnings, nil
}

// New loads every file of opts and compiles the first snapshot, with a health manager and an
// admin API of its own (when opts enables it) that Stop stops. It fails when any file is
// invalid. Call Start to follow file changes and probe, and Stop when done.
func New(opts config.Options, log Logger) (*Engine, error) {
	return NewRegistry().Open(nil, opts, log)
}

// Open is New with the health manager and the admin API taken from r, shared with the other
// engines of r: a Corefile reload opens the engine of the new load (load identifies it)
// before it stops the old one, and the new engine takes over the health state, the probes and
// the admin listener without a gap. It binds the admin API's listener, opens the overrides
// store and, in cluster mode, subscribes to Redis and seeds the health states from it (see
// newSharedHealth), but starts no goroutine of its own: Start does.
func (r *Registry) Open(load any, opts config.Options, log Logger) (*Engine, error) {
	st, err := openGeo(opts.GeoIP, opts.MaxFileSize)
	if err != nil {
		return nil, err
	}
	sec, err := openSecurity(opts, r.cookieSecrets, log)
	var signers map[string]*dnssec.Signer
	if err == nil {
		signers, err = newSigners(opts, time.Now())
	}
	if err != nil {
		if st != nil {
			_ = st.Sources().Close()
		}
		return nil, err
	}
	e := &Engine{opts: opts, log: log, geo: st, sec: sec, reg: r, corefileLoad: load, signers: signers}
	e.shared = r.acquireHealth(opts, log)
	e.health = e.shared.manager
	e.uses = r.acquireComponents(opts, e.shared, log)
	for _, u := range e.uses {
		if u.view != nil {
			e.backends = append(e.backends, u.view)
		}
		if j, ok := u.instance.(source.Verdicts); ok {
			e.judges = append(e.judges, j)
		}
	}
	if opts.API.Enable {
		if e.api, err = r.acquireAPI(load, opts.API, opts.Cluster, log); err != nil {
			e.abandon()
			return nil, &APIError{err}
		}
		list, now := e.api.store.List(), time.Now()
		e.overrides, e.drains, e.list = CatalogOverrides(list, now), DrainStarts(list, now), list
		for k := range r.heldDrains() {
			delete(e.overrides, k) // still held: checked again when the engine starts
		}
		e.notified.Reset(list, now)
	}
	if err := e.load(); err != nil {
		e.abandon()
		return nil, err
	}
	e.configure()
	r.reportSeeded(e)
	r.track(e)
	recordCollector.add(e)
	return e, nil
}

// configure tells the block's components that outlive reloads, or that publish, the engine's
// options and snapshot (component.configure): once the engine loaded (a load that failed must
// not change them), and again when a failed reload leaves the engine serving (Resync).
func (e *Engine) configure() {
	for _, u := range e.uses {
		if u.kind.configure != nil {
			u.kind.configure(u.instance, e)
		}
	}
}

// abandon gives back the shares of an engine that failed to open.
func (e *Engine) abandon() {
	if e.api != nil {
		e.reg.releaseAPI(e.api, e.log)
	}
	e.releaseComponents()
	e.reg.releaseHealth(e.shared)
	if e.geo != nil {
		_ = e.geo.Sources().Close()
	}
}

// Resync hands the engine's current backends to its health manager again (and its options to
// its components), and keeps only the shares of the registry that belong
// to the engine's load: after a Corefile reload failed, the
// manager may hold the backends of the load that was abandoned, whose engines never start nor
// stop.
func (e *Engine) Resync() error {
	e.reg.KeepOnly(e.corefileLoad)
	e.configure()
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	// The specs are compiled again: the manager keeps none, and neither does the engine (tens
	// of megabytes of a big zone's, for a rare failure). Probers equal to running ones are
	// released at once.
	ps, err := compileProbes(e.Snapshot())
	if err != nil {
		return fmt.Errorf("resync: %w", err)
	}
	ps.sync(e.health)
	refreshAll(e.Snapshot().Records())
	return nil
}

// Snapshot returns the current snapshot. It never blocks and never returns nil after New.
func (e *Engine) Snapshot() *catalog.Snapshot { return e.snap.Load() }

// Reload reads every file again and swaps in the new snapshot. On error the current snapshot
// keeps serving, the error is logged and counted, and returned.
func (e *Engine) Reload() error {
	start := time.Now()
	_, span := otel.Tracer("meridian/engine").Start(context.Background(), "reload")
	defer span.End()
	err := e.load()
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		countReload("failure")
		e.log.Errorf("reload failed, still serving the previous configuration: %v", err)
		return err
	}
	countReload("success")
	s := e.Snapshot()
	span.SetAttributes(attribute.Int("gslb.zones", s.Zones()), attribute.Int("gslb.records", len(s.Records())))
	e.log.Infof("reloaded %d zones, %d records in %s", s.Zones(), len(s.Records()), time.Since(start).Round(time.Millisecond))
	return nil
}

func (e *Engine) load() error {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	defer gctune.Loading()() // a load's garbage is collected at Go's pace, not the headroom's
	zones, err := e.mergeInputs()
	if err != nil {
		return err
	}
	snap, err := e.build(zones)
	if err != nil {
		return err
	}
	if len(e.signers) > 0 {
		// The zones' own data is signed now, each record's answers with its first view.
		if err := snap.Sign(e.signers, answer.ViewSigner{EnableTXT: e.opts.EnableTXT}, e.snap.Load(), time.Now()); err != nil {
			return fmt.Errorf("dnssec: %w", err)
		}
		defer snap.CarryDone()
	}
	if err := e.syncVerdicts(snap); err != nil {
		return err
	}
	refreshAll(snap.Records()) // the first views: the overrides build set, the health words Sync left
	e.publish(snap)
	return nil
}

// mergeInputs merges the sources of backend sets in order, and checks what they made.
func (e *Engine) mergeInputs() ([]*config.Zone, error) {
	var zones []*config.Zone
	for _, src := range e.backends {
		var err error
		if zones, err = src.Merge(zones); err != nil {
			return nil, fmt.Errorf("%s: %w", src.Name(), err)
		}
	}
	for _, z := range zones {
		for _, w := range z.Warnings {
			e.log.Warningf("%v", w)
		}
	}
	warnGeoless(zones, e.opts.GeoIP, e.log)
	return zones, checkPlaceholders(zones)
}

// build compiles zones into a snapshot without its views, which are built once the overrides
// are set (here) and the health manager has the new backends (syncVerdicts).
func (e *Engine) build(zones []*config.Zone) (*catalog.Snapshot, error) {
	snap, err := catalog.BuildUnviewed(zones, e.health)
	if err != nil {
		return nil, fmt.Errorf("compile zones: %w", err)
	}
	if h, ok := instanceOf[interface{ Heartbeat() *published.Served }](e); ok {
		snap.SetHeartbeat(h.Heartbeat()) // the sites source's: every snapshot serves the same
	}
	weights := shiftWeights(snap, e.list)
	if len(e.overrides) > 0 || len(e.drains) > 0 || len(weights) > 0 {
		var buf [128]byte
		for _, r := range snap.Records() {
			for _, b := range r.Backends {
				key := b.AppendKey(buf[:0]) // read from the maps without a string of its own
				b.SetOverride(e.overrides[string(key)])
				b.SetDrainAt(e.drains[string(key)])
				if w, ok := weights[string(key)]; ok {
					b.SetShiftWeight(w)
				}
			}
		}
	}
	return snap, nil
}

// syncVerdicts gives the health manager the backends of snap, and has every input that
// judges backends report again: the new ones start unknown.
func (e *Engine) syncVerdicts(snap *catalog.Snapshot) error {
	ps, err := compileProbes(snap)
	if err != nil {
		return err
	}
	ps.sync(e.health)
	for _, j := range e.judges {
		j.ReportAll()
	}
	return nil
}

// publish swaps snap in: queries and publishers read it from now on.
func (e *Engine) publish(snap *catalog.Snapshot) {
	snap.CarryCounts(e.snap.Load())
	if e.shared.transfers.Load() {
		e.shared.versioner.Update(snap) // the zones keep their serials, or raise them (notified at the next check)
	}
	e.snap.Store(snap)
	e.scheduleTTLChanges()
	recordsGauge.Set(float64(len(snap.Records())))
	lastReloadTime.SetToCurrentTime()
	gctune.Settle() // the old snapshot's pages go back to the system once reloads settle
}

// SetOverrides makes overrides (by backend key; absent keys have none) the operators'
// overrides of the enable flags, now and for every later snapshot. Answers follow at once. A
// backend its configuration disables and an override enables must be probed first: such a
// change reloads the configuration, which starts its probes.
func (e *Engine) SetOverrides(overrides map[string]catalog.Override) error {
	return e.setOverrides(overrides, nil, nil, time.Time{})
}

// setOverrides is SetOverrides, with the starts of the scheduled drains (DrainStarts) and,
// when overrides are those of list at now, the drain guard's check of the drains that start:
// those it holds are left out.
func (e *Engine) setOverrides(overrides map[string]catalog.Override, drains map[string]time.Time, list []overlay.Override, now time.Time) error {
	overrides = maps.Clone(overrides)
	e.reloadMu.Lock()
	if list != nil {
		held := e.holdDrains(startingDrains(list, now, e.overrides))
		for k := range held {
			delete(overrides, k)
		}
		e.list = list
		e.noteHeld(held, list)
	}
	e.overrides, e.drains = overrides, maps.Clone(drains)
	reprobe := false
	scheduled := applyDrainStarts(e.Snapshot().Records(), drains)
	var weights map[string]int // the shifts' weights, when the overrides are the store's
	if list != nil {
		weights = shiftWeights(e.Snapshot(), list)
	}
	var buf [128]byte
	for _, r := range e.Snapshot().Records() {
		changed := scheduled[r]
		for _, b := range r.Backends {
			key := b.AppendKey(buf[:0])
			wasWanted := enabledOrForced(b)
			if b.SetOverride(overrides[string(key)]) {
				changed = true
				reprobe = reprobe || enabledOrForced(b) != wasWanted
			}
			if w, ok := weights[string(key)]; list != nil && !ok {
				changed = b.SetShiftWeight(-1) || changed
			} else if ok {
				changed = b.SetShiftWeight(w) || changed
			}
		}
		if changed {
			r.Refresh()
		}
	}
	e.scheduleTTLChanges()
	e.reloadMu.Unlock()
	if reprobe {
		return e.Reload()
	}
	return nil
}

// Start starts what the engine runs in the background: the sources' watches (a change of a
// zone file reloads), the watch of the GeoIP files, the health manager's scheduler and its
// Redis loops, the components (inputs and publishers) that have background work, the
// overrides store's subscription, and the admin API. CoreDNS calls it when the
// server starts.
func (e *Engine) Start() error {
	for _, src := range e.backends {
		stop, err := src.Watch(func() { _ = e.Reload() }, e.log)
		if err != nil {
			return fmt.Errorf("watch the %s: %w", src.Name(), err)
		}
		e.stops = append(e.stops, stop)
	}
	if e.geo != nil {
		stop, err := files.Watch(e.geo.Sources().Files(), e.reloadGeo, e.log)
		if err != nil {
			return fmt.Errorf("watch geoip files: %w", err)
		}
		e.stops = append(e.stops, stop)
	}
	if err := e.watchSecurity(); err != nil {
		return err
	}
	for _, u := range e.uses {
		e.reg.startComponent(u) // before the probes: the publishers see the first transitions
	}
	e.reg.startHealth(e.shared)
	if e.api != nil {
		// Overrides changed since Open are applied once subscribed.
		e.stops = append(e.stops, e.api.store.Subscribe(e.applyOverrides), e.stopTTLChanges)
		e.applyOverrides()
		e.reg.startAPI(e.api, e.opts.ZoneOrigins(), e)
	}
	return nil
}

// applyOverrides applies the overrides store's current list, and tells the webhooks what
// changed.
func (e *Engine) applyOverrides() {
	e.notifyOverrides()
	list, now := e.api.store.List(), time.Now()
	if err := e.setOverrides(CatalogOverrides(list, now), DrainStarts(list, now), list, now); err != nil {
		e.log.Errorf("applying overrides: %v", err)
	}
}

// Stop ends what Start started and gives back the engine's shares of the registry: the last
// engine of a health manager or an admin listener stops it. It is safe to call more than once
// and without Start.
func (e *Engine) Stop() error {
	for _, stop := range e.stops {
		stop()
	}
	e.stops = nil
	e.release()
	return nil
}

// release gives back the engine's shares of the registry, once.
func (e *Engine) release() {
	if !e.reg.untrack(e) {
		return
	}
	recordCollector.remove(e)
	if e.api != nil {
		e.reg.releaseAPI(e.api, e.log)
	}
	e.releaseComponents()
	e.reg.releaseHealth(e.shared)
}

// releaseComponents gives back the engine's components, the last table row first.
func (e *Engine) releaseComponents() {
	for i := len(e.uses) - 1; i >= 0; i-- {
		e.reg.releaseComponent(e.uses[i])
	}
}
