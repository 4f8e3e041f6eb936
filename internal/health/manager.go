package health

import (
	"cmp"
	"iter"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meridian-gslb/meridian/internal/health/probe"
	"github.com/meridian-gslb/meridian/internal/health/timequeue"
)

// Logger is where the manager reports transitions; CoreDNS's plugin logger satisfies it.
type Logger interface {
	Infof(format string, args ...any)
	Warningf(format string, args ...any)
}

// Spec describes one backend to probe, as one configuration snapshot has it.
type Spec struct {
	// Key is the backend's identity across reloads (record, address, port).
	Key string
	// State is the backend's health word as the manager's State(Key) returned it, when the
	// caller kept it (the catalog does): Sync then takes it without looking Key up. Nil, or a
	// word the manager no longer holds, is looked up by Key.
	State *State
	// Record and Backend name the backend in logs and metrics.
	Record, Backend string
	// Checks must all pass for the backend to be up (and, on an External backend, its
	// report too).
	Checks     []*probe.Compiled
	Rise, Fall int
	// Interval is the record's scrape_interval; Retries its scrape_retries.
	Interval time.Duration
	Retries  int
	// Activity is set by queries of the backend's record; records left unqueried for the idle
	// timeout are probed less often. Nil means always active.
	Activity *Activity
	// OnChange is called, outside the manager's lock, after the backend's status changed.
	OnChange func()
	// OnMeasure is called, outside the manager's lock, after the backend's RTT or load moved
	// enough to matter (see measure.go) while its status stayed; nil: nothing is called.
	OnMeasure func()
	// Capacity is the backend's capacity (config.Checks.Capacity; 0 counts as 1): how much
	// its load must move to matter.
	Capacity float64
	// Passive backends have no checks: their results come from the fleet through a
	// Coordinator. Without one, the manager ignores them and they stay unknown.
	Passive bool
	// External backends are judged by a source, through Report (another site's published
	// health, a Kubernetes Service's readiness). Without checks, the backend's status is the
	// last report. With checks, it is both: the report and the checks' rise/fall verdict
	// must each be up, as withReport combines them; the report is never damped by rise and
	// fall (its source did that). They start unknown, or at their seeded status.
	External bool
	// MeasureOnly backends (External ones: another site's backends that this site measures,
	// see config.Backend.MeasureOnly) are probed with their checks for their RTT and load
	// alone: their status is their source's report, whatever the checks find.
	MeasureOnly bool
	// prepared is the backend Prepare made ahead for the spec; nil for none.
	prepared *backend
}

// Backends returns how many backends the manager probes: those its last Sync was given (none
// before the first).
func (m *Manager) Backends() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.backends)
}

// Prepare makes ahead, for spec, the backend that Sync makes for a key it has no backend to
// keep for, such as every key at the first Sync: a load of hundreds of thousands of backends
// makes them on another core while Sync, which holds the manager's lock, takes them one by one.
// It reads spec and the manager's options only, and may run while a Sync runs. Sync drops a
// prepared backend that it does not need.
func (m *Manager) Prepare(spec *Spec) { spec.prepared = makeBackend(spec, m.opts.CheckStats) }

// Options tune the manager.
type Options struct {
	// CheckStats keeps the per-backend counts that CheckStats returns (CoreDNS-GSLB's
	// health-check metrics); off, they take no memory.
	CheckStats bool
	// History keeps each probed backend's last hour (history.go: about 0.7 KB a backend once it
	// has results) for History, which the admin API's dashboard draws; off, none is kept.
	History bool
	// MaxHistories bounds how many backends keep a history: the first ones in the order of
	// the specs Sync is given; 0 means DefaultMaxHistories.
	MaxHistories int
	// MaxStaggerStart and BatchSizeStart spread the first probes of a start-up.
	MaxStaggerStart time.Duration
	BatchSizeStart  int
	// IdleTimeout and IdleMultiplier slow down the probes of records nobody queries.
	IdleTimeout    time.Duration
	IdleMultiplier int
	// MaxInFlight caps the probes running at once; a cycle that finds no room is skipped.
	MaxInFlight int
	Log         Logger
	// Coordinator turns on cluster mode: checks run on the fleet's clock, the coordinator
	// decides who probes each cycle, and results are shared (see coordinator.go). Nil: every
	// check is probed here on its own jittered schedule.
	Coordinator Coordinator
	// ProbeSources are the local addresses (at most one per family) that tcp and http checks
	// without a probe_source of their own connect from (the Corefile's probe_source).
	ProbeSources []netip.Addr
	// Seed holds, by backend key, the status a backend starts at instead of unknown: the last
	// known health, from the state file of a previous run. The first Sync applies it (each
	// seeded check's machine starts at that status, so rise and fall count from there) and
	// forgets it; Unknown entries and keys that Sync does not name are ignored.
	Seed map[string]Status
	// OnTransition, when set, is called with every status change of a backend, in order, with
	// the manager's lock held: it must return at once and not call the manager (it queues the
	// change, as the webhooks' notifier does).
	OnTransition func(Transition)
}

