package gslb

import (
	"slices"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/config"
)

// safetyOptions is the table of the options of safe changes (drill, prometheus), which set o.
func safetyOptions(o *config.SafetyOptions) optionTable {
	return optionTable{
		"drill": func(c *caddy.Controller) error { return drillOption(c, o) },
		"prometheus": setParsed(&o.Prometheus, func(v string) (string, error) {
			return v, config.CheckWebhookURL(v) // an http(s) URL with a host, as a webhook's
		}),
	}
}

// drillOption reads "drill NAME EVERY [down SEL] [drained SEL] [primaries] [live DURATION]",
// which repeats, once per drill.
func drillOption(c *caddy.Controller, o *config.SafetyOptions) error {
	d, err := config.ParseDrill(c.RemainingArgs())
	if err != nil {
		return c.Errf("drill: %v", err)
	}
	if slices.ContainsFunc(o.Drills, func(x config.Drill) bool { return x.Name == d.Name }) {
		return c.Errf("drill: %s is given twice", d.Name)
	}
	o.Drills = append(o.Drills, d)
	return nil
}
