package shift

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/periodic"
	"github.com/meridian-gslb/meridian/internal/publish"
)

// Round is how often a controller reads its shifts' signals and moves them on.
const Round = time.Second

// The changes a controller reports (Report).
const (
	ChangeStep       = "step"
	ChangeRolledBack = "rolled-back"
	ChangeCompleted  = "completed"
)

// Logger is where a controller reports its shifts' steps and rollbacks; CoreDNS's plugin
// logger is one.
type Logger interface {
	Infof(format string, args ...any)
	Warningf(format string, args ...any)
}

// Apply makes changes of the overrides store as the admin API does, by the user by.
type Apply func(ctx context.Context, by string, changes []overlay.Change) error

// Report tells the webhooks of a shift's change (ChangeStep, ChangeRolledBack,
// ChangeCompleted).
type Report func(s *Shift, change string)

// Setup is what a controller works with, given again after each load of its block.
type Setup struct {
	// Served is the snapshot the block serves; List the overrides store's list, where the
	// shifts are; Apply how the controller writes them.
	Served publish.Served
	List   func() []overlay.Override
	Apply  Apply
	// Results counts health-check results (failure_rate); Prometheus is the server's URL
	// (prometheus), empty for none.
	Results    Results
	Prometheus string
	Report     Report
	Log        Logger
}

// Controller moves the shifts of its block's records on: each Round it reads the signal of
// every running shift, rolls it back to its last good step when the signal degrades, and moves
// it to its next step (or completes it) once the step held for its interval. In a fleet, every
// instance's controller watches; the first to act writes the change, which every instance
// applies. It outlives Corefile reloads with its block's health manager.
type Controller struct {
	mu    sync.Mutex
	setup Setup
	rd    reader
	// notes say, by shift id, what the signal read last, or why the shift waits.
	notes  map[string]string
	loop   periodic.Loop
	series shareSeries
}

var _ publish.Publisher = (*Controller)(nil)

// NewController returns a controller that does nothing until configured and started.
func NewController() *Controller {
	return &Controller{notes: make(map[string]string), rd: reader{client: &http.Client{Timeout: prometheusTimeout}}}
}

// Name implements publish.Publisher.
func (c *Controller) Name() string { return "shifts" }

// Configure gives the controller its block's setup.
func (c *Controller) Configure(s Setup) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setup = s
	c.rd.results, c.rd.prometheus = s.Results, s.Prometheus
}

// Start implements publish.Publisher: the rounds start.
func (c *Controller) Start() { c.loop.Start(c.round, func() time.Duration { return Round }) }

// Stop implements publish.Publisher; the shifts' series go with it.
func (c *Controller) Stop() {
	c.loop.Stop()
	c.series.publish(nil)
}

// Notes returns what the controller last noted of each shift it watches, by id.
func (c *Controller) Notes() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.notes)
}

// round moves on the running shifts of the block's records.
func (c *Controller) round(ctx context.Context) {
	c.mu.Lock()
	setup, rd := c.setup, c.rd
	c.mu.Unlock()
	if setup.Served == nil || setup.List == nil {
		return
	}
	snap := setup.Served()
	if snap == nil {
		return
	}
	seen := map[string]bool{}
	for _, s := range FromOverrides(setup.List()) {
		r := Record(snap, s.Record)
		if r == nil || s.State != Running {
			continue
		}
		seen[s.ID] = true
		c.move(ctx, setup, rd, s, r, time.Now())
	}
	c.mu.Lock()
	maps.DeleteFunc(c.notes, func(id string, _ string) bool { return !seen[id] })
	c.mu.Unlock()
	c.series.publish(setup.List())
}

// Record returns the record of snap named name (not a wildcard's match), or nil.
func Record(snap *catalog.Snapshot, name string) *catalog.Record {
	z := snap.Zone(name)
	if z == nil {
		return nil
	}
	r, _, _ := z.Lookup(name)
	if r == nil || r.Name() != name {
		return nil
	}
	return r
}

// move reads s's signal and rolls it back, moves it on, completes it, or leaves it.
func (c *Controller) move(ctx context.Context, setup Setup, rd reader, s *Shift, r *catalog.Record, now time.Time) {
	if s.Signal != nil && s.Step >= 0 {
		v, err := rd.read(ctx, s, r)
		if err != nil {
			c.note(s.ID, "waiting: the signal cannot be read: "+err.Error())
			return
		}
		if bad, why := s.Signal.degraded(v); bad {
			c.rollBack(ctx, setup, s, why, now)
			return
		}
		c.note(s.ID, fmt.Sprintf("%s = %g", s.Signal, v))
	}
	if now.Sub(s.StepStarted) < time.Duration(s.Every) {
		return
	}
	change := ChangeStep
	if s.Step == len(s.Steps)-1 {
		s.State, s.Why, change = Completed, "the last step held for "+time.Duration(s.Every).String(), ChangeCompleted
		s.History = append(s.History, Event{Time: now, Step: s.Step, Share: s.Share(), What: "completed"})
	} else {
		s.Step++
		s.StepStarted = now
		s.Why = ""
		s.History = append(s.History, Event{Time: now, Step: s.Step, Share: s.Share(), What: "step"})
	}
	c.write(ctx, setup, s, change)
}

// rollBack holds s at the step before its current one (-1: every weight back on From).
func (c *Controller) rollBack(ctx context.Context, setup Setup, s *Shift, why string, now time.Time) {
	at := s.Share()
	s.State, s.Step = RolledBack, s.Step-1
	s.Why = fmt.Sprintf("%s at step %d (%s): back to %s", why, s.Step+2, percent(at), percent(s.Share()))
	s.History = append(s.History, Event{Time: now, Step: s.Step, Share: s.Share(), What: "rolled back: " + why})
	rollbacks.Inc()
	c.write(ctx, setup, s, ChangeRolledBack)
}

// write stores s, unless it was cancelled meanwhile, and reports the change.
func (c *Controller) write(ctx context.Context, setup Setup, s *Shift, change string) {
	if !slices.ContainsFunc(setup.List(), func(o overlay.Override) bool { return o.Key == s.Key() }) {
		return // cancelled since the round read it
	}
	ch, err := s.Change()
	if err == nil {
		err = setup.Apply(ctx, "shift:"+s.ID, []overlay.Change{ch})
	}
	if err != nil {
		if !errors.Is(err, context.Canceled) && setup.Log != nil {
			setup.Log.Warningf("shift %s of %s: storing its %s: %v", s.ID, s.Record, change, err)
		}
		return
	}
	if setup.Log != nil {
		switch change {
		case ChangeRolledBack:
			setup.Log.Warningf("shift %s of %s rolled back: %s", s.ID, s.Record, s.Why)
		default:
			setup.Log.Infof("shift %s of %s: %s, %s of the weight on %v", s.ID, s.Record, change, percent(s.Share()), s.To)
		}
	}
	if setup.Report != nil {
		setup.Report(s, change)
	}
}

// note records what the controller knows of shift id now.
func (c *Controller) note(id, text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notes[id] = text
}

// percent writes a share as a percentage.
func percent(share float64) string { return shares([]float64{share}) }
