package gslb

import (
	"net/netip"
	"slices"
	"time"

	"github.com/miekg/dns"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/config"
)

// safetyOptions is the table of the options of safe changes (drill, prometheus, canary_*),
// which set o.
func safetyOptions(o *config.SafetyOptions) optionTable {
	return optionTable{
		"canary_resolver": func(c *caddy.Controller) error { return addAddrs(c, &o.Canary.Resolvers) },
		"canary_parent":   func(c *caddy.Controller) error { return addAddrs(c, &o.Canary.Parents) },
		"canary_name":     func(c *caddy.Controller) error { return canaryNames(c, &o.Canary) },
		"canary_ecs":      func(c *caddy.Controller) error { return canaryECS(c, &o.Canary) },
		"canary_interval": setDuration(&o.Canary.Interval, time.Second),
		"drill":           func(c *caddy.Controller) error { return drillOption(c, o) },
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

// addAddrs reads "OPTION ADDR[:PORT]...", port 53 when none, which adds to the lines before.
func addAddrs(c *caddy.Controller, dst *[]string) error {
	addrs, err := defaultPortAddrs(c, dnsPort, false)
	*dst = append(*dst, addrs...)
	return err
}

// canaryNames reads "canary_name NAME...", which adds to the lines before.
func canaryNames(c *caddy.Controller, o *config.CanaryOptions) error {
	args := c.RemainingArgs()
	if len(args) == 0 {
		return c.Err("canary_name: want at least one NAME")
	}
	for _, a := range args {
		if _, ok := dns.IsDomainName(a); !ok {
			return c.Errf("canary_name: %q is not a domain name", a)
		}
		o.Names = append(o.Names, config.CanonicalName(a))
	}
	return nil
}

// canaryECS reads "canary_ecs PREFIX...", which adds to the lines before.
func canaryECS(c *caddy.Controller, o *config.CanaryOptions) error {
	args := c.RemainingArgs()
	if len(args) == 0 {
		return c.Err("canary_ecs: want at least one PREFIX")
	}
	for _, a := range args {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			return c.Errf("canary_ecs: %q is not a prefix such as 198.51.100.0/24", a)
		}
		o.ECS = append(o.ECS, p.Masked())
	}
	return nil
}