// DefaultMaxInFlight bounds concurrent probes (and so memory) when Options sets no limit.
const DefaultMaxInFlight = 20000

// Manager owns every backend's health: the state words the query path reads, the rise/fall
// machines, and one scheduler that runs each distinct check once per interval. It lives as
// long as the engine and keeps state across reloads.
type Manager struct {
	opts Options
	// id tells the manager's states from others' (State.owner).
	id uint32

	mu sync.Mutex
	// states are the health words by key; a probed backend is its state's (State.b), so that
	// no second map by key is kept.
	states map[string]*State
	// backends are the probed backends, in the order of the specs of the last Sync; gen
	// counts the Syncs, which mark the backends they keep: a backend's gen is only compared
	// with this Sync's and the last one's, so that 8 bits, wrapping, are enough.
	backends []*backend
	gen      uint8
	// queue holds every job, by when it runs next: it is the manager's list of jobs too.
	queue   timequeue.Queue[*job]
	started bool

	poller   *probe.Poller // nil where epoll is unavailable: every probe runs on a goroutine
	stopping atomic.Bool
	inFlight chan struct{}
	wake     chan struct{}
	done     chan struct{}
	wg       sync.WaitGroup

	cluster *clusterState     // nil without a Coordinator
	history transitions       // the recent status changes, for the admin API
	seed    map[string]Status // Options.Seed until the first Sync
}

// backend is one probed backend and its checks' damping machines. It keeps what the manager
// needs of its Spec, not the Spec: a big zone has hundreds of thousands of them.
type backend struct {
	state *State
	// record and name are the Spec's Record and Backend.
	record, name string
	// one is the subscription of a backend of one check (the common case; its backend is nil
	// on the others, whose subscriptions are in rare): see subscriptions.
	one [1]subscription
	// onChange and onMeasure are the Spec's.
	onChange, onMeasure func()
	status              Status
	external            bool  // Spec.External
	measureOnly         bool  // Spec.MeasureOnly
	gen                 uint8 // the Manager.gen of the last Sync that kept it
	// wasDown is set when the backend went down, here, since it was last up: its next up is a
	// recovery, from which slow start ramps (State.Recovered). A backend's first up, at
	// start-up or from a status restored from the state file, is none.
	wasDown bool
	// details holds the last result and change.
	details lastResult
	// activity is whether the backend's record was queried lately (nil: always active).
	activity *Activity
	// measures are its smoothed and last announced RTT (measure.go).
	measures measures
	// rare is what few backends have (rare.go): nil until one needs it.
	rare *rareState
}

// subscription is one backend's view of one (possibly shared) check.
type subscription struct {
	backend *backend
	job     *job // the job that runs the check
	// stats counts the results probed here, for CheckStats; nil unless Options.CheckStats.
	stats   *CheckStats
	machine machine
}

// NewManager returns a manager that probes nothing until Sync and Start.
func NewManager(opts Options) *Manager {
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.BatchSizeStart <= 0 {
		opts.BatchSizeStart = 1
	}
	m := &Manager{
		opts:     opts,
		id:       managerIDs.Add(1),
		states:   make(map[string]*State),
		inFlight: make(chan struct{}, opts.MaxInFlight),
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		seed:     opts.Seed,
	}
	m.opts.Seed = nil
	if opts.Coordinator != nil {
		m.cluster = &clusterState{coord: opts.Coordinator, exclusive: opts.Coordinator.Exclusive(),
			sources: opts.Coordinator.Sources()} // the instance's probe_source, bound in syncCluster
	}
	return m
}

// managerIDs numbers the managers, from 1 (State.owner).
var managerIDs atomic.Uint32

// State returns the health word of the backend with key, creating it on first use. It
// implements catalog.HealthSource.
func (m *Manager) State(key string) *State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stateLocked(key)
}

// States sets states[i] to State(keys[i]) for each key, taking the manager's lock once: a
// catalog build of hundreds of thousands of backends asks for their words a batch at a time,
// from every core. It implements catalog's batched HealthSource.
func (m *Manager) States(keys []string, states []*State) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, key := range keys {
		states[i] = m.stateLocked(key)
	}
}

