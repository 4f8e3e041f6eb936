package gslb

import (
	"errors"
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
		"canary_name":     addParsed(&o.Canary.Names, "NAME", canaryName),
		"canary_ecs":      addParsed(&o.Canary.ECS, "PREFIX", canaryECS),
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

// addParsed is the row of an option "OPTION ARG...", which adds each argument, parsed, to
// the lines before; what names the arguments in the error of an option without any.
func addParsed[T any](dst *[]T, what string, parse func(arg string) (T, error)) optionFunc {
	return func(c *caddy.Controller) error {
		name, args := c.Val(), c.RemainingArgs()
		if len(args) == 0 {
			return c.Errf("%s: want at least one %s", name, what)
		}
		for _, a := range args {
			v, err := parse(a)
			if err != nil {
				return c.Errf("%s: %q %v", name, a, err)
			}
			*dst = append(*dst, v)
		}
		return nil
	}
}

// canaryName parses a name of canary_name.
func canaryName(a string) (string, error) {
	if _, ok := dns.IsDomainName(a); !ok {
		return "", errors.New("is not a domain name")
	}
	return config.CanonicalName(a), nil
}

// canaryECS parses a client subnet of canary_ecs.
func canaryECS(a string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(a)
	if err != nil {
		return p, errors.New("is not a prefix such as 198.51.100.0/24")
	}
	return p.Masked(), nil
}
