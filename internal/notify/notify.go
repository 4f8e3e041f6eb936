// Package notify delivers Meridian's webhooks: a JSON event for every change of a backend's
// health (a transition) and of an operator's override, POSTed to each configured URL with an
// HMAC-SHA256 signature of its body. Queuing never blocks the caller: each URL has a bounded
// queue, and an event that finds it full is dropped and counted. One goroutine per URL
// delivers its events in order, retrying failures with exponential backoff and jitter.
package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// The headers of a delivery.
const (
	// SignatureHeader carries "sha256=" and the hex HMAC-SHA256 of the body with the secret
	// (absent when there is no secret), as GitHub's X-Hub-Signature-256 does.
	SignatureHeader = "X-Meridian-Signature"
	// EventHeader carries the event's type: transition or override.
	EventHeader = "X-Meridian-Event"
	// DeliveryHeader carries the event's id, the same on every attempt, for receivers to
	// drop the duplicates that a lost response causes.
	DeliveryHeader = "X-Meridian-Delivery"
)

// The types of event.
const (
	// TypeTransition is a change of a backend's health status.
	TypeTransition = "transition"
	// TypeOverride is a change of a backend's override.
	TypeOverride = "override"
	// TypeDrill is a practice drill that failed.
	TypeDrill = "drill"
	// TypeShift is a step, a rollback or the completion of a staged shift.
	TypeShift = "shift"
	// TypeCanary is a mismatch a canary found: a resolver or a parent server answers other
	// than this instance.
	TypeCanary = "canary"
)

// The changes of an override event (Event.Change).
const (
	// ChangeSet: an operator set the override (or replaced the backend's previous one).
	ChangeSet = "set"
	// ChangeCleared: an operator removed it.
	ChangeCleared = "cleared"
	// ChangeExpired: its expiry passed.
	ChangeExpired = "expired"
	// ChangeStarted: a scheduled drain started.
	ChangeStarted = "started"
	// ChangeHeld: a scheduled drain is held at its start, because it would leave records
	// below their drain guard (Reason says which); it starts when the guard allows.
	ChangeHeld = "held"
)

// Event is the JSON body of one delivery. Type says which of the optional fields are set:
// From, To and Reason for a transition; Change, Action, Reason, By, Expires, Starts and Set
// for an override; Drill, Reason (the summary) and Findings for a drill, which names no
// backend; Shift, Record, Change, Share and Reason for a shift; Canary, Record, Change and
// Reason for a canary. The notifier sets ID, and Instance and Site from its Options.
type Event struct {
	Type     string    `json:"type"`
	ID       string    `json:"id"`
	Time     time.Time `json:"time"`
	Instance string    `json:"instance,omitempty"`
	Site     string    `json:"site,omitempty"`
	// Record, Backend and Key name the backend: its record, its address, its key
	// ("record|address|port", as the admin API lists it).
	Record  string `json:"record,omitempty"`
	Backend string `json:"backend,omitempty"`
	Key     string `json:"key,omitempty"`
	// From and To are a transition's statuses (up, down, unknown, stale).
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Change is what happened to an override (set, cleared, expired, started, held); Action is
	// the override's action (enable, disable, drain, force-up): for cleared and expired, the
	// one it had.
	Change string `json:"change,omitempty"`
	Action string `json:"action,omitempty"`
	// Reason is why a transition happened, or the operator's note of an override.
	Reason string `json:"reason,omitempty"`
	// By is who set the override, when the admin API knows.
	By string `json:"by,omitempty"`
	// Forced is set on an override forced past the drain guard, Breaches the records it left
	// below their guard when it was set.
	Forced   bool     `json:"forced,omitempty"`
	Breaches []string `json:"breaches,omitempty"`
	// Expires and Starts are the override's expiry and scheduled start, Set when it was set.
	Expires time.Time `json:"expires,omitzero"`
	Starts  time.Time `json:"starts,omitzero"`
	Set     time.Time `json:"set,omitzero"`
	// Drill is the drill's name; Findings say, one a line, what failed in each record.
	Drill    string   `json:"drill,omitempty"`
	Findings []string `json:"findings,omitempty"`
	// Shift is a shift's id, Share the share of its weight on its to backends from now on;
	// Change says what happened (step, rolled-back, completed), Reason why, Record its record.
	Shift string   `json:"shift,omitempty"`
	Share *float64 `json:"share,omitempty"`
	// Canary is the resolver or parent server (host:port) a canary asked; Record the name
	// (or zone), Change the kind of mismatch, Reason what differs.
	Canary string `json:"canary,omitempty"`
}

// Defaults of Options.
const (
	DefaultQueueSize  = 1024
	DefaultTimeout    = 5 * time.Second
	DefaultAttempts   = 5
	DefaultBackoff    = time.Second
	DefaultMaxBackoff = 30 * time.Second
)

// Logger is where the notifier reports failed deliveries; CoreDNS's plugin logger satisfies it.
type Logger interface {
	Warningf(format string, args ...any)
}

// Options configure a Notifier. Zero values take the defaults.
type Options struct {
	// URLs receive every event, each through its own queue and goroutine.
	URLs []string
	// Secret keys the signature header; empty sends none.
	Secret string
	// Instance and Site name this instance in every event.
	Instance, Site string
	// QueueSize bounds the events waiting for each URL (DefaultQueueSize).
	QueueSize int
	// Timeout bounds each attempt (DefaultTimeout).
	Timeout time.Duration
	// Attempts is how many times an event is tried (DefaultAttempts). Backoff is the wait
	// after the first failure, doubled after each one up to MaxBackoff, each wait drawn at
	// random between its half and itself.
	Attempts   int
	Backoff    time.Duration
	MaxBackoff time.Duration
	// Log gets a line for each event that was not delivered; nil: none.
	Log Logger
}

