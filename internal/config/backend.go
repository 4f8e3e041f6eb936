package config

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

var backendKeys = []string{"address", "port", "priority", "weight", "capacity", "enable", "tags", "description",
	"country", "subdivision", "city", "continent", "asn", "location", "latitude", "longitude",
	"healthchecks", "timeout", "rise", "fall", "local_interval", "assume_healthy", "passive", "site", "kubernetes"}

var continents = []string{"AF", "AN", "AS", "EU", "NA", "OC", "SA"}

// backend parses one backend of a record whose probes run every interval. It reports false
// when the backend has errors.
func (p *parser) backend(n *yaml.Node, path string, profiles profileSet, interval time.Duration) (Backend, bool) {
	n = YAMLResolve(n)
	b := Backend{Pos: p.Pos(n), Priority: DefaultPriority, Weight: DefaultWeight, Enable: true}
	if n.Kind != yaml.MappingNode {
		p.Errorf(n, path, "a backend must be a mapping with an address, not %s", YAMLKind(n))
		return b, false
	}
	before := p.Len()
	var address, kube, lat, lon *yaml.Node
	var cs checkSettings
	checks := Checks{Capacity: DefaultCapacity, HealthChecks: p.checkBuf[:0]}
	var lb Labels
	var origin Origin
	for _, e := range p.entries(n, path) {
		if YAMLIsNull(e.v) {
			continue
		}
		kpath := child(path, e.key)
		switch e.key {
		case "address":
			address = YAMLResolve(e.v)
			p.address(&b, e.v, kpath)
		case "port":
			if v, ok := p.integer(e.v, kpath, 1, math.MaxUint16); ok {
				b.Port = uint16(v)
			}
		case "priority":
			b.Priority = int32(p.intField(e.v, kpath, 0, math.MaxInt32, int(b.Priority)))
		case "weight":
			b.Weight = int32(p.intField(e.v, kpath, math.MinInt32, math.MaxInt32, int(b.Weight)))
		case "capacity":
			if v, ok := p.number(e.v, kpath, -math.MaxFloat64, math.MaxFloat64); ok && v <= 0 {
				p.Errorf(e.v, kpath, "must be more than 0, not %g", v)
			} else if ok {
				checks.Capacity = v
			}
		case "enable":
			b.Enable = p.boolField(e.v, kpath, b.Enable)
		case "assume_healthy":
			b.AssumeHealthy = p.boolField(e.v, kpath, b.AssumeHealthy)
		case "passive":
			b.Passive = p.boolField(e.v, kpath, b.Passive)
		case "site":
			origin.Site = p.siteName(e.v, kpath)
		case "kubernetes":
			kube = e.v
			origin.Kubernetes = p.kubernetesRef(e.v, kpath)
		case "tags":
			lb.Tags, _ = p.strList(e.v, kpath)
		case "description":
			lb.Description, _ = p.str(e.v, kpath)
		case "city":
			lb.City, _ = p.str(e.v, kpath)
		case "location":
			lb.Location, _ = p.str(e.v, kpath)
		case "subdivision":
			s, _ := p.str(e.v, kpath)
			lb.Subdivision = strings.ToUpper(s)
		case "country":
			lb.Country = p.country(e.v, kpath)
		case "continent":
			lb.Continent = p.continent(e.v, kpath)
		case "asn":
			lb.ASN = p.asn(e.v, kpath)
		case "latitude":
			lat = YAMLResolve(e.v)
			lb.Latitude, _ = p.number(e.v, kpath, -90, 90)
		case "longitude":
			lon = YAMLResolve(e.v)
			lb.Longitude, _ = p.number(e.v, kpath, -180, 180)
		case "timeout":
			if d, ok := p.duration(e.v, kpath); ok && d > interval {
				p.Errorf(e.v, kpath, "timeout %v is longer than the record's scrape_interval %v", d, interval)
			} else if ok {
				checks.Timeout = d
			}
		case "local_interval":
			if d, ok := p.duration(e.v, kpath); ok {
				checks.LocalInterval = d
			}
		default:
			if !p.checkKey(&checks, e, kpath, profiles, &cs) {
				p.unknownKey(e, path, backendKeys)
			}
		}
	}
	switch {
	case address == nil && origin.Site == "" && kube == nil:
		p.Errorf(n, child(path, "address"), "a backend needs an address (or a site, for what that site publishes, or a kubernetes Service)")
	case address != nil && origin.Kubernetes != nil:
		p.Errorf(address, child(path, "address"), "a kubernetes backend stands for its Service's LoadBalancer addresses: it has no address of its own")
	case origin.Site != "" && origin.Kubernetes != nil:
		p.Errorf(n, child(path, "kubernetes"), "a backend is either a site's placeholder or a kubernetes Service, not both")
	}
	switch {
	case lat != nil && lon == nil:
		p.Errorf(lat, child(path, "latitude"), "latitude is set without longitude")
	case lon != nil && lat == nil:
		p.Errorf(lon, child(path, "longitude"), "longitude is set without latitude")
	default:
		lb.HasCoords = lat != nil
	}
	if !lb.empty() {
		b.labels = shareLast(&p.labels, lb, (*Labels).equal) // the backends of a pool share theirs
	}
	b.SetOrigin(origin)
	cs.thresholds(&checks, profiles)
	// The checks were parsed into p.checkBuf: they get a slice of their own only when they
	// are not the last backend's, which most backends of a zone share.
	p.checkBuf = checks.HealthChecks[:0]
	switch {
	case len(checks.HealthChecks) == 0:
		checks.HealthChecks = nil
	case p.checks == nil || !p.checks.equal(&checks):
		checks.HealthChecks = slices.Clone(checks.HealthChecks)
	}
	b.checks = shareLast(&p.checks, checks, (*Checks).equal)
	// A kubernetes backend's addresses are judged by the Service's readiness, and by its
	// healthchecks (with its rise, fall and timeout) when it has some: both must pass.
	if b.IsKubernetes() {
		for _, f := range []struct {
			key string
			set bool
		}{{"passive", b.Passive}, {"assume_healthy", b.AssumeHealthy}} {
			if f.set {
				p.Errorf(n, child(path, f.key), "a kubernetes backend is judged by its Service's readiness: %s does not apply to it", f.key)
			}
		}
	}
	return b, p.Len() == before
}

