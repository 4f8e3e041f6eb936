package drill

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/publish"
)

// Logger is where the runner reports the drills that fail; CoreDNS's plugin logger is one.
type Logger interface {
	Infof(format string, args ...any)
	Warningf(format string, args ...any)
}

// Apply makes changes of the overrides as the admin API does (the drain guard on), by the
// user by: how a live drill drains.
type Apply func(ctx context.Context, by string, changes []overlay.Change) error

// Status is a drill as the API lists it: its configuration, its next run and its last report.
type Status struct {
	Name       string     `json:"name"`
	Every      string     `json:"every"`
	Hypothesis Hypothesis `json:"hypothesis"`
	Live       string     `json:"live,omitempty"`
	Next       time.Time  `json:"next"`
	Last       *Report    `json:"last,omitempty"`
}

// Runner runs a block's drills at their times, keeps each one's last report, and runs a drill
// or a hypothesis on demand. It outlives Corefile reloads with its block's health manager, so
// that the last reports stay; Configure gives it each load's drills. Made and configured, it
// starts nothing: Start does.
type Runner struct {
	mu      sync.Mutex
	drills  []config.Drill
	opts    config.Options
	served  publish.Served
	apply   Apply
	report  func(Report)
	log     Logger
	last    map[string]Report
	wake    chan struct{}
	cancel  context.CancelFunc
	done    chan struct{}
	running bool
}

var _ publish.Publisher = (*Runner)(nil)

// NewRunner returns a runner without drills.
func NewRunner() *Runner {
	return &Runner{last: make(map[string]Report), wake: make(chan struct{}, 1)}
}

// Name implements publish.Publisher.
func (r *Runner) Name() string { return "drills" }

