package config

import (
	"fmt"
	"net/netip"
	"time"
)

// The defaults of the heartbeat options.
const (
	DefaultHeartbeatInterval        = 10 * time.Second
	DefaultHealthyDuration          = 30 * time.Second
	DefaultSelfHealInterval         = 3 * time.Minute
	DefaultDelegationStaleThreshold = 5 * time.Minute
)

// HeartbeatOptions are the options of heartbeats written into the operator's DNS (region,
// heartbeat_zone, heartbeat_tsig, heartbeat_interval, local_healthy_duration,
// global_healthy_duration, self_heal_interval, delegation*): each site writes its heartbeat
// by RFC 2136 UPDATE into zones every site can read, and reads the others' there (see
// docs/heartbeats.md). They are off unless a heartbeat zone is set; they need the site option.
type HeartbeatOptions struct {
	// Region is this site's region.
	Region string
	// Local is the zone of the heartbeats of this region's sites; Global the zone of every
	// region's. Either may be nil.
	Local, Global *HeartbeatZone
	// TSIG signs the updates (and the delegation's).
	TSIG *TSIGKey
	// Interval is how often the heartbeats are written and read.
	Interval time.Duration
	// LocalHealthy and GlobalHealthy are how old a heartbeat of each zone may be before its
	// site (or region) is unhealthy.
	LocalHealthy, GlobalHealthy time.Duration
	// SelfHeal is how far into the future a site dates its heartbeat when it finds its own
	// stale while it is healthy (its writes failing).
	SelfHeal time.Duration
	// Delegation, when set, keeps the parent zone's NS records and glue of the block's zones in
	// step with the live sites.
	Delegation *Delegation
}

// HeartbeatZone is a zone heartbeats are written to and read from, and its servers.
type HeartbeatZone struct {
	// Zone is canonical (lower case, fully qualified).
	Zone string
	// Servers are host:port, asked in order.
	Servers []string
}

// Delegation is the parent zone whose NS records and glue for the block's zones follow the
// sites (delegation, delegation_ns, delegation_stale_threshold).
type Delegation struct {
	// Parent is the parent zone, canonical; Servers its primary's host:port, asked in order.
	Parent  string
	Servers []string
	// NS is this site's name server, canonical, and Glue its addresses.
	NS   string
	Glue []netip.Addr
	// StaleThreshold is how long a site's heartbeat must have been stale before its name
	// server leaves the delegation.
	StaleThreshold time.Duration
}

// Enabled reports whether heartbeats are on: a heartbeat zone is set.
func (h HeartbeatOptions) Enabled() bool { return h.Local != nil || h.Global != nil }

// WithDefaults returns h with the unset durations at their defaults.
func (h HeartbeatOptions) WithDefaults() HeartbeatOptions {
	if h.Interval <= 0 {
		h.Interval = DefaultHeartbeatInterval
	}
	if h.LocalHealthy <= 0 {
		h.LocalHealthy = DefaultHealthyDuration
	}
	if h.GlobalHealthy <= 0 {
		h.GlobalHealthy = DefaultHealthyDuration
	}
	if h.SelfHeal <= 0 {
		h.SelfHeal = DefaultSelfHealInterval
	}
	if d := h.Delegation; d != nil && d.StaleThreshold <= 0 {
		c := *d
		c.StaleThreshold = DefaultDelegationStaleThreshold
		h.Delegation = &c
	}
	return h
}

// Check reports what is inconsistent among the heartbeat options (defaults applied) and the
// sites options s.
func (h HeartbeatOptions) Check(s SitesOptions) error {
	d := h.WithDefaults()
	switch {
	case !h.Enabled() && (h.Region != "" || h.TSIG != nil || h.Delegation != nil):
		return fmt.Errorf("region, heartbeat_tsig and delegation need a heartbeat_zone")
	case !h.Enabled():
		return nil
	case !s.Enabled():
		return fmt.Errorf("heartbeat_zone needs the site option: name this instance's site")
	case len(s.Peers) > 0 || s.PeersFromNS:
		return fmt.Errorf("heartbeat_zone and peers (or peers_from_ns) are two ways to read the other sites: use one")
	case h.Region == "":
		return fmt.Errorf("heartbeat_zone needs the region option: name this site's region")
	case h.TSIG == nil:
		return fmt.Errorf("heartbeat_zone needs heartbeat_tsig: updates are signed")
	case d.LocalHealthy <= d.Interval || d.GlobalHealthy <= d.Interval:
		return fmt.Errorf("the healthy durations (%v, %v) must be longer than heartbeat_interval %v", d.LocalHealthy, d.GlobalHealthy, d.Interval)
	case h.Delegation != nil && h.Delegation.Parent == "":
		return fmt.Errorf("delegation_ns and delegation_stale_threshold need delegation: the parent zone and its servers")
	case h.Delegation != nil && (h.Delegation.NS == "" || len(h.Delegation.Glue) == 0):
		return fmt.Errorf("delegation needs delegation_ns: this site's name server and its addresses")
	case d.Delegation != nil && d.Delegation.StaleThreshold < d.healthy():
		return fmt.Errorf("delegation_stale_threshold %v is shorter than the healthy duration %v", d.Delegation.StaleThreshold, d.healthy())
	}
	return nil
}

// healthy is the longest healthy duration of the zones h has.
func (h HeartbeatOptions) healthy() time.Duration {
	var d time.Duration
	if h.Local != nil {
		d = h.LocalHealthy
	}
	if h.Global != nil {
		d = max(d, h.GlobalHealthy)
	}
	return d
}