// checkSettings notes which of a backend's rise and fall its keys set.
type checkSettings struct{ riseSet, fallSet bool }

// checkKey parses a health-check key of a backend (healthchecks, rise, fall) into c; it
// reports false for any other key.
func (p *parser) checkKey(c *Checks, e entry, kpath string, profiles profileSet, cs *checkSettings) bool {
	switch e.key {
	case "healthchecks":
		c.HealthChecks = p.healthChecks(c.HealthChecks[:0], e.v, kpath, profiles)
	case "rise":
		c.Rise, cs.riseSet = p.count(e.v, kpath)
	case "fall":
		c.Fall, cs.fallSet = p.count(e.v, kpath)
	default:
		return false
	}
	return true
}

// thresholds sets the rise and fall of c that a backend's keys leave unset: the highest of its
// checks, else the zone's healthcheck block, else the defaults (profiles carries the last two).
func (cs checkSettings) thresholds(c *Checks, profiles profileSet) {
	if !cs.riseSet {
		c.Rise = maxThreshold(c.HealthChecks, func(hc HealthCheck) int { return int(hc.Rise) }, profiles.rise)
	}
	if !cs.fallSet {
		c.Fall = maxThreshold(c.HealthChecks, func(hc HealthCheck) int { return int(hc.Fall) }, profiles.fall)
	}
}

// maxThreshold is the highest rise or fall set by any of the checks, else def.
func maxThreshold(checks []HealthCheck, get func(HealthCheck) int, def int) int {
	best := 0
	for _, hc := range checks {
		best = max(best, get(hc))
	}
	if best == 0 {
		return def
	}
	return best
}

