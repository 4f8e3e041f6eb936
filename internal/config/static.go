package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/miekg/dns"
	"gopkg.in/yaml.v3"
)

// StaticRR is one resource record of a zone's static: map (RFC 1035 presentation form), served
// as written: the apex's MX, TXT and CAA, a mail host's address, a delegation's NS and glue.
type StaticRR struct {
	RR  dns.RR
	Pos Position
}

// staticForbidden are the types a static: entry may not have, and why.
var staticForbidden = map[uint16]string{
	dns.TypeSOA:        "the zone's SOA comes from its soa: settings",
	dns.TypeRRSIG:      "Meridian does not sign zones: DNSSEC records other than DS are not served",
	dns.TypeNSEC:       "Meridian does not sign zones: DNSSEC records other than DS are not served",
	dns.TypeNSEC3:      "Meridian does not sign zones: DNSSEC records other than DS are not served",
	dns.TypeNSEC3PARAM: "Meridian does not sign zones: DNSSEC records other than DS are not served",
	dns.TypeDNSKEY:     "Meridian does not sign zones: DNSSEC records other than DS are not served",
	dns.TypeCDS:        "Meridian does not sign zones: DNSSEC records other than DS are not served",
	dns.TypeCDNSKEY:    "Meridian does not sign zones: DNSSEC records other than DS are not served",
}

// static parses a zone file's static: map, from owner name to a list of records without their
// owner ("[TTL] TYPE DATA"; TTL defaults to the SOA's), into z.Static. Relative names, the
// owner's (see staticOwner) and those in the data, are relative to the zone. The SOA must have
// been parsed.
func (p *parser) static(z *Zone, n *yaml.Node) {
	for _, e := range p.entries(n, "static") {
		path := "static[" + strconv.Quote(e.key) + "]"
		owner := staticOwner(e.key, z.Origin)
		if err := checkName(owner, false); err != nil {
			p.Errorf(e.k, path, "invalid owner name %q: %v", e.key, err)
			continue
		}
		if !inZone(owner, z.Origin) {
			p.Errorf(e.k, path, "%s is outside zone %s", owner, z.Origin)
			continue
		}
		v := YAMLResolve(e.v)
		items := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			items = p.items(v, path)
		}
		for i, item := range items {
			ipath := path
			if v.Kind == yaml.SequenceNode {
				ipath = index(path, i)
			}
			text, ok := p.str(item, ipath)
			if !ok {
				continue
			}
			rr, err := parseStaticRR(owner, text, z.Origin, z.SOA.TTL)
			if err != nil {
				p.Errorf(item, ipath, "%v", err)
				continue
			}
			z.Static = append(z.Static, StaticRR{RR: rr, Pos: p.Pos(item)})
		}
	}
}

// staticOwner returns the canonical owner name that key names in zone origin: "@" is the apex;
// a name without a final dot that is not inside the zone is relative to it ("mail").
func staticOwner(key, origin string) string {
	if key == "@" {
		return origin
	}
	name := CanonicalName(key)
	if !strings.HasSuffix(key, ".") && !inZone(name, origin) {
		return CanonicalName(key + "." + origin)
	}
	return name
}

// parseStaticRR parses text, one record without its owner, as a record of owner in zone
// origin, with defaultTTL when it has none.
func parseStaticRR(owner, text, origin string, defaultTTL uint32) (dns.RR, error) {
	if strings.ContainsAny(text, "\r\n") {
		return nil, fmt.Errorf("%q: one record per entry, on one line", text)
	}
	zp := dns.NewZoneParser(strings.NewReader(owner+" "+text+"\n"), origin, "")
	zp.SetDefaultTTL(defaultTTL)
	rr, ok := zp.Next()
	if err := zp.Err(); err != nil || !ok {
		return nil, fmt.Errorf("%q is not a record in presentation form ([TTL] TYPE DATA): %v", text, cleanParseError(err))
	}
	if _, more := zp.Next(); more {
		return nil, fmt.Errorf("%q: one record per entry", text)
	}
	h := rr.Header()
	if h.Class != dns.ClassINET {
		return nil, fmt.Errorf("%q: only class IN is served", text)
	}
	if why, bad := staticForbidden[h.Rrtype]; bad {
		return nil, fmt.Errorf("%q: %s", text, why)
	}
	h.Name = strings.ToLower(h.Name)
	return rr, nil
}

// cleanParseError returns the message of a zone parser's error (nil: it found no record).
func cleanParseError(err error) string {
	if err == nil {
		return "no record"
	}
	msg := strings.TrimPrefix(err.Error(), "dns: ")
	if i := strings.LastIndex(msg, " at line: "); i >= 0 {
		msg = msg[:i] // the line and column of a one-line input of its own
	}
	return msg
}

