package gslb

import (
	"net/netip"
	"time"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/config"
)

// minHeartbeatInterval is the floor of heartbeat_interval and the durations that follow it.
const minHeartbeatInterval = 100 * time.Millisecond

// heartbeatOptions is the table of the heartbeat options (region, heartbeat_zone,
// heartbeat_tsig, heartbeat_interval, local_healthy_duration, global_healthy_duration,
// self_heal_interval, delegation, delegation_ns, delegation_stale_threshold), which set o.
func heartbeatOptions(o *config.HeartbeatOptions) optionTable {
	return optionTable{
		"region":                  setChecked(&o.Region, config.CheckRegionName),
		"heartbeat_zone":          func(c *caddy.Controller) error { return heartbeatZone(c, o) },
		"heartbeat_tsig":          setTSIGKey(&o.TSIG),
		"heartbeat_interval":      setDuration(&o.Interval, minHeartbeatInterval),
		"local_healthy_duration":  setDuration(&o.LocalHealthy, minHeartbeatInterval),
		"global_healthy_duration": setDuration(&o.GlobalHealthy, minHeartbeatInterval),
		"self_heal_interval":      setDuration(&o.SelfHeal, minHeartbeatInterval),
		"delegation":              func(c *caddy.Controller) error { return delegation(c, o) },
		"delegation_ns":           func(c *caddy.Controller) error { return delegationNS(c, o) },
		// The delegation is made when one of its options is written, not before.
		"delegation_stale_threshold": func(c *caddy.Controller) error {
			return setDuration(&delegationOf(o).StaleThreshold, minHeartbeatInterval)(c)
		},
	}
}

// heartbeatZone reads "heartbeat_zone local|global ZONE SERVER[:PORT]...".
func heartbeatZone(c *caddy.Controller, o *config.HeartbeatOptions) error {
	opt := c.Val()
	args := c.RemainingArgs()
	if len(args) < 3 {
		return c.Err("heartbeat_zone: want 'heartbeat_zone local|global ZONE SERVER[:PORT]...'")
	}
	z, err := zoneAndServers(c, opt, args[1], args[2:])
	if err != nil {
		return err
	}
	switch args[0] {
	case "local":
		o.Local = z
	case "global":
		o.Global = z
	default:
		return c.Errf("heartbeat_zone: %q is neither local nor global", args[0])
	}
	return nil
}

// zoneAndServers checks the ZONE and SERVER[:PORT] arguments of the option opt at c (read
// before its arguments: c.Val() is the last argument by now).
func zoneAndServers(c *caddy.Controller, opt, zone string, servers []string) (*config.HeartbeatZone, error) {
	if err := config.CheckHostName(zone); err != nil {
		return nil, c.Errf("%s: %q is not a zone name: %v", opt, zone, err)
	}
	z := &config.HeartbeatZone{Zone: config.CanonicalName(zone)}
	for _, s := range servers {
		hp, err := withDefaultPort(s, dnsPort)
		if err != nil {
			return nil, c.Errf("%s: %q: %v", opt, s, err)
		}
		z.Servers = append(z.Servers, hp)
	}
	return z, nil
}

// delegation reads "delegation PARENT_ZONE SERVER[:PORT]...".
func delegation(c *caddy.Controller, o *config.HeartbeatOptions) error {
	opt := c.Val()
	args := c.RemainingArgs()
	if len(args) < 2 {
		return c.Err("delegation: want 'delegation PARENT_ZONE SERVER[:PORT]...'")
	}
	z, err := zoneAndServers(c, opt, args[0], args[1:])
	if err != nil {
		return err
	}
	d := delegationOf(o)
	d.Parent, d.Servers = z.Zone, z.Servers
	return nil
}

// delegationNS reads "delegation_ns NAME ADDRESS...": this site's name server and its glue.
func delegationNS(c *caddy.Controller, o *config.HeartbeatOptions) error {
	args := c.RemainingArgs()
	if len(args) < 2 {
		return c.Err("delegation_ns: want 'delegation_ns NAME ADDRESS...'")
	}
	if err := config.CheckHostName(args[0]); err != nil {
		return c.Errf("delegation_ns: %q is not a host name: %v", args[0], err)
	}
	d := delegationOf(o)
	d.NS, d.Glue = config.CanonicalName(args[0]), nil
	for _, a := range args[1:] {
		ip, err := netip.ParseAddr(a)
		if err != nil || ip.Zone() != "" {
			return c.Errf("delegation_ns: %q is not an IP address", a)
		}
		d.Glue = append(d.Glue, ip.Unmap())
	}
	return nil
}

// delegationOf returns o's delegation, creating it on first use.
func delegationOf(o *config.HeartbeatOptions) *config.Delegation {
	if o.Delegation == nil {
		o.Delegation = &config.Delegation{}
	}
	return o.Delegation
}
