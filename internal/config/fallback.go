package config

import (
	"net/netip"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// A record's fallback policy (fallback_policy): what it answers while none of its backends is
// healthy, and how its block is parsed and checked.

// FallbackMode is what a record answers while none of its backends is healthy.
type FallbackMode string

// The fallback policies.
const (
	FallbackFailOpen     FallbackMode = "fail-open"
	FallbackFailClosed   FallbackMode = "fail-closed"
	FallbackFailSpecific FallbackMode = "fail-specific"
	// FallbackLastKnownGood answers the backends that were healthy the last time any was
	// (fail-open's every enabled backend, until one ever was).
	FallbackLastKnownGood FallbackMode = "last-known-good"
)

// Fallback is a record's policy for when no backend is healthy.
type Fallback struct {
	Mode  FallbackMode
	Rcode int // DNS rcode for fail-closed
	IPs   []netip.Addr
	CNAME string // canonical FQDN
}

// equal reports whether f and o are the same policy.
func (f *Fallback) equal(o *Fallback) bool {
	return f.Mode == o.Mode && f.Rcode == o.Rcode && slices.Equal(f.IPs, o.IPs) && f.CNAME == o.CNAME
}

// rcodes are the DNS response codes a fail-closed policy may answer with (values as in miekg/dns).
var rcodes = map[string]int{"NOERROR": 0, "SERVFAIL": 2, "NXDOMAIN": 3, "REFUSED": 5}

const rcodeServFail = 2

// fallback parses a fallback_policy block.
func (p *parser) fallback(n *yaml.Node, path string) (Fallback, bool) {
	var f Fallback
	ok := true
	var modeNode, rcodeNode, ipsNode, cnameNode *yaml.Node
	var uses string // with one of CoreDNS-GSLB's mode names, the one field that mode uses
	for _, e := range p.entries(n, path) {
		if YAMLIsNull(e.v) {
			continue
		}
		kpath := child(path, e.key)
		switch e.key {
		case "mode":
			modeNode = YAMLResolve(e.v)
			f.Mode, uses = p.fallbackMode(e.v, kpath)
		case "rcode":
			rcodeNode = YAMLResolve(e.v)
			s, good := p.str(e.v, kpath)
			if code, known := rcodes[strings.ToUpper(s)]; good && known {
				f.Rcode = code
			} else if good {
				p.Errorf(e.v, kpath, "%v", unknownChoice("rcode", s, []string{"NXDOMAIN", "SERVFAIL", "REFUSED", "NOERROR"}))
				ok = false
			}
		case "fallback_ips":
			for i, item := range p.items(e.v, kpath) {
				s, good := p.str(item, index(kpath, i))
				if !good {
					ok = false
					continue
				}
				ip, err := parseIP(s)
				if err != nil {
					p.Errorf(item, index(kpath, i), "%v", err)
					ok = false
				}
				f.IPs = append(f.IPs, ip)
			}
			if len(f.IPs) > 0 {
				ipsNode = YAMLResolve(e.v)
			}
		case "fallback_cname":
			cnameNode = YAMLResolve(e.v)
			name, good := p.hostName(e.v, kpath)
			f.CNAME, ok = name, ok && good
		default:
			p.unknownKey(e, path, []string{"mode", "rcode", "fallback_ips", "fallback_cname"})
		}
	}
	if modeNode == nil {
		if YAMLResolve(n).Kind == yaml.MappingNode {
			p.Errorf(YAMLResolve(n), child(path, "mode"), "mode is required (fail-open, fail-closed, fail-specific or last-known-good)")
		}
		return f, false
	}
	if f.Mode == "" {
		return f, false
	}
	if uses != "" {
		// CoreDNS-GSLB's mode names the field it answers with and ignores the others.
		for _, other := range []struct {
			key  string
			node **yaml.Node
		}{{"rcode", &rcodeNode}, {"fallback_ips", &ipsNode}, {"fallback_cname", &cnameNode}} {
			if other.key != uses && *other.node != nil {
				p.WarnAt(p.Pos(*other.node), child(path, other.key), "ignored: mode %s answers with %s only", uses, uses)
				*other.node = nil
			}
		}
		switch uses {
		case "rcode":
			f.IPs, f.CNAME = nil, ""
		case "fallback_ips":
			f.CNAME, f.Rcode = "", 0
		case "fallback_cname":
			f.IPs, f.Rcode = nil, 0
		}
	}
	return f, p.fallbackRules(&f, path, modeNode, rcodeNode, ipsNode, cnameNode) && ok
}

// fallbackRules checks which fields go with which fallback mode.
func (p *parser) fallbackRules(f *Fallback, path string, modeNode, rcodeNode, ipsNode, cnameNode *yaml.Node) bool {
	ok := true
	only := func(n *yaml.Node, key string, mode FallbackMode) {
		if n != nil && f.Mode != mode {
			p.Errorf(n, child(path, key), "%s is only allowed with mode %s, not %s", key, mode, f.Mode)
			ok = false
		}
	}
	only(rcodeNode, "rcode", FallbackFailClosed)
	only(ipsNode, "fallback_ips", FallbackFailSpecific)
	only(cnameNode, "fallback_cname", FallbackFailSpecific)
	if f.Mode == FallbackFailClosed && rcodeNode == nil {
		f.Rcode = rcodeServFail
	}
	if f.Mode == FallbackFailSpecific {
		switch {
		case ipsNode != nil && cnameNode != nil:
			p.Errorf(cnameNode, child(path, "fallback_cname"), "set either fallback_ips or fallback_cname, not both")
			ok = false
		case ipsNode == nil && cnameNode == nil:
			p.Errorf(modeNode, child(path, "mode"), "mode fail-specific needs fallback_ips or fallback_cname")
			ok = false
		}
	}
	return ok
}

var fallbackModes = []string{string(FallbackFailOpen), string(FallbackFailClosed), string(FallbackFailSpecific), string(FallbackLastKnownGood)}

// cgFallbackModes are the fallback mode names of CoreDNS-GSLB's zone reference: each names the
// one field it answers with.
var cgFallbackModes = map[string]FallbackMode{
	"rcode":          FallbackFailClosed,
	"fallback_ips":   FallbackFailSpecific,
	"fallback_cname": FallbackFailSpecific,
}

// fallbackMode parses a fallback mode, ignoring case; it returns "" after reporting a bad one.
// For one of CoreDNS-GSLB's names it also returns that name, the field the mode answers with.
func (p *parser) fallbackMode(n *yaml.Node, path string) (FallbackMode, string) {
	s, ok := p.str(n, path)
	if !ok {
		return "", ""
	}
	m := strings.ToLower(s)
	if slices.Contains(fallbackModes, m) {
		return FallbackMode(m), ""
	}
	if cg, ok := cgFallbackModes[m]; ok {
		return cg, m
	}
	p.Errorf(n, path, "%v", unknownChoice("fallback mode", s, fallbackModes))
	return "", ""
}
