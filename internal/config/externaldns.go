package config

import (
	"fmt"
	"net/netip"
	"time"
)

// The defaults of the ExternalDNS delegation.
const (
	DefaultExternalDNSTTL            = 30
	DefaultExternalDNSStaleThreshold = 5 * time.Minute
	DefaultExternalDNSNamespace      = "default"
)

// ExternalDNSOptions are the options of the delegation kept through ExternalDNS
// (delegation_externaldns, delegation_externaldns_glue, delegation_externaldns_ttl,
// delegation_externaldns_stale_threshold): each cluster keeps, in a DNSEndpoint object
// (externaldns.k8s.io) of its own cluster, the parent zone's NS records of the block's zones
// for every live cluster and their glue, which ExternalDNS writes into the operator's DNS
// (docs/kubernetes.md). Off unless Parent is set; it needs the site option.
type ExternalDNSOptions struct {
	// Parent is the parent zone of the block's zones, canonical.
	Parent string
	// Namespace is where the DNSEndpoint objects are kept.
	Namespace string
	// Glue are this cluster's name server addresses: where the other clusters' and the
	// parent's resolvers reach this cluster's Meridian.
	Glue []netip.Addr
	// TTL is the TTL of the NS and glue records.
	TTL uint32
	// StaleThreshold is how long another cluster must have been silent before it leaves the
	// delegation.
	StaleThreshold time.Duration
}

// Enabled reports whether the delegation is kept through ExternalDNS.
func (e ExternalDNSOptions) Enabled() bool { return e.Parent != "" }

// WithDefaults returns e with the unset fields at their defaults.
func (e ExternalDNSOptions) WithDefaults() ExternalDNSOptions {
	if e.Namespace == "" {
		e.Namespace = DefaultExternalDNSNamespace
	}
	if e.TTL == 0 {
		e.TTL = DefaultExternalDNSTTL
	}
	if e.StaleThreshold <= 0 {
		e.StaleThreshold = DefaultExternalDNSStaleThreshold
	}
	return e
}

// Check reports what is inconsistent among the options and the sites options s.
func (e ExternalDNSOptions) Check(s SitesOptions) error {
	switch {
	case !e.Enabled() && (len(e.Glue) > 0 || e.TTL != 0 || e.StaleThreshold != 0 || e.Namespace != ""):
		return fmt.Errorf("delegation_externaldns_glue, _ttl and _stale_threshold need delegation_externaldns: the parent zone")
	case !e.Enabled():
		return nil
	case !s.Enabled():
		return fmt.Errorf("delegation_externaldns needs the site option: a cluster's name server is named by its site")
	case len(e.Glue) == 0:
		return fmt.Errorf("delegation_externaldns needs delegation_externaldns_glue: this cluster's name server addresses")
	case s.SplitBrainThreshold > 0 && e.WithDefaults().StaleThreshold < s.WithDefaults().SplitBrainThreshold:
		return fmt.Errorf("delegation_externaldns_stale_threshold %v is shorter than split_brain_threshold %v", e.WithDefaults().StaleThreshold, s.WithDefaults().SplitBrainThreshold)
	}
	return nil
}