// countOf returns how many of types are t.
func countOf(types []uint16, t uint16) int {
	n := 0
	for _, x := range types {
		if x == t {
			n++
		}
	}
	return n
}

// checkStatic reports the conflicts among z's static records and between them and its
// records: an RRset written twice or with two TTLs; a CNAME next to other data, at the apex,
// or at a record's name; an address at a record's name (the record owns A and AAAA); NS at
// the apex (the zone's ns: owns it); DS anywhere but a delegation; and anything at or below a
// delegation (NS below the apex) but its NS, DS and, below it, the glue's A and AAAA, which a
// record there would be too.
func (p *parser) checkStatic(z *Zone) {
	records := make(map[string]bool, len(z.Records))
	for _, r := range z.Records {
		records[r.Name] = true
	}
	cuts := map[string]bool{}
	types := map[string][]uint16{}
	for _, s := range z.Static {
		h := s.RR.Header()
		types[h.Name] = append(types[h.Name], h.Rrtype)
		if h.Rrtype == dns.TypeNS && h.Name != z.Origin {
			cuts[h.Name] = true
		}
	}
	for i, s := range z.Static {
		h := s.RR.Header()
		path := "static[" + strconv.Quote(h.Name) + "]"
		typ := dns.TypeToString[h.Rrtype]
		for _, prev := range z.Static[:i] {
			ph := prev.RR.Header()
			if ph.Name != h.Name || ph.Rrtype != h.Rrtype {
				continue
			}
			if dns.IsDuplicate(prev.RR, s.RR) {
				p.ErrorAt(s.Pos, path, "duplicate %s record (first at line %d)", typ, prev.Pos.Line)
			} else if ph.Ttl != h.Ttl {
				p.ErrorAt(s.Pos, path, "TTL %d differs from %d of the same %s RRset (line %d): an RRset has one TTL (RFC 2181 5.2)", h.Ttl, ph.Ttl, typ, prev.Pos.Line)
			}
			break
		}
		cut := cutAbove(h.Name, z.Origin, cuts)
		switch {
		case h.Rrtype == dns.TypeCNAME && h.Name == z.Origin:
			p.ErrorAt(s.Pos, path, "a CNAME at the zone's apex would exclude its SOA and NS")
		case h.Rrtype == dns.TypeCNAME && records[h.Name]:
			p.ErrorAt(s.Pos, path, "a CNAME cannot share its name with the GSLB record %s", h.Name)
		case h.Rrtype == dns.TypeCNAME && slices.ContainsFunc(types[h.Name], func(t uint16) bool { return t != dns.TypeCNAME }):
			p.ErrorAt(s.Pos, path, "a CNAME excludes other data at %s (RFC 1034 3.6.2)", h.Name)
		case h.Rrtype == dns.TypeCNAME && countOf(types[h.Name], dns.TypeCNAME) > 1:
			p.ErrorAt(s.Pos, path, "a name has at most one CNAME")
		case (h.Rrtype == dns.TypeA || h.Rrtype == dns.TypeAAAA) && records[h.Name]:
			p.ErrorAt(s.Pos, path, "%s is a GSLB record, which answers %s itself: give the address as a backend", h.Name, typ)
		case h.Rrtype == dns.TypeNS && h.Name == z.Origin:
			p.ErrorAt(s.Pos, path, "the apex's NS set comes from the zone's ns: (and soa:) settings")
		case h.Rrtype == dns.TypeDS && !cuts[h.Name]:
			p.ErrorAt(s.Pos, path, "a DS record belongs at a delegation (a name with NS records below the apex)")
		case cut != "" && h.Name == cut && h.Rrtype != dns.TypeNS && h.Rrtype != dns.TypeDS:
			p.ErrorAt(s.Pos, path, "%s is delegated (it has NS records): only NS and DS belong at it, its other data is the child zone's", h.Name)
		case cut != "" && h.Name != cut && h.Rrtype != dns.TypeA && h.Rrtype != dns.TypeAAAA:
			p.ErrorAt(s.Pos, path, "%s is below the delegation %s: only glue (A and AAAA of its name servers) belongs here", h.Name, cut)
		}
	}
	for _, r := range z.Records {
		if cut := cutAbove(r.Name, z.Origin, cuts); cut != "" {
			p.ErrorAt(r.Pos, "records["+strconv.Quote(r.Name)+"]", "the record %s is at or below the delegation %s: it would never be answered (delegate a GSLB zone of its own instead)", r.Name, cut)
		}
	}
}

// cutAbove returns the delegation (a name of cuts) that name is at or below, the highest one,
// or "" when there is none.
func cutAbove(name, origin string, cuts map[string]bool) string {
	if len(cuts) == 0 {
		return ""
	}
	found := ""
	for off, end := 0, false; !end && len(name)-off > len(origin); off, end = dns.NextLabel(name, off) {
		if cuts[name[off:]] {
			found = name[off:]
		}
	}
	return found
}
