package config

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Values of the generated SOA record, used for the fields a zone file does not set.
const (
	defaultSOARefresh = 7200
	defaultSOARetry   = 3600
	defaultSOAExpire  = 1209600
	defaultSOAMinimum = 60
	defaultSOATTL     = 3600
)

var zoneKeys = []string{"healthcheck", "healthcheck_profiles", "defaults", "soa", "ns", "records", "static"}

// ParseZone parses one zone file's content. origin is the zone (any case, with or without
// trailing dot). shared holds profiles from the Corefile's healthcheck_profiles file (may be nil);
// a zone file's own profile of the same name wins. serial is the SOA serial to use when the file
// sets none. Every problem of the file is reported, as an ErrorList; the zone is nil then.
func ParseZone(file string, data []byte, origin string, shared map[string]HealthCheck, serial uint32) (*Zone, error) {
	return parseZone(file, data, origin, shared, serial, walkChunks)
}

// How parseZone walks a file's records.
const (
	walkWhole   = iota // the file parsed as a whole, its records walked one after another
	walkInOrder        // in chunks (see splitRecords), parsed at once, walked one after another
	walkChunks         // in chunks, each parsed and walked at once (see walkChunk)
)

// parseZone is ParseZone; a file in plain block style has its records parsed in chunks (see
// splitRecords) unless walk is walkWhole, with the same result and errors as a whole parse.
func parseZone(file string, data []byte, origin string, shared map[string]HealthCheck, serial uint32, walk int) (*Zone, error) {
	p := newParser(file, len(data))
	doc := data
	var chunks []chunk
	records := 0 // how many records the file has, when it is split
	if walk != walkWhole {
		if head, c, n, ok := splitRecords(data); ok {
			doc, chunks, records = head, c, n
		}
	}
	z := &Zone{Origin: CanonicalName(origin), File: file}
	if err := checkName(z.Origin, false); err != nil {
		p.ErrorAt(InFile(file), "", "invalid zone name %q: %v", origin, err)
	}
	top := map[string]*yaml.Node{}
	for _, e := range p.entries(p.document(doc), "") {
		if !slices.Contains(zoneKeys, e.key) {
			p.unknownKey(e, "", zoneKeys)
			continue
		}
		if !YAMLIsNull(e.v) {
			top[e.key] = e.v
		}
	}
	profiles := profileSet{shared: shared, rise: DefaultRise, fall: DefaultFall}
	if n := top["healthcheck_profiles"]; n != nil {
		profiles.local = p.profiles(n)
	}
	if n := top["healthcheck"]; n != nil {
		p.thresholds(&profiles, n)
	}
	p.soa(z, top["soa"], top["ns"], serial)
	if n := top["static"]; n != nil {
		p.static(z, n)
	}
	var defs recordOpts
	if n := top["defaults"]; n != nil {
		defs = p.defaults(n)
	}
	first := make(map[string]int, records)
	z.Records = make([]Record, 0, records)
	if n := top["records"]; n != nil {
		p.records(z, n, defs, profiles, first)
	}
	if walk == walkChunks {
		for w := range eachChunk(chunks, func(c chunk) *walkedChunk { return p.walkChunk(c, z.Origin, defs, profiles) }) {
			if !p.takeWalked(z, w, first) {
				// The walk's budget ran out: where, and what is reported, only a walk of the
				// records one after another tells.
				return parseZone(file, data, origin, shared, serial, walkInOrder)
			}
		}
	}
	if walk == walkInOrder {
		for d := range eachChunk(chunks, chunk.decode) {
			p.walkDocument(z, d, defs, profiles, first)
		}
	}
	slices.SortFunc(z.Records, func(a, b Record) int { return strings.Compare(a.Name, b.Name) })
	if cap(z.Records) > len(z.Records)+len(z.Records)/8 {
		// The records live as long as the configuration: drop append's slack (up to half).
		z.Records = slices.Clone(z.Records)
	}
	p.checkStatic(z)
	if chunks != nil && p.unreadable {
		// A syntax error in one part may be the continuation of another part: only the whole
		// file tells what YAML makes of it.
		return parseZone(file, data, origin, shared, serial, walkWhole)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	z.Warnings = p.Warnings()
	return z, nil
}

// LoadZone reads src.File, refusing a file of more than limit bytes (DefaultMaxFileSize when
// 0), and parses it with ParseZone, with the file's modification time (unix seconds) as the
// default SOA serial.
func LoadZone(src ZoneSource, shared map[string]HealthCheck, limit int64) (*Zone, error) {
	data, info, err := readFile(src.File, limit)
	if err != nil {
		return nil, fmt.Errorf("load zone %s: %w", src.Origin, err)
	}
	var serial uint32
	if t := info.ModTime().Unix(); t > 0 && t <= math.MaxUint32 {
		serial = uint32(t)
	}
	return ParseZone(src.File, data, src.Origin, shared, serial)
}

// soa fills the zone's SOA and NS records from the file, generating what it does not set.
func (p *parser) soa(z *Zone, soaNode, nsNode *yaml.Node, serial uint32) {
	z.NS = p.nameServers(nsNode)
	mname := joinName("ns1", z.Origin)
	if len(z.NS) > 0 {
		mname = z.NS[0]
	}
	z.SOA = SOA{
		TTL: defaultSOATTL, MName: mname, RName: joinName("hostmaster", z.Origin), Serial: serial,
		Refresh: defaultSOARefresh, Retry: defaultSOARetry, Expire: defaultSOAExpire, Minimum: defaultSOAMinimum,
	}
	const path = "soa"
	for _, e := range p.entries(soaNode, path) {
		if YAMLIsNull(e.v) {
			continue
		}
		kpath := child(path, e.key)
		switch e.key {
		case "mname":
			if name, ok := p.hostName(e.v, kpath); ok {
				z.SOA.MName = name
			}
		case "rname":
			if s, ok := p.str(e.v, kpath); ok && strings.Contains(s, "@") {
				p.Errorf(e.v, kpath, "write the mailbox as a name (hostmaster.example.org.), not %q", s)
			} else if name, ok := p.hostName(e.v, kpath); ok {
				z.SOA.RName = name
			}
		case "serial":
			p.uint32Field(&z.SOA.Serial, e.v, kpath, math.MaxUint32)
		case "refresh":
			p.uint32Field(&z.SOA.Refresh, e.v, kpath, math.MaxInt32)
		case "retry":
			p.uint32Field(&z.SOA.Retry, e.v, kpath, math.MaxInt32)
		case "expire":
			p.uint32Field(&z.SOA.Expire, e.v, kpath, math.MaxInt32)
		case "minimum":
			p.uint32Field(&z.SOA.Minimum, e.v, kpath, math.MaxInt32)
		case "ttl":
			p.uint32Field(&z.SOA.TTL, e.v, kpath, math.MaxInt32)
		default:
			p.unknownKey(e, path, []string{"mname", "rname", "serial", "refresh", "retry", "expire", "minimum", "ttl"})
		}
	}
	if len(z.NS) == 0 {
		z.NS = []string{z.SOA.MName}
	}
}

func (p *parser) uint32Field(dst *uint32, n *yaml.Node, path string, hi int64) {
	if v, ok := p.integer(n, path, 0, hi); ok {
		*dst = uint32(v)
	}
}

// nameServers parses the ns list: distinct host names, at least one.
func (p *parser) nameServers(n *yaml.Node) []string {
	const path = "ns"
	items := p.items(n, path)
	if n != nil && YAMLResolve(n).Kind == yaml.SequenceNode && len(items) == 0 {
		p.Errorf(YAMLResolve(n), path, "needs at least one name server")
	}
	var out []string
	first := map[string]int{}
	for i, item := range items {
		ipath := index(path, i)
		name, ok := p.hostName(item, ipath)
		if !ok {
			continue
		}
		if line, dup := first[name]; dup {
			p.Errorf(item, ipath, "duplicate name server %s (first at line %d)", name, line)
			continue
		}
		first[name] = YAMLResolve(item).Line
		out = append(out, name)
	}
	return out
}

// hostName parses a host name and returns it canonical.
func (p *parser) hostName(n *yaml.Node, path string) (string, bool) {
	s, ok := p.str(n, path)
	if !ok {
		return "", false
	}
	name := CanonicalName(s)
	if err := checkHost(name); err != nil {
		p.Errorf(n, path, "%q is not a valid host name: %v", s, err)
		return "", false
	}
	return name, true
}