// Notifier queues events and delivers them to its URLs. Its methods are safe for concurrent use.
type Notifier struct {
	opts    Options
	client  *http.Client // follows no redirect
	targets []*target
	// mu guards stopped: Notify holds it for reading while it queues, Stop for writing.
	mu      sync.RWMutex
	stopped bool
	// ctx ends the deliveries in flight when Stop's deadline passes.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// target is one URL and its queue.
type target struct {
	url   string
	queue chan Event
}

// New returns a notifier delivering to opts.URLs, its goroutines running until Stop.
func New(opts Options) *Notifier {
	opts.QueueSize = defaulted(opts.QueueSize, DefaultQueueSize)
	opts.Timeout = defaulted(opts.Timeout, DefaultTimeout)
	opts.Attempts = defaulted(opts.Attempts, DefaultAttempts)
	opts.Backoff = defaulted(opts.Backoff, DefaultBackoff)
	opts.MaxBackoff = max(defaulted(opts.MaxBackoff, DefaultMaxBackoff), opts.Backoff)
	n := &Notifier{opts: opts, client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	for _, u := range opts.URLs {
		t := &target{url: u, queue: make(chan Event, opts.QueueSize)}
		n.targets = append(n.targets, t)
		n.wg.Add(1)
		go n.run(t)
	}
	return n
}

func defaulted[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Notify queues ev for every URL, with a new id and the notifier's instance and site, and
// returns at once: a URL whose queue is full (or a notifier that stopped) drops it, and counts
// it. It may be called with the caller's locks held.
func (n *Notifier) Notify(ev Event) {
	ev.ID = newID()
	ev.Instance, ev.Site = n.opts.Instance, n.opts.Site
	n.mu.RLock()
	defer n.mu.RUnlock()
	for _, t := range n.targets {
		if n.stopped {
			deliveries.WithLabelValues(resultDropped).Inc()
			continue
		}
		select {
		case t.queue <- ev:
			queueLength.Inc()
		default:
			deliveries.WithLabelValues(resultDropped).Inc()
		}
	}
}

// Stop stops taking events and delivers those queued until ctx is done; then it abandons the
// attempt in flight and drops the events left (counting them). It returns when every
// goroutine of the notifier has ended. Calls after the first return at once.
func (n *Notifier) Stop(ctx context.Context) {
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		return
	}
	n.stopped = true
	n.mu.Unlock()
	for _, t := range n.targets {
		close(t.queue) // no Notify sends any more: stopped is set
	}
	done := make(chan struct{})
	go func() {
		n.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		n.cancel()
		<-done
	}
	n.cancel()
}

// run delivers t's events in order until its queue is closed and empty.
func (n *Notifier) run(t *target) {
	defer n.wg.Done()
	for ev := range t.queue {
		queueLength.Dec()
		if n.ctx.Err() != nil {
			deliveries.WithLabelValues(resultDropped).Inc()
			continue
		}
		if err := n.deliver(t.url, ev); err != nil {
			deliveries.WithLabelValues(resultFailed).Inc()
			if n.opts.Log != nil {
				n.opts.Log.Warningf("webhook %s: %s event %s not delivered: %v", redact(t.url), ev.Type, ev.ID, err)
			}
			continue
		}
		deliveries.WithLabelValues(resultDelivered).Inc()
	}
}

// deliver POSTs ev to the URL to, retrying what may succeed later, and returns the last error.
func (n *Notifier) deliver(to string, ev Event) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode the event: %w", err)
	}
	wait := n.opts.Backoff
	for attempt := 1; ; attempt++ {
		retry, err := n.post(to, ev, body)
		if err == nil {
			return nil
		}
		if !retry || attempt == n.opts.Attempts {
			return fmt.Errorf("attempt %d of %d: %w", attempt, n.opts.Attempts, err)
		}
		timer := time.NewTimer(wait/2 + mrand.N(wait/2+1))
		select {
		case <-timer.C:
		case <-n.ctx.Done():
			timer.Stop()
			return fmt.Errorf("attempt %d of %d, then stopped: %w", attempt, n.opts.Attempts, err)
		}
		wait = min(2*wait, n.opts.MaxBackoff)
	}
}

// post makes one attempt, and reports whether a failure is worth retrying: a network error, a
// timeout, a 5xx, 408 or 429 are; another 4xx (or a redirect, which is not followed) is not.
func (n *Notifier) post(to string, ev Event, body []byte) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(n.ctx, n.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, to, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Meridian-Webhook")
	req.Header.Set(EventHeader, ev.Type)
	req.Header.Set(DeliveryHeader, ev.ID)
	if n.opts.Secret != "" {
		req.Header.Set(SignatureHeader, Sign(n.opts.Secret, body))
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return true, fmt.Errorf("post: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	resp.Body.Close()
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return false, nil
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		return true, fmt.Errorf("status %d", code)
	default:
		return false, fmt.Errorf("status %d (not retried)", code)
	}
}

// Sign returns the value of the signature header of body with secret: "sha256=" and the hex
// HMAC-SHA256 of body.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify reports whether signature, a signature header's value, is body's with secret; it
// compares in constant time.
func Verify(secret string, body []byte, signature string) bool {
	return hmac.Equal([]byte(Sign(secret, body)), []byte(signature))
}

// newID returns a random event id: 26 base32 characters.
func newID() string { return rand.Text() }

// redact returns u without its user information and query, which may hold credentials, for
// the log.
func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(invalid URL)"
	}
	p.User, p.RawQuery, p.Fragment = nil, "", ""
	return p.String()
}
