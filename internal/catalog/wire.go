package catalog

import (
	"encoding/binary"
	"slices"

	"github.com/miekg/dns"
)

// Wire templates: the parts of responses that depend on the snapshot only, packed once when
// the snapshot (or a zone's serial) changes, so that the fast path (answer.AppendFast) writes a
// response by copying them after the query's header and question, and patching in what the
// query gives: its ID and flags, its name (the owner of the records at the query's name, in
// the query's case lower-cased) and its OPT record (DO bit, Client Subnet scope). Nothing a
// template holds depends on the query, so that a signed variant (DNSSEC) is one more template
// of the same kind: its RRSIGs, NSECs and SOA are fixed bytes beside the RRsets they cover,
// and the parts patched at query time are never covered by a signature (the owner a signature
// covers is the canonical, lower-case one).
//
// The records are packed as miekg/dns packs them in a message that is not compressed, which
// is how the slow path writes a response that fits the client's buffer: the fast path's
// answers are byte for byte the slow path's.

// Section is a run of resource records in wire form, uncompressed: the records of one
// section of a response (or of one RRset within it).
type Section struct {
	// Wire is the records one after another. When AtQuery is set, each record is written
	// without its owner (type, class, TTL, RDLENGTH and RDATA): its owner is the query's
	// name. Otherwise each carries its owner in full.
	Wire []byte
	// Count is the number of records.
	Count int
	// AtQuery is set when every record's owner is the query's name (see Wire).
	AtQuery bool
}

// Len returns the size of the section in a response to a query whose name takes nameLen
// bytes in wire form.
func (s Section) Len(nameLen int) int {
	if s.AtQuery {
		return len(s.Wire) + s.Count*nameLen
	}
	return len(s.Wire)
}

// ZoneWire are the templates of a zone: the apex's SOA and NS answers and the SOA of its
// negative answers (NXDOMAIN, NODATA, fail-closed), each with the zone's current serial.
type ZoneWire struct {
	// SOA is the apex's SOA record (Zone.SOARecord); NS its NS RRset, in configuration order.
	SOA, NS Section
	// Negative is the SOA record of the zone's negative answers (Zone.NegativeSOARecord),
	// for their authority section.
	Negative Section
}

// Wire returns the zone's templates; they must not be modified.
func (z *Zone) Wire() *ZoneWire { return z.wire.Load() }

// buildWire packs the zone's templates with its current serial and publishes them.
func (z *Zone) buildWire() {
	ns := make([]dns.RR, len(z.NS))
	for i, rr := range z.NS {
		ns[i] = rr
	}
	z.wire.Store(&ZoneWire{
		SOA:      packSection([]dns.RR{z.SOARecord()}, false),
		NS:       packSection(ns, false),
		Negative: packSection([]dns.RR{z.NegativeSOARecord()}, false),
	})
}

// packSection packs rrs as a Section: with their owners, or, with atQuery, without (see
// Section.Wire). A record that does not pack (which a validated zone does not hold) is left out.
func packSection(rrs []dns.RR, atQuery bool) Section {
	s := Section{AtQuery: atQuery}
	for _, rr := range rrs {
		buf := make([]byte, dns.Len(rr))
		end, err := dns.PackRR(rr, buf, 0, nil, false)
		if err != nil {
			continue
		}
		rec := buf[:end]
		if atQuery {
			rec = rec[nameLen(rec):]
		}
		s.Wire = append(s.Wire, rec...)
		s.Count++
	}
	s.Wire = slices.Clip(s.Wire)
	return s
}

// nameLen returns the length of the uncompressed name at the start of b.
func nameLen(b []byte) int {
	off := 0
	for off < len(b) && b[off] != 0 {
		off += 1 + int(b[off])
	}
	return off + 1
}

// StaticWire is a name's static RRsets in wire form, every record at the name (see
// Section.AtQuery), in one allocation: an index of the RRsets, then their records. The index
// is a count byte, then per RRset its type, its count of records and the end of its records
// (three 16-bit numbers, the end an offset into the records); a name's RRsets are few.
type StaticWire struct {
	b []byte
}

// staticIndexEntry is the size of an RRset's entry in a StaticWire's index.
const staticIndexEntry = 6

// RRset returns the name's static RRset of type rrtype, and whether it has one.
func (w *StaticWire) RRset(rrtype uint16) (Section, bool) {
	if w == nil || len(w.b) == 0 {
		return Section{}, false
	}
	n := int(w.b[0])
	records := w.b[1+n*staticIndexEntry:]
	start := 0
	for i := range n {
		e := w.b[1+i*staticIndexEntry:]
		end := int(binary.BigEndian.Uint16(e[4:]))
		if binary.BigEndian.Uint16(e) == rrtype {
			return Section{Wire: records[start:end], Count: int(binary.BigEndian.Uint16(e[2:])), AtQuery: true}, true
		}
		start = end
	}
	return Section{}, false
}

// staticWire packs a name's static RRsets, in the order of their types. A name whose RRsets
// do not fit the index (more than 255 types, or 64 KiB of records, which no answer holds)
// gets none: the slow path answers it.
func staticWire(rrsets map[uint16][]dns.RR) StaticWire {
	types := make([]uint16, 0, len(rrsets))
	for t, rrs := range rrsets {
		if len(rrs) > 0 {
			types = append(types, t)
		}
	}
	if len(types) == 0 || len(types) > 255 {
		return StaticWire{}
	}
	slices.Sort(types)
	sections := make([]Section, len(types))
	size := 1 + len(types)*staticIndexEntry
	records := 0
	for i, t := range types {
		sections[i] = packSection(rrsets[t], true)
		records += len(sections[i].Wire)
	}
	if records > 0xffff {
		return StaticWire{}
	}
	b := make([]byte, 1, size+records)
	b[0] = byte(len(types))
	end := 0
	for i, t := range types {
		end += len(sections[i].Wire)
		b = binary.BigEndian.AppendUint16(b, t)
		b = binary.BigEndian.AppendUint16(b, uint16(sections[i].Count))
		b = binary.BigEndian.AppendUint16(b, uint16(end))
	}
	for _, s := range sections {
		b = append(b, s.Wire...)
	}
	return StaticWire{b: b}
}

// ReferralWire is a delegation's referral in wire form: its NS RRset for the authority
// section, and the zone's static addresses of its name servers for the additional section,
// which the GSLB records among them (Delegation.GlueRecords) follow, made per query from
// their healthy backends, named GlueOwners.
type ReferralWire struct {
	NS, Glue Section
	// GlueOwners are the names of GlueRecords in wire form, in their order.
	GlueOwners [][]byte
}

// buildWire packs d's referral.
func (d *Delegation) buildWire() {
	w := &ReferralWire{NS: packSection(d.NS, false), Glue: packSection(d.Glue, false)}
	for _, rec := range d.GlueRecords {
		name := make([]byte, 255)
		end, err := dns.PackDomainName(rec.Name(), name, 0, nil, false)
		if err != nil {
			name, end = nil, 0
		}
		w.GlueOwners = append(w.GlueOwners, name[:end:end])
	}
	d.Wire = w
}

// AddressOf returns the address of rr as an answer writes it: an A record's 4 bytes, an AAAA
// record's 16; nil for any other record.
func AddressOf(rr dns.RR) []byte {
	switch x := rr.(type) {
	case *dns.A:
		return x.A.To4()
	case *dns.AAAA:
		return x.AAAA
	}
	return nil
}
