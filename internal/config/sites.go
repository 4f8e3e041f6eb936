package config

import (
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// The defaults of the sites options.
const (
	DefaultPeerInterval        = 10 * time.Second
	DefaultPeerTimeout         = 2 * time.Second
	DefaultSplitBrainThreshold = 30 * time.Second
	// DefaultPeerPort is the port of a peer written without one.
	DefaultPeerPort = 53
)

// SitesOptions are the multi-site options (site, peers, peers_from_ns, peer_interval,
// peer_timeout, split_brain_threshold, peer_tsig): this instance's site, and the other sites'
// Meridian instances whose published health it reads over DNS (see docs/sites.md). Sites are
// off unless Site is set.
type SitesOptions struct {
	// Site is this instance's site, a lower-case DNS label.
	Site string
	// Peers are the other sites' instances, host:port.
	Peers []string
	// PeersFromNS finds peers from the zones' NS sets and glue as the parent serves them,
	// asking NSServers (host:port; none: the system resolver) every PeerInterval. The peers
	// found are asked on PeerPort.
	PeersFromNS bool
	NSServers   []string
	PeerPort    int
	// PeerInterval is how often every peer is read; PeerTimeout bounds one exchange.
	PeerInterval time.Duration
	PeerTimeout  time.Duration
	// SplitBrainThreshold is how long a peer's heartbeat may go unchanged before its targets
	// are stale.
	SplitBrainThreshold time.Duration
	// TSIG, when set, signs the peer queries and answers; unsigned queries of the published
	// names get REFUSED.
	TSIG *TSIGKey
	// MeasureRemote (measure_remote) makes this site probe the other sites' backends of the
	// records that steer by RTT, for their RTT alone, and publish its RTTs to all their
	// backends (localrtt-<record>); it reads the other sites' in every round, so that a
	// client is steered by the RTTs of the site nearest to it.
	MeasureRemote bool
}

// TSIGKey is a TSIG key (RFC 8945).
type TSIGKey struct {
	// Name is the key's name, canonical (lower case, fully qualified).
	Name string
	// Algorithm is the algorithm's name as miekg/dns spells it, e.g. "hmac-sha256.".
	Algorithm string
	// Secret is the base64 secret.
	Secret string
}

// Enabled reports whether sites are on: a site is named.
func (s SitesOptions) Enabled() bool { return s.Site != "" }

// WithDefaults returns s with the unset durations and port at their defaults.
func (s SitesOptions) WithDefaults() SitesOptions {
	if s.PeerInterval <= 0 {
		s.PeerInterval = DefaultPeerInterval
	}
	if s.PeerTimeout <= 0 {
		s.PeerTimeout = min(DefaultPeerTimeout, s.PeerInterval)
	}
	if s.SplitBrainThreshold <= 0 {
		s.SplitBrainThreshold = max(DefaultSplitBrainThreshold, 2*s.PeerInterval)
	}
	if s.PeerPort == 0 {
		s.PeerPort = DefaultPeerPort
	}
	return s
}

// Check reports what is inconsistent among the options (with their defaults applied).
func (s SitesOptions) Check() error {
	d := s.WithDefaults()
	switch {
	case !s.Enabled() && (len(s.Peers) > 0 || s.PeersFromNS):
		return fmt.Errorf("peers need the site option: name this instance's site")
	case s.MeasureRemote && len(s.Peers) == 0 && !s.PeersFromNS:
		return fmt.Errorf("measure_remote needs peers (or peers_from_ns): the RTTs are read from the other sites' Meridians")
	case d.PeerTimeout > d.PeerInterval:
		return fmt.Errorf("peer_timeout %v is longer than peer_interval %v", d.PeerTimeout, d.PeerInterval)
	case d.SplitBrainThreshold <= d.PeerInterval:
		return fmt.Errorf("split_brain_threshold %v must be longer than peer_interval %v", d.SplitBrainThreshold, d.PeerInterval)
	}
	return nil
}

// CheckSiteName reports why name cannot name a site: a site is one lower-case DNS label of
// letters, digits and hyphens, as it appears in the heartbeat-<site> name.
func CheckSiteName(name string) error { return checkLabel("site", name, maxSiteName) }

// CheckRegionName reports why name cannot name a region (the region option): the same rules
// as a site's.
func CheckRegionName(name string) error { return checkLabel("region", name, maxSiteName) }

// maxSiteName is the longest site or region name.
const maxSiteName = 50

// checkLabel reports why name cannot be the name of a kind (site, region, a Kubernetes
// namespace) that is a DNS label of at most maxLen lower-case letters, digits and hyphens.
func checkLabel(kind, name string, maxLen int) error {
	if name == "" || len(name) > maxLen {
		return fmt.Errorf("a %s name has 1 to %d characters, not %d", kind, maxLen, len(name))
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("%s %q: a %s name has lower-case letters, digits and hyphens only", kind, name, kind)
		}
	}
	if name[0] == '-' || name[len(name)-1] == '-' {
		return fmt.Errorf("%s %q: a %s name neither starts nor ends with a hyphen", kind, name, kind)
	}
	return nil
}

// siteName parses a backend's site.
func (p *parser) siteName(n *yaml.Node, path string) string {
	s, ok := p.str(n, path)
	if !ok {
		return ""
	}
	if err := CheckSiteName(s); err != nil {
		p.Errorf(n, path, "%v", err)
		return ""
	}
	return s
}
