package notify

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/publish"
)

// drainTime is how long a notifier that a new configuration replaced, or that stops with its
// block, keeps delivering what it queued.
const drainTime = 2 * time.Second

// Webhooks is the webhooks publisher of one gslb block (docs/notifications.md): it belongs to
// the block's health manager, whose transitions it is told of, and outlives Corefile reloads
// with it. Configure records the options of each load; Start makes the notifier of the last
// ones, and from then on a load that changes them replaces it, the one replaced delivering
// what it queued (for drainTime) in the background. Made and configured, it starts nothing.
type Webhooks struct {
	instance string // the events' instance: the cluster client's id, or the host name

	mu      sync.Mutex // serialises Configure, Start and Stop
	started bool
	want    webhook // the options of the last Configure
	hook    atomic.Pointer[webhook]
}

// webhook is one configuration, and the notifier made of it (nil until started).
type webhook struct {
	opts config.WebhookOptions
	site string
	log  Logger
	n    *Notifier
}

var _ publish.TransitionPublisher = (*Webhooks)(nil)

// NewWebhooks returns the webhooks of a block without options yet; instance names this
// instance in the events ("" for the host name).
func NewWebhooks(instance string) *Webhooks {
	if instance == "" {
		instance, _ = os.Hostname()
	}
	return &Webhooks{instance: instance}
}

// Name implements publish.Publisher.
func (w *Webhooks) Name() string { return "webhooks" }

// Configure makes o (and site, the block's site) the webhooks' options: once started, a new
// notifier when they changed, none when o names no URL.
func (w *Webhooks) Configure(o config.WebhookOptions, site string, log Logger) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.want = webhook{opts: o, site: site, log: log}
	if w.started {
		w.applyLocked()
	}
}

// Start implements publish.Publisher: the notifier of the configured options starts.
func (w *Webhooks) Start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.started = true
	w.applyLocked()
}

// applyLocked replaces the running notifier by one of the wanted options, unless they are the
// running one's.
func (w *Webhooks) applyLocked() {
	old, o := w.hook.Load(), w.want.opts
	if old != nil && old.opts.Equal(o) && old.site == w.want.site || old == nil && !o.Enabled() {
		return
	}
	var next *webhook
	if o.Enabled() {
		next = &webhook{opts: o, site: w.want.site, n: New(Options{URLs: o.URLs, Secret: o.Secret,
			Timeout: o.Timeout, Instance: w.instance, Site: w.want.site, Log: w.want.log})}
	}
	w.hook.Store(next)
	if old != nil {
		go drain(old.n)
	}
}

// Stop implements publish.Publisher: the notifier stops, delivering what it queued for
// drainTime at most.
func (w *Webhooks) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.started = false
	if old := w.hook.Swap(nil); old != nil {
		drain(old.n)
	}
}

func drain(n *Notifier) {
	ctx, cancel := context.WithTimeout(context.Background(), drainTime)
	defer cancel()
	n.Stop(ctx)
}

// Transition implements publish.TransitionPublisher: it queues the event of tr when the
// webhooks send transitions. It never blocks.
func (w *Webhooks) Transition(tr health.Transition) {
	if h := w.hook.Load(); h != nil && h.opts.Transitions {
		h.n.Notify(Event{Type: TypeTransition, Time: tr.Time, Record: tr.Record, Backend: tr.Backend,
			Key: tr.Key, From: tr.From.String(), To: tr.To.String(), Reason: tr.Reason})
	}
}

// Drill queues the event of a failed drill when the webhooks send drills. It never blocks.
func (w *Webhooks) Drill(ev Event) {
	w.send(ev, TypeDrill, func(o config.WebhookOptions) bool { return o.Drills })
}

// Shift queues the event of a shift's change when the webhooks send shifts. It never blocks.
func (w *Webhooks) Shift(ev Event) {
	w.send(ev, TypeShift, func(o config.WebhookOptions) bool { return o.Shifts })
}

// Canary queues the event of a canary's mismatch when the webhooks send canaries. It never
// blocks.
func (w *Webhooks) Canary(ev Event) {
	w.send(ev, TypeCanary, func(o config.WebhookOptions) bool { return o.Canaries })
}

// send queues ev as an event of type typ when the webhooks' options want it.
func (w *Webhooks) send(ev Event, typ string, wanted func(config.WebhookOptions) bool) {
	if h := w.hook.Load(); h != nil && wanted(h.opts) {
		ev.Type = typ
		h.n.Notify(ev)
	}
}

// Overrides queues events when the webhooks send override changes. It never blocks.
func (w *Webhooks) Overrides(events []Event) {
	if h := w.hook.Load(); h != nil && h.opts.Overrides {
		for _, ev := range events {
			h.n.Notify(ev)
		}
	}
}
