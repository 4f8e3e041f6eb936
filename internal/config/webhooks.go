package config

import (
	"fmt"
	"net/url"
	"slices"
	"time"
)

// DefaultWebhookTimeout bounds each attempt of a webhook delivery unless webhook_timeout says
// otherwise.
const DefaultWebhookTimeout = 5 * time.Second

// WebhookOptions are the webhooks of a block (webhook, webhook_secret, webhook_timeout,
// webhook_events): a JSON event POSTed to each URL on every change of a backend's health and
// of an override (docs/notifications.md). Off unless a URL is set.
type WebhookOptions struct {
	// URLs receive every event, in Corefile order.
	URLs []string
	// Secret keys the HMAC-SHA256 signature of each body; empty: no signature is sent.
	Secret string
	// Timeout bounds each attempt.
	Timeout time.Duration
	// Transitions, Overrides, Drills, Shifts and Canaries say which events are sent: health
	// transitions, override changes, failed drills, the steps and rollbacks of shifts, the
	// mismatches the canaries find.
	Transitions, Overrides, Drills, Shifts, Canaries bool
}

// DefaultWebhookOptions returns the webhook options of a block that sets none: no URL, the
// default timeout, every kind of event.
func DefaultWebhookOptions() WebhookOptions {
	return WebhookOptions{Timeout: DefaultWebhookTimeout, Transitions: true, Overrides: true, Drills: true, Shifts: true, Canaries: true}
}

// Enabled reports whether the block sends webhooks: it names a URL.
func (o WebhookOptions) Enabled() bool { return len(o.URLs) > 0 }

// Equal reports whether o and p are the same options.
func (o WebhookOptions) Equal(p WebhookOptions) bool {
	return slices.Equal(o.URLs, p.URLs) && o.Secret == p.Secret && o.Timeout == p.Timeout &&
		o.Transitions == p.Transitions && o.Overrides == p.Overrides && o.Drills == p.Drills && o.Shifts == p.Shifts && o.Canaries == p.Canaries
}

// CheckWebhookURL returns an error unless u is an absolute http or https URL with a host.
func CheckWebhookURL(u string) error {
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", u, err)
	}
	if p.Scheme != "http" && p.Scheme != "https" || p.Host == "" {
		return fmt.Errorf("%q is not an http:// or https:// URL with a host", u)
	}
	return nil
}
