package gslb

import (
	"time"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/config"
)

// parseWebhookOption parses the webhook option at c (webhook, webhook_secret, webhook_timeout,
// webhook_events) into o. It reports false for an option that is not one of them.
func parseWebhookOption(c *caddy.Controller, o *config.WebhookOptions) (bool, error) {
	var err error
	switch c.Val() {
	case "webhook":
		err = webhookURL(c, o)
	case "webhook_secret":
		o.Secret, err = single(c)
	case "webhook_timeout":
		err = duration(c, &o.Timeout, 10*time.Millisecond)
	case "webhook_events":
		err = webhookEvents(c, o)
	default:
		return false, nil
	}
	return true, err
}

// webhookURL reads "webhook URL", which repeats, once per URL.
func webhookURL(c *caddy.Controller, o *config.WebhookOptions) error {
	u, err := single(c)
	if err != nil {
		return err
	}
	if err := config.CheckWebhookURL(u); err != nil {
		return c.Errf("webhook: %v", err)
	}
	for _, have := range o.URLs {
		if have == u {
			return c.Errf("webhook: %s is given twice", u)
		}
	}
	o.URLs = append(o.URLs, u)
	return nil
}

// webhookEvents reads "webhook_events transitions|overrides...": the events sent, in place of both.
func webhookEvents(c *caddy.Controller, o *config.WebhookOptions) error {
	args := c.RemainingArgs()
	if len(args) == 0 {
		return c.Err("webhook_events: want transitions, overrides or both")
	}
	o.Transitions, o.Overrides = false, false
	for _, a := range args {
		switch a {
		case "transitions":
			o.Transitions = true
		case "overrides":
			o.Overrides = true
		default:
			return c.Errf("webhook_events: unknown event %q (valid: transitions, overrides)", a)
		}
	}
	return nil
}
