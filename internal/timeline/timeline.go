// Package timeline keeps the failover timelines of a gslb block (a publisher): for every
// transition of a backend between known states (up, down, stale), when the evidence began
// (the first probe of the run of results that changed it, or a source's report), when the
// state changed, when the record's view holding the change was swapped in, when other sites
// learned it (a peer's first read of the record's localtargets) and the other instances of a
// cluster did (their own transitions, which each writes to the fleet), and when the first
// answer of the changed view went out. The last few timelines of each record are kept, and
// the measured time, from the evidence to the first changed answer, is a histogram by record
// beside the record's failover_target.
//
// The query path's part is the record's catalog.AnswerWatch: one pointer test per answer
// while a watch is set, one atomic load after its first answer, nothing otherwise.
package timeline

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/periodic"
)

// Kept per record, and how long a timeline waits for its first answer.
const (
	// PerRecord is how many timelines of each record are kept.
	PerRecord = 8
	// answerWait is how long a change waits for its first answer: a record nobody asks for
	// keeps its timeline unanswered.
	answerWait = 10 * time.Minute
	// poll is how often open timelines are looked at. The times they hold are taken when each
	// event happens; the poll only closes them.
	poll = 100 * time.Millisecond
	// fleetWait is how long after a change the fleet's instances are asked when they learned
	// it: a result reaches them within milliseconds.
	fleetWait = 2 * time.Second
)

// Timeline is one backend transition, from its evidence to its first answer.
type Timeline struct {
	Record, Backend, Key string
	From, To             health.Status
	Reason               string
	// Detected is when the evidence began; Changed when the state changed; Swapped when the
	// record's view holding it was swapped in; Answered when the first answer of the
	// backend's family went out from such a view. A zero time has not happened (yet).
	Detected, Changed, Swapped, Answered time.Time
	// Learned are when other sites and instances learned it, in time order.
	Learned []Learned
	// Target is the record's failover_target (0: none).
	Target time.Duration
	// Superseded is set when a later change of the record came before this one's answer.
	Superseded bool
}

// Learned is when one other site or instance learned a change.
type Learned struct {
	By string
	At time.Time
}

// Measured returns the time from the evidence to the first answer; 0 before the answer.
func (t *Timeline) Measured() time.Duration {
	if t.Answered.IsZero() {
		return 0
	}
	return t.Answered.Sub(t.Detected)
}

// Fleet is what the other instances of a cluster learned: the engine's cluster client.
type Fleet interface {
	// NoteLearned tells the fleet that this instance learned tr. It may block on the network:
	// the keeper calls it outside the health manager.
	NoteLearned(tr health.Transition)
	// LearnedBy returns when each other instance learned the change of key to status to,
	// changed at changed (a change of another cycle is left out).
	LearnedBy(key string, to health.Status, changed time.Time) []Learned
}

// open is a timeline waiting for its first answer.
type open struct {
	t     Timeline
	rec   *catalog.Record
	watch *catalog.AnswerWatch
	// fleetAsked is set once the fleet's instances were asked.
	fleetAsked bool
}

// Keeper keeps the timelines of one gslb block: told of every transition of the block's
// health manager (Transition), it follows each to its first answer.
type Keeper struct {
	mu     sync.Mutex
	served func() *catalog.Snapshot
	fleet  Fleet
	open   []*open
	// notes are the transitions this instance learned, for the fleet (written by the loop).
	notes []health.Transition
	done  map[string][]Timeline // by record, oldest first

	// loop closes the timelines that were answered or waited too long, every poll.
	loop periodic.Loop
}

// New returns a keeper; Configure gives it the snapshot served.
func New() *Keeper { return &Keeper{done: map[string][]Timeline{}} }

// Name implements publish.Publisher.
func (k *Keeper) Name() string { return "failover timelines" }

// Configure gives the keeper the snapshot the block serves, and the fleet of its cluster (nil
// without one), after each load; the timelines of records that left the configuration go,
// with their metrics.
func (k *Keeper) Configure(served func() *catalog.Snapshot, fleet Fleet) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.served, k.fleet = served, fleet
	snap := served()
	if snap == nil {
		return
	}
	for name := range k.done {
		if recordOf(snap, name) == nil {
			delete(k.done, name)
			forget(name)
		}
	}
}

