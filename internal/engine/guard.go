package engine

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/notify"
	"github.com/meridian-gslb/meridian/internal/overlay"
)

// The drain guard (config.DrainGuard) in the engine: the admin API asks it which records a
// change of the overrides would leave below their guard (Guard), and a scheduled drain is
// checked again when it starts: one that would then leave a record below its guard is held
// (its backend stays served, the hold is logged and sent to the webhooks), and checked again
// every heldRetry until the guard allows it or the drain ends. A forced drain is never held.

// heldRetry is how often held drains are checked again.
const heldRetry = time.Second

var _ admin.GuardProvider = (*Engine)(nil)

// Guard implements admin.GuardProvider: the breaches that changes would make on the current
// snapshot, a scheduled drain judged as if it started now.
func (e *Engine) Guard(changes []overlay.Change) []admin.Breach {
	after := make(map[string]catalog.Override, len(changes))
	for _, c := range changes {
		switch {
		case c.Action == overlay.Clear:
			after[c.Key] = catalog.NoOverride
		default:
			after[c.Key] = catalogOverride(c.Action)
		}
	}
	return adminBreaches(e.Snapshot().GuardBreaches(after))
}

// catalogOverride returns the engine's override of an action.
func catalogOverride(a overlay.Action) catalog.Override {
	switch {
	case a.Disables():
		return catalog.ForceDisable
	case a == overlay.ForceUp:
		return catalog.ForceUp
	case a == overlay.Enable:
		return catalog.ForceEnable
	}
	return catalog.NoOverride
}

// adminBreaches returns breaches as the admin API shows them.
func adminBreaches(bs []catalog.Breach) []admin.Breach {
	out := make([]admin.Breach, len(bs))
	for i, b := range bs {
		out[i] = admin.Breach{Record: b.Record, Family: b.Family.String(), Guard: *admin.NewDrainGuard(b.Guard),
			Served: b.After.Served, Backends: b.After.Backends, Share: b.After.Share(), ServedBefore: b.Before.Served, Text: b.String()}
	}
	return out
}

// startingDrains returns the keys of the unforced scheduled drains of list that have started
// at now and whose backends this engine has not taken out yet (current: the engine's
// overrides): those to check before they take effect.
func startingDrains(list []overlay.Override, now time.Time, current map[string]catalog.Override) []string {
	var keys []string
	for _, o := range list {
		if o.Action == overlay.Drain && !o.Starts.IsZero() && !o.Pending(now) && !o.Forced && current[o.Key] != catalog.ForceDisable {
			keys = append(keys, o.Key)
		}
	}
	return keys
}

// holdDrains returns, of the drains of the backends starting (keys), those that would leave
// a record of the current snapshot below its drain guard, with why; all the drains of a
// record that would are held together. Call it with e.reloadMu held.
func (e *Engine) holdDrains(starting []string) map[string]string {
	if len(starting) == 0 {
		return nil
	}
	after := make(map[string]catalog.Override, len(starting))
	for _, k := range starting {
		after[k] = catalog.ForceDisable
	}
	breaches := e.Snapshot().GuardBreaches(after)
	if len(breaches) == 0 {
		return nil
	}
	why := make(map[string][]string)
	for _, b := range breaches {
		why[b.Record] = append(why[b.Record], b.String())
	}
	held := make(map[string]string)
	names := backendNames(e.Snapshot(), setOf(starting))
	for _, k := range starting {
		if n, ok := names[k]; ok && why[n.record] != nil {
			held[k] = strings.Join(why[n.record], "; ")
		}
	}
	return held
}

// setOf returns the set of keys.
func setOf(keys []string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// noteHeld makes held the engine's held drains: it logs and tells the webhooks of the drains
// newly held and of those released, and keeps checking while some are held. Call it with
// e.reloadMu held.
func (e *Engine) noteHeld(held map[string]string, list []overlay.Override) {
	prev := e.held
	e.held = held
	heldGauge.Add(float64(len(held) - len(prev)))
	byKey := make(map[string]overlay.Override, len(list))
	for _, o := range list {
		byKey[o.Key] = o
	}
	var events []notify.Event
	now := time.Now()
	for _, k := range slices.Sorted(maps.Keys(held)) {
		if _, was := prev[k]; !was {
			e.log.Warningf("drain of %s held at its start: %s", k, held[k])
			o := byKey[k]
			events = append(events, notify.Event{Type: notify.TypeOverride, Time: now, Key: k, Change: notify.ChangeHeld,
				Action: string(o.Action), Reason: held[k], By: o.By, Expires: o.Expires, Starts: o.Starts, Set: o.Set})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(prev)) {
		o, still := byKey[k]
		if _, ok := held[k]; !ok && still {
			e.log.Infof("held drain of %s starts: the drain guard allows it now", k)
			events = append(events, notify.Event{Type: notify.TypeOverride, Time: now, Key: k, Change: notify.ChangeStarted,
				Action: string(o.Action), Reason: o.Reason, By: o.By, Expires: o.Expires, Starts: o.Starts, Set: o.Set})
		}
	}
	e.tellOverrides(events)
	if len(held) > 0 && !e.ttl.stopped && e.heldTimer == nil {
		e.heldTimer = time.AfterFunc(heldRetry, func() {
			e.reloadMu.Lock()
			e.heldTimer = nil
			stopped := e.ttl.stopped
			e.reloadMu.Unlock()
			if !stopped {
				e.applyOverrides()
			}
		})
	}
}

// Held returns the held drains, by backend key, with why.
func (e *Engine) Held() map[string]string {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	return maps.Clone(e.held)
}

// heldDrains returns the drains that the open engines hold, by backend key: a Corefile reload's
// new engine checks them again at its start rather than apply them.
func (r *Registry) heldDrains() map[string]string {
	r.mu.Lock()
	engines := slices.Clone(r.engines)
	r.mu.Unlock()
	held := make(map[string]string)
	for _, e := range engines {
		maps.Copy(held, e.Held())
	}
	return held
}
