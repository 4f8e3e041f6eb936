package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// DiscoveryType is where a record's discovery block reads its backends from.
type DiscoveryType string

// The kinds of discovery, named as in CoreDNS-GSLB.
const (
	// DiscoveryHTTP reads a JSON list of addresses, or of {"address", "port"} objects, from a URL.
	DiscoveryHTTP DiscoveryType = "http"
	// DiscoveryConsul reads a service of the Consul catalog, optionally filtered by a tag.
	DiscoveryConsul DiscoveryType = "consul"
	// DiscoverySVCB reads the SVCB records of a name from a DNS server.
	DiscoverySVCB DiscoveryType = "dns_svcb"
	// DiscoveryHTTPS reads the HTTPS records of a name from a DNS server.
	DiscoveryHTTPS DiscoveryType = "dns_https"
)

var discoveryTypes = []string{string(DiscoveryHTTP), string(DiscoveryConsul), string(DiscoverySVCB), string(DiscoveryHTTPS)}

var discoveryKeys = []string{"type", "endpoint", "service", "tag", "interval", "healthchecks", "rise", "fall"}

// DefaultDiscoveryTimeout bounds one fetch of a discovery source; a shorter interval bounds it
// instead.
const DefaultDiscoveryTimeout = 5 * time.Second

// Discovery is a record's discovery block: a source that the record's backends are read from,
// in addition to the backends the file lists.
type Discovery struct {
	Pos  Position
	Type DiscoveryType
	// Endpoint is a URL (http, consul) or a DNS server's host:port (dns_svcb, dns_https; the
	// port defaults to 53).
	Endpoint string
	// Service is the Consul service, or the name whose SVCB/HTTPS records are read.
	Service string
	// Tag filters the Consul service's instances; empty means all.
	Tag string
	// Interval is the time between fetches; it defaults to the record's scrape_interval.
	Interval time.Duration
	// Template is what every discovered backend has but its address and port: the default
	// priority and weight, enabled, and the block's health checks, rise and fall.
	Template Backend
}

// Timeout is how long one fetch may take.
func (d *Discovery) Timeout() time.Duration { return min(DefaultDiscoveryTimeout, d.Interval) }

// Backend returns the discovered backend at ip and port (0 when the source gives none). It
// shares the template's checks.
func (d *Discovery) Backend(ip netip.Addr, port uint16) Backend {
	b := d.Template
	b.IP, b.Address, b.Port = ip, ip.String(), port
	return b
}

// portChecks are the check types that probe the backend's port unless a port parameter is set,
// and fail to compile for a backend without one.
var portChecks = []string{"tcp", "grpc"}

// PortCheck returns the type of a check of the block that needs the backend's port (it has no
// port parameter), or "" when none does: such a block cannot take a backend without a port.
func (d *Discovery) PortCheck() string {
	for _, hc := range d.Template.Checks().HealthChecks {
		if _, ok := hc.Params.Get("port"); !ok && slices.Contains(portChecks, hc.Type) {
			return hc.Type
		}
	}
	return ""
}

// discovery parses a record's discovery block; interval is the record's scrape_interval, the
// default of the block's.
func (p *parser) discovery(n *yaml.Node, path string, interval time.Duration, profiles profileSet) *Discovery {
	n = YAMLResolve(n)
	d := &Discovery{Pos: p.Pos(n), Interval: interval,
		Template: Backend{Pos: p.Pos(n), Priority: DefaultPriority, Weight: DefaultWeight, Enable: true}}
	before := p.Len()
	nodes := map[string]*yaml.Node{}
	var cs checkSettings
	var checks Checks
	for _, e := range p.entries(n, path) {
		if YAMLIsNull(e.v) {
			continue
		}
		kpath := child(path, e.key)
		nodes[e.key] = YAMLResolve(e.v)
		switch e.key {
		case "type":
			if s, ok := p.str(e.v, kpath); ok {
				if t := strings.ToLower(s); slices.Contains(discoveryTypes, t) {
					d.Type = DiscoveryType(t)
				} else {
					p.Errorf(e.v, kpath, "%v", unknownChoice("discovery type", s, discoveryTypes))
				}
			}
		case "endpoint":
			d.Endpoint, _ = p.str(e.v, kpath)
		case "service":
			d.Service, _ = p.str(e.v, kpath)
		case "tag":
			d.Tag, _ = p.str(e.v, kpath)
		case "interval":
			if v, ok := p.duration(e.v, kpath); ok {
				d.Interval = v
			}
		default:
			if !p.checkKey(&checks, e, kpath, profiles, &cs) {
				p.unknownKey(e, path, discoveryKeys)
			}
		}
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	cs.thresholds(&checks, profiles)
	d.Template.SetChecks(checks)
	p.discoveryRules(d, n, path, nodes)
	if p.Len() != before {
		return nil
	}
	return d
}

// discoveryRules checks which fields each type needs and allows, and the endpoint's form.
func (p *parser) discoveryRules(d *Discovery, n *yaml.Node, path string, nodes map[string]*yaml.Node) {
	if nodes["type"] == nil {
		p.Errorf(n, child(path, "type"), "type is required (%s)", strings.Join(discoveryTypes, ", "))
		return
	}
	if d.Type == "" {
		return
	}
	if nodes["endpoint"] == nil {
		p.Errorf(n, child(path, "endpoint"), "endpoint is required")
	}
	needsService := d.Type != DiscoveryHTTP
	switch {
	case needsService && nodes["service"] == nil:
		p.Errorf(n, child(path, "service"), "service is required with type %s", d.Type)
	case !needsService && nodes["service"] != nil:
		p.Errorf(nodes["service"], child(path, "service"), "service is not used with type %s", d.Type)
	}
	if t := nodes["tag"]; t != nil && d.Type != DiscoveryConsul {
		p.Errorf(t, child(path, "tag"), "tag is only used with type consul, not %s", d.Type)
	}
	if e := nodes["endpoint"]; e != nil && d.Endpoint != "" {
		if err := d.checkEndpoint(); err != nil {
			p.Errorf(e, child(path, "endpoint"), "%v", err)
		}
	}
	if s := nodes["service"]; s != nil && d.Service != "" && (d.Type == DiscoverySVCB || d.Type == DiscoveryHTTPS) {
		name := CanonicalName(d.Service)
		if err := checkName(name, false); err != nil {
			p.Errorf(s, child(path, "service"), "invalid name %q: %v", d.Service, err)
		}
		d.Service = name
	}
}

// checkEndpoint checks the endpoint's form and, for the DNS types, adds the default port.
func (d *Discovery) checkEndpoint() error {
	if d.Type == DiscoverySVCB || d.Type == DiscoveryHTTPS {
		host, port, err := net.SplitHostPort(d.Endpoint)
		if err != nil {
			host, port = strings.Trim(d.Endpoint, "[]"), "53"
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" {
			return fmt.Errorf("must be a DNS server as host:port (the port defaults to 53), not %q", d.Endpoint)
		}
		d.Endpoint = net.JoinHostPort(host, port)
		return nil
	}
	u, err := url.Parse(d.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("must be an http:// or https:// URL, not %q", d.Endpoint)
	}
	return nil
}
