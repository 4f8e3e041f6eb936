package engine

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/cluster"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/notify"
	"github.com/meridian-gslb/meridian/internal/overlay"
)

// webhookDrain is how long a notifier that a reload replaced, or that stops with its block,
// keeps delivering what it queued.
const webhookDrain = 2 * time.Second

// webhooks is the notifier of a block's webhooks (docs/notifications.md). It belongs to the
// block's health manager, whose transitions it is told of, and outlives reloads with it: a
// load that changes the webhook options replaces the notifier, and the one replaced delivers
// what it queued (for webhookDrain) in the background.
type webhooks struct {
	instance string // the events' instance: the cluster client's id, or the host name

	mu   sync.Mutex // serialises configure and stop
	hook atomic.Pointer[webhook]
}

// webhook is one notifier and the options it was made with.
type webhook struct {
	opts config.WebhookOptions
	site string
	n    *notify.Notifier
}

// newWebhooks returns the webhooks of a block without a notifier yet; c is its cluster client
// (nil without cluster mode), whose id names the instance.
func newWebhooks(c *cluster.Client) *webhooks {
	w := &webhooks{}
	if c != nil {
		w.instance = c.ID()
	} else if host, err := os.Hostname(); err == nil {
		w.instance = host
	}
	return w
}

// configure makes o (and site, the block's site) the webhooks' options: a new notifier when
// they changed, none when o names no URL.
func (w *webhooks) configure(o config.WebhookOptions, site string, log Logger) {
	w.mu.Lock()
	defer w.mu.Unlock()
	old := w.hook.Load()
	if old != nil && old.opts.Equal(o) && old.site == site || old == nil && !o.Enabled() {
		return
	}
	var next *webhook
	if o.Enabled() {
		next = &webhook{opts: o, site: site, n: notify.New(notify.Options{URLs: o.URLs, Secret: o.Secret,
			Timeout: o.Timeout, Instance: w.instance, Site: site, Log: log})}
	}
	w.hook.Store(next)
	if old != nil {
		go drain(old.n)
	}
}

// stop stops the notifier, delivering what it queued for webhookDrain at most.
func (w *webhooks) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if old := w.hook.Swap(nil); old != nil {
		drain(old.n)
	}
}

func drain(n *notify.Notifier) {
	ctx, cancel := context.WithTimeout(context.Background(), webhookDrain)
	defer cancel()
	n.Stop(ctx)
}

// transition queues the event of tr, when the webhooks send transitions. It is the health
// manager's OnTransition: it never blocks.
func (w *webhooks) transition(tr health.Transition) {
	if h := w.hook.Load(); h != nil && h.opts.Transitions {
		h.n.Notify(notify.Event{Type: notify.TypeTransition, Time: tr.Time, Record: tr.Record, Backend: tr.Backend,
			Key: tr.Key, From: tr.From.String(), To: tr.To.String(), Reason: tr.Reason})
	}
}

// overrides queues events, when the webhooks send override changes.
func (w *webhooks) overrides(events []notify.Event) {
	if h := w.hook.Load(); h != nil && h.opts.Overrides {
		for _, ev := range events {
			h.n.Notify(ev)
		}
	}
}

// overrideBaseline is what the engine last told the webhooks of the overrides store: its
// overrides by key, as they were at the time.
type overrideBaseline struct {
	mu     sync.Mutex
	byKey  map[string]overlay.Override
	listed time.Time
}

// reset makes list, listed at now, the baseline.
func (b *overrideBaseline) reset(list []overlay.Override, now time.Time) {
	b.byKey, b.listed = make(map[string]overlay.Override, len(list)), now
	for _, o := range list {
		b.byKey[o.Key] = o
	}
}

// notifyOverrides sends an override event for each change of the store's overrides since the
// last call (or Open) to the engine's backends: the other blocks that share the store tell of
// theirs.
func (e *Engine) notifyOverrides() {
	b := &e.notified
	b.mu.Lock()
	defer b.mu.Unlock()
	list, now := e.api.store.List(), time.Now()
	events := overrideChanges(b.byKey, b.listed, list, now)
	b.reset(list, now)
	if len(events) == 0 {
		return
	}
	wanted := make(map[string]bool, len(events))
	for _, ev := range events {
		wanted[ev.Key] = true
	}
	names := backendNames(e.Snapshot(), wanted)
	ours := events[:0]
	for _, ev := range events {
		if n, ok := names[ev.Key]; ok {
			ev.Record, ev.Backend = n.record, n.backend
			ours = append(ours, ev)
		}
	}
	e.shared.hooks.overrides(ours)
}

// overrideChanges returns the events that take the overrides from before, as they were at
// then, to after (sorted by key), at now: an override new or replaced is set, one gone is
// expired when its expiry passed and cleared otherwise, and a drain pending at then that is
// not at now started. The events are sorted by key, and name no record nor backend.
func overrideChanges(before map[string]overlay.Override, then time.Time, after []overlay.Override, now time.Time) []notify.Event {
	var events []notify.Event
	event := func(o overlay.Override, change string) {
		ev := notify.Event{Type: notify.TypeOverride, Time: now, Key: o.Key, Change: change, Action: string(o.Action),
			Expires: o.Expires, Starts: o.Starts, Set: o.Set}
		if change == notify.ChangeSet || change == notify.ChangeStarted {
			ev.Reason, ev.By = o.Reason, o.By // who removed it, the store does not keep
		}
		events = append(events, ev)
	}
	seen := make(map[string]bool, len(after))
	for _, o := range after {
		seen[o.Key] = true
		prev, had := before[o.Key]
		switch {
		case !had || !sameOverride(prev, o):
			event(o, notify.ChangeSet)
		case prev.Pending(then) && !o.Pending(now):
			event(o, notify.ChangeStarted)
		}
	}
	for key, o := range before {
		switch {
		case seen[key]:
		case !o.Expires.IsZero() && !now.Before(o.Expires):
			event(o, notify.ChangeExpired)
		default:
			event(o, notify.ChangeCleared)
		}
	}
	slices.SortFunc(events, func(a, b notify.Event) int { return strings.Compare(a.Key, b.Key) })
	return events
}

// sameOverride reports whether a and b are the same override, set at the same time.
func sameOverride(a, b overlay.Override) bool {
	return a.Key == b.Key && a.Action == b.Action && a.Expires.Equal(b.Expires) && a.Starts.Equal(b.Starts) &&
		a.Reason == b.Reason && a.By == b.By && a.Set.Equal(b.Set)
}

// backendName is a backend's record and address.
type backendName struct{ record, backend string }

// backendNames returns the record and address of the backends of snap whose keys are wanted,
// by key.
func backendNames(snap *catalog.Snapshot, wanted map[string]bool) map[string]backendName {
	names := make(map[string]backendName, len(wanted))
	var buf [128]byte
	for _, r := range snap.Records() {
		for _, b := range r.Backends {
			if key := b.AppendKey(buf[:0]); wanted[string(key)] {
				names[string(key)] = backendName{record: r.Name(), backend: b.Config.Address}
			}
		}
	}
	return names
}