// backendLocked returns the probed backend with key, nil when there is none.
func (m *Manager) backendLocked(key string) *backend {
	if s := m.states[key]; s != nil {
		return s.b
	}
	return nil
}

func (m *Manager) stateLocked(key string) *State {
	s, ok := m.states[key]
	if !ok {
		s = &State{key: key, owner: m.id}
		m.states[key] = s
	}
	return s
}

// Sync makes specs the set of probed backends. Backends whose checks (and whether they are
// External) are unchanged keep their state and schedule; changed ones start over as unknown;
// new checks are probed at once (or, before Start, spread over the start-up stagger); checks
// nobody uses any more stop. States of keys not in keep are forgotten. The manager keeps
// nothing of specs but the probers of their checks. The states of the backends of specs are
// kept whether keep names them or not.
func (m *Manager) Sync(specs []Spec, keep map[string]bool) {
	m.SyncSeq(len(specs), func(yield func(*Spec) bool) {
		for i := range specs {
			if !yield(&specs[i]) {
				return
			}
		}
	}, keep)
}

// SyncSeq is Sync with the specs that specs yields, about n of them, in order: a caller with
// hundreds of thousands of backends makes each spec as it is asked for, and may reuse it for
// the next one.
func (m *Manager) SyncSeq(n int, specs iter.Seq[*Spec], keep map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	m.gen++
	backends := make([]*backend, 0, n)
	jobs := m.newJobs(n)
	var counts stateCounts // the backends_by_state changes, made once at the end
	for spec := range specs {
		if spec.Passive {
			if spec = m.acceptPassive(spec); spec == nil {
				continue
			}
		}
		st := spec.State
		if st == nil || st.owner != m.id || st.key != spec.Key {
			st = m.stateLocked(spec.Key)
		}
		b := st.b
		if b != nil && b.gen == m.gen {
			b = nil // a key given twice: the last spec wins
		}
		if b != nil && b.external == spec.External && b.measureOnly == spec.MeasureOnly && b.sameChecks(spec.Checks) {
			subs := b.subscriptions()
			for j := range subs {
				subs[j].machine.setThresholds(spec.Rise, spec.Fall)
			}
			b.update(spec)
		} else {
			old := b
			b = m.newBackend(spec, st)
			counts[b.status]++
			if old != nil {
				b.wasDown = old.wasDown // coming up after a reload is still a recovery
				b.setHistory(old.history().restart(now, b.status))
			}
		}
		b.gen, b.state.b = m.gen, b
		backends = append(backends, b)
		if b.activity = spec.Activity; b.activity != nil {
			b.activity.start(now)
		}
		jobs.add(b, spec)
	}
	for _, old := range m.backends {
		if old.gen != m.gen { // gone, or started over as unknown (new checks)
			counts[old.status]--
			if old.state.b == old {
				old.state.b = nil
			}
		}
	}
	m.backends = backends
	counts.add()
	m.keepHistories(now)
	m.seed = nil
	m.replaceJobs(jobs, now)
	for key, st := range m.states {
		// The states of the backends probed now (the only ones with a backend: those that
		// left lost theirs above) stay, without a look-up: whatever keep says, State(key)
		// must return the word their backend writes.
		if st.b == nil && !keep[key] {
			st.owner = 0
			delete(m.states, key)
		}
	}
	m.poke()
}

// keepHistories gives a history to the first backends, in the order of the specs they were
// synced from, up to the limit (Options.MaxHistories), and takes it from the others: a new
// backend's starts at now, one that was kept goes on.
func (m *Manager) keepHistories(now time.Time) {
	if !m.opts.History {
		for _, b := range m.backends {
			b.setHistory(nil) // none is kept (SetHistory turned it off)
		}
		return
	}
	limit := cmp.Or(m.opts.MaxHistories, DefaultMaxHistories)
	kept := 0
	for _, b := range m.backends {
		if kept == limit {
			b.setHistory(nil)
			continue
		}
		if b.history() == nil {
			b.setHistory(newHistory(now, b.status))
		}
		kept++
	}
}

