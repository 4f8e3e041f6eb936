package gslb

import (
	"time"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/config"
)

// webhookOptions is the table of the webhook options (webhook, webhook_secret,
// webhook_timeout, webhook_events), which set o.
func webhookOptions(o *config.WebhookOptions) optionTable {
	return optionTable{
		"webhook":         func(c *caddy.Controller) error { return webhookURL(c, o) },
		"webhook_secret":  setString(&o.Secret),
		"webhook_timeout": setDuration(&o.Timeout, 10*time.Millisecond),
		"webhook_events":  func(c *caddy.Controller) error { return webhookEvents(c, o) },
	}
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

// webhookEvents reads "webhook_events transitions|overrides|drills|shifts|canaries...": the
// events sent, in place of all.
func webhookEvents(c *caddy.Controller, o *config.WebhookOptions) error {
	args := c.RemainingArgs()
	if len(args) == 0 {
		return c.Err("webhook_events: want one or more of transitions, overrides, drills, shifts, canaries")
	}
	o.Transitions, o.Overrides, o.Drills, o.Shifts, o.Canaries = false, false, false, false, false
	for _, a := range args {
		switch a {
		case "transitions":
			o.Transitions = true
		case "overrides":
			o.Overrides = true
		case "drills":
			o.Drills = true
		case "shifts":
			o.Shifts = true
		case "canaries":
			o.Canaries = true
		default:
			return c.Errf("webhook_events: unknown event %q (valid: transitions, overrides, drills, shifts, canaries)", a)
		}
	}
	return nil
}
