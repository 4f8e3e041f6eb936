package config

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// checkTypes are the health-check types a check or profile may name. They are the names
// package health/probe registers a prober under;
// this package cannot import that one (it imports this one), so probe's tests compare the two
// lists (TestRegistryMatchesConfig).
var checkTypes = []string{"http", "tcp", "icmp", "dns", "grpc", "mysql", "lua", "exec", "custom"}

// CheckTypes returns the health-check types a check or profile may name, in the order error
// messages list them.
func CheckTypes() []string { return slices.Clone(checkTypes) }

// ParseProfiles parses a file whose only top-level key is healthcheck_profiles, as named by the
// Corefile's healthcheck_profiles option. The result is never nil when the error is nil.
func ParseProfiles(file string, data []byte) (map[string]HealthCheck, error) {
	p := newParser(file, len(data))
	var profiles map[string]HealthCheck
	for _, e := range p.entries(p.document(data), "") {
		if e.key != "healthcheck_profiles" {
			p.unknownKey(e, "", []string{"healthcheck_profiles"})
			continue
		}
		profiles = p.profiles(e.v)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	if profiles == nil {
		profiles = map[string]HealthCheck{}
	}
	return profiles, nil
}

// LoadProfiles reads the file at path and parses it with ParseProfiles.
func LoadProfiles(path string) (map[string]HealthCheck, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load health-check profiles: %w", err)
	}
	return ParseProfiles(path, data)
}

// profiles parses the healthcheck_profiles mapping. Profiles with errors are kept, so that a
// reference to them is not reported a second time as unknown.
func (p *parser) profiles(n *yaml.Node) map[string]HealthCheck {
	const path = "healthcheck_profiles"
	out := map[string]HealthCheck{}
	for _, e := range p.entries(n, path) {
		name := strings.TrimSpace(e.key)
		ppath := child(path, e.key)
		if name == "" {
			p.Errorf(e.k, ppath, "a profile name must not be empty")
			continue
		}
		hc, _ := p.check(e.v, ppath)
		hc.Profile = name
		hc.Pos = p.Pos(e.k)
		out[name] = hc
	}
	return out
}

// check parses a health check written as {type, params, rise, fall}.
func (p *parser) check(n *yaml.Node, path string) (HealthCheck, bool) {
	hc := HealthCheck{Pos: p.Pos(YAMLResolve(n))}
	if YAMLIsNull(n) {
		p.Errorf(YAMLResolve(n), path, "must be a mapping with a type, not null")
		return hc, false
	}
	ok, typed := true, false
	for _, e := range p.entries(n, path) {
		if YAMLIsNull(e.v) {
			continue
		}
		kpath := child(path, e.key)
		var good bool
		switch e.key {
		case "type":
			typed = true
			hc.Type, good = p.checkType(e.v, kpath)
		case "params":
			good = p.params(&hc, e.v, kpath)
		case "rise":
			hc.Rise, good = p.count32(e.v, kpath)
		case "fall":
			hc.Fall, good = p.count32(e.v, kpath)
		default:
			p.unknownKey(e, path, []string{"type", "params", "rise", "fall"})
		}
		ok = ok && good
	}
	if !typed && YAMLResolve(n).Kind == yaml.MappingNode {
		p.Errorf(YAMLResolve(n), child(path, "type"), "a health check needs a type (valid: %s)", strings.Join(checkTypes, ", "))
		ok = false
	}
	return hc, ok
}

func (p *parser) checkType(n *yaml.Node, path string) (string, bool) {
	s, ok := p.str(n, path)
	if !ok {
		return "", false
	}
	t := strings.ToLower(s)
	if !slices.Contains(checkTypes, t) {
		p.Errorf(n, path, "%v", unknownChoice("health-check type", s, checkTypes))
		return "", false
	}
	return t, true
}

func (p *parser) params(hc *HealthCheck, n *yaml.Node, path string) bool {
	if YAMLResolve(n).Kind != yaml.MappingNode {
		p.Errorf(YAMLResolve(n), path, "must be a mapping, not %s", YAMLKind(YAMLResolve(n)))
		return false
	}
	var kv []Param
	_, ok := p.plainInto(n, path, &kv)
	if len(kv) > 0 {
		hc.Params = Params{kv}
	}
	return ok
}

// count parses a rise or fall threshold: an integer of at least 1.
func (p *parser) count(n *yaml.Node, path string) (int, bool) {
	v, ok := p.integer(n, path, 1, math.MaxInt32)
	return int(v), ok
}

// count32 is count for a check's own threshold, kept in 32 bits.
func (p *parser) count32(n *yaml.Node, path string) (int32, bool) {
	v, ok := p.count(n, path)
	return int32(v), ok // count's bound is math.MaxInt32
}

// profileSet resolves profile names: the zone file's own profiles first, then the shared ones.
// It also carries the zone's thresholds for a backend that neither it nor its checks set:
// the healthcheck block's rise and fall, else DefaultRise and DefaultFall.
type profileSet struct {
	local, shared map[string]HealthCheck
	rise, fall    int
}

// thresholds parses the zone file's healthcheck block, {rise, fall}, into s.
func (p *parser) thresholds(s *profileSet, n *yaml.Node) {
	const path = "healthcheck"
	for _, e := range p.entries(n, path) {
		if YAMLIsNull(e.v) {
			continue
		}
		kpath := child(path, e.key)
		switch e.key {
		case "rise":
			if v, ok := p.count(e.v, kpath); ok {
				s.rise = v
			}
		case "fall":
			if v, ok := p.count(e.v, kpath); ok {
				s.fall = v
			}
		default:
			p.unknownKey(e, path, []string{"rise", "fall"})
		}
	}
}

func (s profileSet) lookup(name string) (HealthCheck, bool) {
	if hc, ok := s.local[name]; ok {
		return hc, true
	}
	hc, ok := s.shared[name]
	return hc, ok
}

// names lists every profile name, sorted, for suggestions.
func (s profileSet) names() []string {
	var out []string
	for name := range s.local {
		out = append(out, name)
	}
	for name := range s.shared {
		if _, dup := s.local[name]; !dup {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
