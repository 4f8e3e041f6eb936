package admin

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/meridian-gslb/meridian/internal/config"
)

// Selector picks backends. Every criterion given must match; an empty Selector matches every
// backend, which the actions refuse.
type Selector struct {
	// Keys are backend keys ("record|address|port"); each must exist.
	Keys []string `json:"keys,omitempty"`
	// Zone and Record are names, in any case, with or without the trailing dot.
	Zone   string `json:"zone,omitempty"`
	Record string `json:"record,omitempty"`
	// Location is compared exactly with the backends' location.
	Location string `json:"location,omitempty"`
	// AddressPrefix is a CIDR prefix (10.1.0.0/16) that the address must be in, or, as in
	// CoreDNS-GSLB, the beginning of the address as written (10.1.).
	AddressPrefix string `json:"address_prefix,omitempty"`
	// Tags match a backend that has at least one of them, as in CoreDNS-GSLB.
	Tags []string `json:"tags,omitempty"`
}

// empty reports whether s has no criterion.
func (s Selector) empty() bool {
	return len(s.Keys) == 0 && s.Zone == "" && s.Record == "" && s.Location == "" && s.AddressPrefix == "" && len(s.Tags) == 0
}

// String lists the criteria of s, for messages and logs.
func (s Selector) String() string {
	var parts []string
	add := func(name, v string) {
		if v != "" {
			parts = append(parts, name+"="+v)
		}
	}
	add("keys", strings.Join(s.Keys, ","))
	add("zone", s.Zone)
	add("record", s.Record)
	add("location", s.Location)
	add("address_prefix", s.AddressPrefix)
	add("tags", strings.Join(s.Tags, ","))
	return strings.Join(parts, " ")
}

// matcher is a Selector prepared for matching.
type matcher struct {
	sel    Selector
	keys   map[string]bool
	zone   string
	record string
	prefix netip.Prefix // valid when AddressPrefix is CIDR
}

// compile checks s and prepares it for matching.
func (s Selector) compile() (matcher, error) {
	m := matcher{sel: s}
	if len(s.Keys) > 0 {
		m.keys = make(map[string]bool, len(s.Keys))
		for _, k := range s.Keys {
			m.keys[k] = true
		}
	}
	if s.Zone != "" {
		m.zone = config.CanonicalName(s.Zone)
	}
	if s.Record != "" {
		m.record = config.CanonicalName(s.Record)
	}
	if strings.Contains(s.AddressPrefix, "/") {
		p, err := netip.ParsePrefix(s.AddressPrefix)
		if err != nil {
			return m, fmt.Errorf("address_prefix %q is not a CIDR prefix: %w", s.AddressPrefix, err)
		}
		m.prefix = p.Masked()
	}
	if slices.Contains(s.Tags, "") {
		return m, fmt.Errorf("tags: empty tag")
	}
	return m, nil
}

// match reports whether b is selected.
func (m matcher) match(b BackendStatus) bool {
	switch {
	case m.keys != nil && !m.keys[b.Key],
		m.zone != "" && config.CanonicalName(b.Zone) != m.zone,
		m.record != "" && config.CanonicalName(b.Record) != m.record,
		m.sel.Location != "" && b.Location != m.sel.Location,
		len(m.sel.Tags) > 0 && !slices.ContainsFunc(m.sel.Tags, func(t string) bool { return slices.Contains(b.Tags, t) }):
		return false
	}
	switch {
	case m.prefix.IsValid():
		ip, err := netip.ParseAddr(b.Address)
		return err == nil && m.prefix.Contains(ip.Unmap())
	case m.sel.AddressPrefix != "":
		return strings.HasPrefix(b.Address, m.sel.AddressPrefix)
	}
	return true
}

// BackendStatus is a Backend with the zone and the record it belongs to.
type BackendStatus struct {
	Zone   string `json:"zone"`
	Record string `json:"record"`
	Backend
}

// flatten lists the backends of zones, in order.
func flatten(zones []Zone) []BackendStatus {
	var out []BackendStatus
	for _, z := range zones {
		for _, r := range z.Records {
			for _, b := range r.Backends {
				out = append(out, BackendStatus{Zone: z.Name, Record: r.Name, Backend: b})
			}
		}
	}
	return out
}
