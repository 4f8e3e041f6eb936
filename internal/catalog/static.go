package catalog

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
)

// Delegation is a zone cut below the apex (static NS records): queries at or below it get a
// referral, its NS set in authority and the glue in additional (RFC 1034 4.3.2), except a DS
// query at the cut itself, which the parent answers.
type Delegation struct {
	Name string
	NS   []dns.RR
	// Glue are the A and AAAA records of the NS targets that the zone holds as static data,
	// in NS order; GlueRecords the GSLB records that are NS targets, whose healthy backends
	// are added as glue when the referral is built.
	Glue        []dns.RR
	GlueRecords []*Record
	// Wire is the referral in wire form, for the fast path.
	Wire *ReferralWire
}

// Found is what a name holds in a zone (Zone.Find).
type Found struct {
	// Record is the GSLB record of the name (nil for none); Wildcard is set when it was
	// found through a wildcard (RFC 4592).
	Record   *Record
	Wildcard bool
	// Static are the name's static RRsets, by type (nil for none); Wire the same in wire
	// form (nil when it has no static data).
	Static map[uint16][]dns.RR
	Wire   *StaticWire
	// Exists is false when the name does not exist (NXDOMAIN).
	Exists bool
	// Cut is the delegation the name is at or below, nil when none.
	Cut *Delegation
}

// staticNode is a name's static data: its RRsets by type, and the same in wire form, which
// the fast path answers from.
type staticNode struct {
	rrsets map[uint16][]dns.RR
	wire   StaticWire
}

// rrsets returns the name's static RRsets by type, nil for none.
func (n *node) rrsets() map[uint16][]dns.RR {
	if n.static == nil {
		return nil
	}
	return n.static.rrsets
}

// Find returns what qname, a lower-case name inside the zone, holds. It never allocates.
func (z *Zone) Find(qname string) Found {
	if n, ok := z.nodes[qname]; ok {
		f := Found{Record: n.record, Exists: true, Cut: n.cut}
		if n.static != nil {
			f.Static, f.Wire = n.static.rrsets, &n.static.wire
		}
		return f
	}
	// Find the closest encloser; only its wildcard child applies, and not below a cut.
	for off, end := dns.NextLabel(qname, 0); !end; off, end = dns.NextLabel(qname, off) {
		if n, ok := z.nodes[qname[off:]]; ok {
			switch {
			case n.cut != nil:
				return Found{Cut: n.cut}
			case n.wildcard != nil:
				return Found{Record: n.wildcard, Wildcard: true, Exists: true}
			}
			return Found{}
		}
	}
	return Found{}
}

// addStatic links zc's static records into the zone's name tree, by owner and type, and
// builds its delegations. It fails on what a source's records make inconsistent with them
// (the zone file's own records were checked when it loaded).
func (z *Zone) addStatic(zc *config.Zone) error {
	for _, s := range zc.Static {
		z.static = append(z.static, s.RR)
		h := s.RR.Header()
		n := z.nodeFor(h.Name)
		if n.static == nil {
			n.static = &staticNode{rrsets: map[uint16][]dns.RR{}}
		}
		n.static.rrsets[h.Rrtype] = append(n.static.rrsets[h.Rrtype], s.RR)
		z.addParents(h.Name)
	}
	for name, n := range z.nodes {
		if n.static == nil {
			continue
		}
		n.static.wire = staticWire(n.static.rrsets)
		if ns := n.static.rrsets[dns.TypeNS]; len(ns) > 0 && name != z.Origin {
			n.cut = &Delegation{Name: name, NS: ns}
		}
	}
	// Every name below a cut belongs to it (the highest, when cuts nest: glue only).
	for name, n := range z.nodes {
		for off, end := dns.NextLabel(name, 0); !end && len(name)-off > len(z.Origin); off, end = dns.NextLabel(name, off) {
			if p := z.nodes[name[off:]]; p != nil && p.cut != nil && p.cut.Name == name[off:] {
				n.cut = p.cut
			}
		}
	}
	var errs []error
	for name, n := range z.nodes {
		switch {
		case n.record != nil && n.cut != nil:
			errs = append(errs, fmt.Errorf("zone %s: the record %s is at or below the delegation %s", z.Origin, name, n.cut.Name))
		case n.record != nil && (len(n.rrsets()[dns.TypeA]) > 0 || len(n.rrsets()[dns.TypeAAAA]) > 0 || len(n.rrsets()[dns.TypeCNAME]) > 0):
			errs = append(errs, fmt.Errorf("zone %s: the record %s shares its name with static A, AAAA or CNAME records", z.Origin, name))
		}
	}
	for name, n := range z.nodes {
		if n.cut != nil && n.cut.Name == name {
			z.glue(n.cut)
			n.cut.buildWire()
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) }) // not the map's order
	return errors.Join(errs...)
}

// glue fills in d's glue: the zone's static addresses of each NS target, and the GSLB records
// that are NS targets.
func (z *Zone) glue(d *Delegation) {
	for _, rr := range d.NS {
		target := rr.(*dns.NS).Ns
		t := z.nodes[target]
		if t == nil {
			continue
		}
		d.Glue = append(d.Glue, t.rrsets()[dns.TypeA]...)
		d.Glue = append(d.Glue, t.rrsets()[dns.TypeAAAA]...)
		if t.record != nil && !slices.Contains(d.GlueRecords, t.record) {
			d.GlueRecords = append(d.GlueRecords, t.record)
		}
	}
}
