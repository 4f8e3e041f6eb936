package engine

import (
	"time"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/overlay"
)

// DrainStarts returns the start of every drain of list that has not started at now, by
// backend key: until then the backend is served, and its record's answers carry the drain TTL
// from one record_ttl before the start (catalog.Backend.SetDrainAt).
func DrainStarts(list []overlay.Override, now time.Time) map[string]time.Time {
	m := make(map[string]time.Time)
	for _, o := range list {
		if o.Pending(now) {
			m[o.Key] = o.Starts
		}
	}
	return m
}

// ttlTimer refreshes the records whose TTL changes by time alone (catalog.ViewExtra.NextTTLChange:
// the lead-in and the steps of a scheduled drain) when it does: one timer per engine, set for
// the earliest such instant of the snapshot, never a timer per record or work per query.
type ttlTimer struct {
	timer   *time.Timer
	at      time.Time
	stopped bool
}

// scheduleTTLChanges sets the engine's TTL timer for the earliest NextTTLChange of the current
// snapshot's records, or stops it when none has one. Call it with e.reloadMu held, after the
// records were refreshed.
func (e *Engine) scheduleTTLChanges() {
	t := &e.ttl
	if t.stopped {
		return
	}
	var next time.Time
	if snap := e.Snapshot(); snap != nil {
		for _, r := range snap.Records() {
			if at := r.View().Extra().NextTTLChange; !at.IsZero() && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
	}
	if next.Equal(t.at) && t.timer != nil {
		return
	}
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	t.at = next
	if !next.IsZero() {
		t.timer = time.AfterFunc(time.Until(next), e.ttlChanged)
	}
}

// ttlChanged refreshes the records whose TTL change is due, and sets the timer for the next.
func (e *Engine) ttlChanged() {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	e.ttl.timer, e.ttl.at = nil, time.Time{}
	now := time.Now()
	if e.api != nil { // the drain guard checks the drains that start before they take effect
		held := e.holdDrains(startingDrains(e.list, now, e.overrides))
		releaseHeld(e.Snapshot().Records(), held)
		e.noteHeld(held, e.list)
	}
	for _, r := range e.Snapshot().Records() {
		if at := r.View().Extra().NextTTLChange; !at.IsZero() && !at.After(now) {
			r.Refresh() // a drain that started takes the backend out
		}
	}
	e.scheduleTTLChanges()
}

// stopTTLChanges stops the TTL timer for good: the engine stops.
func (e *Engine) stopTTLChanges() {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	e.ttl.stopped = true
	if e.ttl.timer != nil {
		e.ttl.timer.Stop()
	}
	if e.heldTimer != nil {
		e.heldTimer.Stop()
	}
	heldGauge.Sub(float64(len(e.held)))
	e.held = nil
}

// releaseHeld takes the scheduled start off the backends whose drains are held: they stay
// served. Call it with e.reloadMu held.
func releaseHeld(records []*catalog.Record, held map[string]string) {
	if len(held) == 0 {
		return
	}
	var buf [128]byte
	for _, r := range records {
		for _, b := range r.Backends {
			if _, ok := held[string(b.AppendKey(buf[:0]))]; ok {
				b.SetDrainAt(time.Time{})
			}
		}
	}
}

// applyDrainStarts gives the backends of the current snapshot their scheduled drains' starts,
// and reports the records it changed. Call it with e.reloadMu held.
func applyDrainStarts(records []*catalog.Record, drains map[string]time.Time) map[*catalog.Record]bool {
	changed := make(map[*catalog.Record]bool)
	var buf [128]byte
	for _, r := range records {
		for _, b := range r.Backends {
			if b.SetDrainAt(drains[string(b.AppendKey(buf[:0]))]) {
				changed[r] = true
			}
		}
	}
	return changed
}