// newBackend returns the backend of spec, starting over: unknown, or at its seeded status.
// A seeded External backend with checks starts with its report at that status and its checks'
// machines too, except that a stale one (a stale report over up checks, see withReport) starts
// its machines up.
func (m *Manager) newBackend(spec *Spec, st *State) *backend {
	b := spec.prepared
	if b == nil || !b.madeFor(spec) {
		b = makeBackend(spec, m.opts.CheckStats)
	}
	spec.prepared = nil
	b.state = st
	if st := m.seed[spec.Key]; st != Unknown && (len(spec.Checks) > 0 || spec.External) && (st != Stale || spec.External) {
		b.status = st
		b.details.reason = restored
		if r := b.report(); r != nil {
			*r = report{status: st, reason: restored}
		}
	}
	b.state.Set(b.status)
	b.resetMeasures() // what other checks measured does not stand for these
	checks := b.status
	if checks == Stale {
		checks = Up
	}
	subs := b.subscriptions()
	for i := range subs {
		subs[i].machine.status = checks
	}
	return b
}

// makeBackend returns a new backend of spec, unknown, without its State: the part of
// newBackend that depends on spec alone (Prepare runs it ahead of Sync).
func makeBackend(spec *Spec, checkStats bool) *backend {
	b := &backend{external: spec.External, measureOnly: spec.MeasureOnly}
	b.update(spec)
	if spec.External {
		b.more().report = &report{}
		if len(spec.Checks) > 0 {
			b.rare.report.reason = notReported
		}
	}
	subs := b.one[:0]
	if len(spec.Checks) > 1 {
		subs = make([]subscription, 0, len(spec.Checks))
	}
	for range spec.Checks {
		sub := subscription{backend: b, machine: newMachine(spec.Rise, spec.Fall)}
		if checkStats {
			sub.stats = new(CheckStats)
		}
		subs = append(subs, sub)
	}
	if len(subs) > 1 {
		b.more().subs = subs
	}
	return b
}

// madeFor reports whether b, a backend that makeBackend made and nothing used yet, is what it
// makes of spec: a passive spec that Sync accepts gets a check that the spec Prepare saw did not
// have.
func (b *backend) madeFor(spec *Spec) bool {
	return b.external == spec.External && b.measureOnly == spec.MeasureOnly && len(b.subscriptions()) == len(spec.Checks)
}

// update takes what may change of b's spec without starting it over: its names, callbacks
// and capacity.
func (b *backend) update(spec *Spec) {
	b.record, b.name = spec.Record, spec.Backend
	b.onChange, b.onMeasure = spec.OnChange, spec.OnMeasure
	b.setCapacity(spec.Capacity)
}

// key returns b's key, its State's.
func (b *backend) key() string { return b.state.key }

// sameChecks reports whether checks are the checks b's subscriptions run, in order.
func (b *backend) sameChecks(checks []*probe.Compiled) bool {
	return slices.EqualFunc(b.subscriptions(), checks, func(s subscription, c *probe.Compiled) bool { return s.job.check == keyOf(c.Key) })
}

// schedule queues new jobs: at once while running, spread in batches at start-up.
func (m *Manager) schedule(fresh []*job, now time.Time) {
	spacing := time.Duration(0)
	if !m.started && len(fresh) > m.opts.BatchSizeStart {
		batches := (len(fresh) + m.opts.BatchSizeStart - 1) / m.opts.BatchSizeStart
		window := m.opts.MaxStaggerStart
		for _, j := range fresh {
			window = min(window, j.interval)
		}
		spacing = window / time.Duration(batches)
	}
	for i, j := range fresh {
		j.setNext(now.Add(time.Duration(i/m.opts.BatchSizeStart)*spacing), now)
		m.queue.Push(j)
	}
}

// Start runs the scheduler until Stop.
func (m *Manager) Start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return
	}
	m.started = true
	backendHealthy.add(m)
	if p, err := probe.NewPoller(); err == nil {
		m.poller = p
	} else {
		m.opts.Log.Warningf("health checks run one goroutine per probe: %v", err)
	}
	m.wg.Add(1)
	go m.loop()
}

// Stop ends the scheduler, waits for probes in flight, and releases probes' resources.
func (m *Manager) Stop() {
	m.mu.Lock()
	if !m.started {
		m.mu.Unlock()
		return
	}
	m.started = false
	m.stopping.Store(true)
	close(m.done)
	m.mu.Unlock()
	backendHealthy.remove(m)
	if m.poller != nil {
		m.poller.Close()
	}
	m.wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	for j := range m.queue.All() {
		probe.Release(j.prober)
	}
	// The counts by state, which every manager adds to, give back this manager's share.
	var counts stateCounts
	for _, b := range m.backends {
		counts[b.status]--
		b.state.b = nil
	}
	counts.add()
	m.backends = nil
}

func (m *Manager) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}