func (p *parser) address(b *Backend, n *yaml.Node, path string) {
	s, ok := p.str(n, path)
	if !ok {
		return
	}
	ip, addr, err := parseAddress(s)
	if err != nil {
		p.Errorf(n, path, "%v", err)
		return
	}
	b.IP, b.Address = ip, p.addresses.intern(addr)
}

// intField parses an integer in lo..hi, keeping def when it is invalid.
func (p *parser) intField(n *yaml.Node, path string, lo, hi int64, def int) int {
	if v, ok := p.integer(n, path, lo, hi); ok {
		return int(v)
	}
	return def
}

// boolField parses a boolean, keeping def when it is invalid.
func (p *parser) boolField(n *yaml.Node, path string, def bool) bool {
	if v, ok := p.boolean(n, path); ok {
		return v
	}
	return def
}

func (p *parser) country(n *yaml.Node, path string) string {
	s, ok := p.str(n, path)
	if !ok {
		return ""
	}
	if len(s) != 2 || !isLetter(s[0]) || !isLetter(s[1]) {
		p.Errorf(n, path, "must be a 2-letter ISO 3166 country code, not %q", s)
		return ""
	}
	return strings.ToUpper(s)
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

func (p *parser) continent(n *yaml.Node, path string) string {
	s, ok := p.str(n, path)
	if !ok {
		return ""
	}
	c := strings.ToUpper(s)
	if !slices.Contains(continents, c) {
		p.Errorf(n, path, "%v", unknownChoice("continent code", s, continents))
		return ""
	}
	return c
}

// asn parses an AS number written as 12345, "12345" or "AS12345".
func (p *parser) asn(n *yaml.Node, path string) uint32 {
	s, ok := p.str(n, path)
	if !ok {
		return 0
	}
	digits := s
	if len(s) > 2 && strings.EqualFold(s[:2], "AS") {
		digits = s[2:]
	}
	v, err := strconv.ParseUint(digits, 10, 32)
	if err != nil || v == 0 {
		p.Errorf(n, path, `must be an AS number from 1 to 4294967295 (12345 or "AS12345"), not %q`, s)
		return 0
	}
	return uint32(v)
}

// healthChecks parses a backend's checks, profile names or inline checks, appending them to
// out.
func (p *parser) healthChecks(out []HealthCheck, n *yaml.Node, path string, profiles profileSet) []HealthCheck {
	for i, item := range p.items(n, path) {
		ipath := index(path, i)
		switch r := YAMLResolve(item); {
		case r.Kind == yaml.MappingNode:
			if hc, ok := p.check(item, ipath); ok {
				out = append(out, hc)
			}
		case r.Kind == yaml.ScalarNode && r.ShortTag() != "!!null":
			name := strings.TrimSpace(r.Value)
			if hc, ok := profiles.lookup(name); ok {
				out = append(out, hc)
			} else {
				p.Errorf(item, ipath, "%v", unknownChoice("health-check profile", name, profiles.names()))
			}
		default:
			p.Errorf(item, ipath, "must be a profile name or a check mapping, not %s", YAMLKind(r))
		}
	}
	return out
}

// BackendKey returns the key of backend b of the record named record: the record name, the
// canonical address and the port. It identifies the backend's health across reloads, in every
// component that speaks of a backend: the health manager, the overrides, the sources that
// judge backends, the admin API.
func BackendKey(record string, b *Backend) string {
	var buf [128]byte // one allocation, the key's, for most keys
	return string(AppendBackendKey(buf[:0], record, b))
}

// AppendBackendKey appends BackendKey(record, b) to dst: a map indexed by keys can be read
// with m[string(AppendBackendKey(buf, ...))], which allocates nothing.
func AppendBackendKey(dst []byte, record string, b *Backend) []byte {
	key := append(append(dst, record...), '|')
	if b.IP.IsValid() {
		key = b.IP.AppendTo(key) // one identity however the address is spelled
	} else {
		key = append(key, b.Address...)
	}
	return strconv.AppendUint(append(key, '|'), uint64(b.Port), 10)
}