// Transition implements publish.TransitionPublisher: a change between known states starts a
// timeline, and sets a watch on its record for the refresh that follows. It does not block.
func (k *Keeper) Transition(tr health.Transition) {
	if tr.From == health.Unknown || tr.To == health.Unknown {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fleet != nil {
		k.notes = append(k.notes, tr)
	}
	if k.served == nil {
		return
	}
	snap := k.served()
	rec := recordOf(snap, tr.Record)
	if snap == nil || rec == nil {
		return
	}
	o := &open{t: Timeline{Record: rec.Name(), Backend: tr.Backend, Key: tr.Key, From: tr.From, To: tr.To,
		Reason: tr.Reason, Detected: tr.Since, Changed: tr.Time, Target: rec.Config.Settings().FailoverTarget}, rec: rec}
	family := familyOf(rec, tr.Key)
	for _, prev := range k.open {
		if prev.rec == rec && prev.watch.Family == family && prev.watch.Swapped().IsZero() {
			o.watch = prev.watch // the same refresh answers both
		}
	}
	if o.watch == nil {
		o.watch = &catalog.AnswerWatch{Family: family}
		for _, prev := range k.open {
			if prev.rec == rec && prev.watch.Family == family {
				prev.t.Superseded = true // its view is replaced before its first answer
			}
		}
	}
	rec.Watch(o.watch)
	k.open = append(k.open, o)
}

// recordOf returns the record of snap named name, nil for none.
func recordOf(snap *catalog.Snapshot, name string) *catalog.Record {
	if snap == nil {
		return nil
	}
	name = strings.ToLower(name)
	z := snap.Zone(name)
	if z == nil {
		return nil
	}
	return z.Find(name).Record
}

// familyOf returns the address family of rec's backend with key: IPv4 for a host name.
func familyOf(rec *catalog.Record, key string) catalog.Family {
	for _, b := range rec.Backends {
		if b.Config.IP.Is6() && b.Key() == key {
			return catalog.IPv6
		}
	}
	return catalog.IPv4
}

// Timelines returns the kept timelines of record (every record's when empty), the newest
// first, at most limit (0: all), the open ones included.
func (k *Keeper) Timelines(record string, limit int) []Timeline {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []Timeline
	for _, o := range k.open {
		if record == "" || strings.EqualFold(o.t.Record, record) {
			t := o.t
			t.Swapped = o.watch.Swapped()
			out = append(out, t)
		}
	}
	for name, ts := range k.done {
		if record == "" || strings.EqualFold(name, record) {
			out = append(out, ts...)
		}
	}
	slices.SortFunc(out, func(a, b Timeline) int { return b.Changed.Compare(a.Changed) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// Start starts following the open timelines.
func (k *Keeper) Start() {
	k.loop.Start(func(context.Context) {
		now := time.Now()
		k.tell()
		k.ask(now)
		k.close(now)
	}, func() time.Duration { return poll })
}

// Stop stops it; the open timelines stay open.
func (k *Keeper) Stop() { k.loop.Stop() }

// tell writes the transitions this instance learned to the fleet.
func (k *Keeper) tell() {
	k.mu.Lock()
	notes, fleet := k.notes, k.fleet
	k.notes = nil
	k.mu.Unlock()
	for _, tr := range notes {
		fleet.NoteLearned(tr)
	}
}

// ask asks the fleet, once for each open timeline fleetWait after its change, when its other
// instances learned it.
func (k *Keeper) ask(now time.Time) {
	k.mu.Lock()
	fleet := k.fleet
	var due []*open
	for _, o := range k.open {
		if !o.fleetAsked && now.Sub(o.t.Changed) >= fleetWait {
			o.fleetAsked = true
			due = append(due, o)
		}
	}
	k.mu.Unlock()
	if fleet == nil {
		return
	}
	for _, o := range due {
		learned := fleet.LearnedBy(o.t.Key, o.t.To, o.t.Changed)
		k.mu.Lock()
		o.t.Learned = append(o.t.Learned, learned...)
		k.mu.Unlock()
	}
}

// close moves the answered timelines, and those that waited answerWait, to the kept ones.
func (k *Keeper) close(now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.open = slices.DeleteFunc(k.open, func(o *open) bool {
		answered := o.watch.Answered()
		if answered.IsZero() && !o.t.Superseded && now.Sub(o.t.Changed) < answerWait {
			return false
		}
		if k.fleet != nil && !o.fleetAsked {
			return false // the fleet has not been asked yet
		}
		t := &o.t
		t.Swapped = o.watch.Swapped()
		if !t.Superseded {
			t.Answered = answered
		}
		if read := o.watch.PeerRead(); !read.IsZero() {
			t.Learned = append(t.Learned, Learned{By: "peer sites (localtargets read)", At: read})
		}
		slices.SortFunc(t.Learned, func(a, b Learned) int { return a.At.Compare(b.At) })
		o.rec.Unwatch(o.watch)
		if !t.Answered.IsZero() {
			observe(t)
		}
		traceTimeline(t)
		ts := append(k.done[t.Record], *t)
		if len(ts) > PerRecord {
			ts = slices.Delete(ts, 0, len(ts)-PerRecord)
		}
		k.done[t.Record] = ts
		return true
	})
}