// Configure gives the runner the block's options (its drills, and what the failover budgets
// read), the snapshot it serves, how a live drill drains (nil: no admin API), where reports go
// (the webhooks) and the log. The schedule follows at once.
func (r *Runner) Configure(o config.Options, served publish.Served, apply Apply, report func(Report), log Logger) {
	r.mu.Lock()
	r.opts, r.drills, r.served, r.apply, r.report, r.log = o, slices.Clone(o.Safety.Drills), served, apply, report, log
	for name := range r.last {
		if !slices.ContainsFunc(r.drills, func(d config.Drill) bool { return d.Name == name }) {
			delete(r.last, name)
			forget(name)
		}
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Start implements publish.Publisher: the drills run at their times.
func (r *Runner) Start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done, r.running = cancel, make(chan struct{}), true
	go r.loop(ctx, r.done)
}

// Stop implements publish.Publisher: the schedule ends, and a run in progress with it.
func (r *Runner) Stop() {
	r.mu.Lock()
	if !r.running {
		r.mu.Unlock()
		return
	}
	cancel, done := r.cancel, r.done
	r.running = false
	r.mu.Unlock()
	cancel()
	<-done
}

// next returns when drill d runs next after now: the next multiple of its interval on the
// Unix clock.
func next(d config.Drill, now time.Time) time.Time {
	return now.Truncate(d.Every).Add(d.Every)
}

// loop runs the drills that are due, then sleeps until the next one or a new configuration.
func (r *Runner) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	due := map[string]time.Time{}
	for {
		r.mu.Lock()
		drills := slices.Clone(r.drills)
		r.mu.Unlock()
		now := time.Now()
		var wakeAt time.Time
		for _, d := range drills {
			at, ok := due[d.Name+" "+d.Every.String()]
			if !ok {
				at = next(d, now)
			}
			if !now.Before(at) {
				r.Run(ctx, d.Name, Hypothesis{})
				at = next(d, time.Now())
			}
			due[d.Name+" "+d.Every.String()] = at
			if wakeAt.IsZero() || at.Before(wakeAt) {
				wakeAt = at
			}
		}
		var timer <-chan time.Time
		var t *time.Timer
		if !wakeAt.IsZero() {
			t = time.NewTimer(time.Until(wakeAt))
			timer = t.C
		}
		select {
		case <-ctx.Done():
		case <-r.wake:
		case <-timer:
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// ErrUnknown is the error of a run of a drill the block does not have.
var ErrUnknown = errors.New("no such drill")

// Run runs the drill called name (its hypothesis; live, when it is) or, with no name, the
// hypothesis h (never live), and returns its report. A named drill's report is kept as its
// last, counted in the metrics and, when it failed, logged and sent to the webhooks.
func (r *Runner) Run(ctx context.Context, name string, h Hypothesis) (Report, error) {
	r.mu.Lock()
	opts, served, apply, report, log := r.opts, r.served, r.apply, r.report, r.log
	var d config.Drill
	i := slices.IndexFunc(r.drills, func(d config.Drill) bool { return d.Name == name })
	if i >= 0 {
		d = r.drills[i]
	}
	r.mu.Unlock()
	switch {
	case name != "" && i < 0:
		return Report{}, fmt.Errorf("%w: %s", ErrUnknown, name)
	case name != "":
		h = Hypothesis{Down: d.Down, Drained: d.Drained, Primaries: d.Primaries}
	case h.Empty():
		return Report{}, errors.New("the drill supposes nothing: give down, drained or primaries")
	}
	var snap *catalog.Snapshot
	if served != nil {
		snap = served()
	}
	if snap == nil {
		return Report{}, errors.New("the block serves no configuration yet")
	}
	now := time.Now()
	rep := Run(snap, opts, h, now)
	rep.Drill = name
	if d.Live > 0 {
		rep.Live = live(ctx, snap, d, apply, now)
		if rep.Live.Error != "" {
			rep.Failed = true
			rep.Summary += "; the live drain was not made: " + rep.Live.Error
		}
	}
	if name == "" {
		return rep, nil
	}
	r.mu.Lock()
	r.last[name] = rep
	r.mu.Unlock()
	record(rep)
	if rep.Failed {
		if log != nil {
			log.Warningf("drill %s failed: %s", name, rep.Summary)
		}
		if report != nil {
			report(rep)
		}
	} else if log != nil {
		log.Infof("drill %s passed: %s", name, rep.Summary)
	}
	return rep, nil
}

// live drains the backends d's Drained selectors name on snap, for d.Live, through apply.
func live(ctx context.Context, snap *catalog.Snapshot, d config.Drill, apply Apply, now time.Time) *Live {
	l := &Live{Until: now.Add(d.Live).Truncate(time.Second), Backends: []string{}}
	for _, rec := range snap.Records() {
		for _, b := range rec.Backends {
			if slices.ContainsFunc(d.Drained, func(sel string) bool { return catalog.Matches(b, sel) }) {
				l.Backends = append(l.Backends, b.Key())
			}
		}
	}
	switch {
	case apply == nil:
		l.Error = "the block has no admin API to drain through"
	case len(l.Backends) == 0:
		l.Error = "no backend matches"
	}
	if l.Error != "" {
		return l
	}
	changes := make([]overlay.Change, len(l.Backends))
	for i, k := range l.Backends {
		changes[i] = overlay.Change{Key: k, Action: overlay.Drain, Expires: l.Until, Reason: "live drill " + d.Name}
	}
	if err := apply(ctx, "drill:"+d.Name, changes); err != nil {
		l.Error = err.Error()
	}
	return l
}

// Statuses returns the drills with their next runs and last reports, in Corefile order.
func (r *Runner) Statuses(now time.Time) []Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Status, 0, len(r.drills))
	for _, d := range r.drills {
		s := Status{Name: d.Name, Every: d.Every.String(), Hypothesis: Hypothesis{Down: d.Down, Drained: d.Drained, Primaries: d.Primaries},
			Next: next(d, now)}
		if d.Live > 0 {
			s.Live = d.Live.String()
		}
		if rep, ok := r.last[d.Name]; ok {
			s.Last = &rep
		}
		out = append(out, s)
	}
	return out
}
