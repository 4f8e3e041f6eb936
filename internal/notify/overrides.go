package notify

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/overlay"
)

// Baseline is what a block last told its webhooks of the overrides store: its overrides by key,
// as they were at the time. Its zero value is empty.
type Baseline struct {
	mu     sync.Mutex
	byKey  map[string]overlay.Override
	listed time.Time
}

// Reset makes list, listed at now, the baseline.
func (b *Baseline) Reset(list []overlay.Override, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.resetLocked(list, now)
}

// resetLocked is Reset with b.mu held.
func (b *Baseline) resetLocked(list []overlay.Override, now time.Time) {
	b.byKey, b.listed = make(map[string]overlay.Override, len(list)), now
	for _, o := range list {
		b.byKey[o.Key] = o
	}
}

// Changes returns the events that take the baseline to list, at now (see overrideChanges), and
// makes list the baseline.
func (b *Baseline) Changes(list []overlay.Override, now time.Time) []Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	events := overrideChanges(b.byKey, b.listed, list, now)
	b.resetLocked(list, now)
	return events
}

// overrideChanges returns the events that take the overrides from before, as they were at
// then, to after (sorted by key), at now: an override new or replaced is set, one gone is
// expired when its expiry passed and cleared otherwise, and a drain pending at then that is
// not at now started. The events are sorted by key, and name no record nor backend.
func overrideChanges(before map[string]overlay.Override, then time.Time, after []overlay.Override, now time.Time) []Event {
	var events []Event
	event := func(o overlay.Override, change string) {
		ev := Event{Type: TypeOverride, Time: now, Key: o.Key, Change: change, Action: string(o.Action),
			Expires: o.Expires, Starts: o.Starts, Set: o.Set}
		if change == ChangeSet || change == ChangeStarted {
			ev.Reason, ev.By = o.Reason, o.By // who removed it, the store does not keep
			ev.Forced, ev.Breaches = o.Forced, o.Breaches
		}
		events = append(events, ev)
	}
	seen := make(map[string]bool, len(after))
	for _, o := range after {
		seen[o.Key] = true
		prev, had := before[o.Key]
		switch {
		case !had || !prev.Same(o):
			event(o, ChangeSet)
		case prev.Pending(then) && !o.Pending(now):
			event(o, ChangeStarted)
		}
	}
	for key, o := range before {
		switch {
		case seen[key]:
		case !o.Expires.IsZero() && !now.Before(o.Expires):
			event(o, ChangeExpired)
		default:
			event(o, ChangeCleared)
		}
	}
	slices.SortFunc(events, func(a, b Event) int { return strings.Compare(a.Key, b.Key) })
	return events
}
