// Package catalog compiles validated zone configurations into the immutable view the query path
// reads: zones matched on label boundaries, records found by exact name or wildcard, prebuilt
// static and fallback resource records (a backend's answer record is made for each answer),
// and per-record candidate sets that are rebuilt when health changes.
package catalog

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/published"
)

// HealthSource hands out the shared health word of a backend. It returns the same word for the
// same key across snapshots, so that a reload keeps the state of unchanged backends. One that
// also has States(keys []string, states []*health.State), which sets states[i] to the word of
// keys[i], and is safe for concurrent use (health.Manager) is asked for many words at a time,
// from every core.
type HealthSource interface {
	State(key string) *health.State
}

// Snapshot is one immutable compilation of every zone of a gslb block.
type Snapshot struct {
	zones map[string]*Zone
	// fewZones are the zones by origin, longest first, when there are at most maxFewZones of
	// them: Zone compares the query name's end with each instead of hashing every suffix.
	fewZones  []*Zone
	records   []*Record
	heartbeat *published.Served // nil unless sites are on
}

// Zone is one served zone.
type Zone struct {
	Origin string
	SOA    *dns.SOA
	// NegativeSOA is the SOA of NXDOMAIN and NODATA answers: its TTL is the smaller of the SOA's
	// TTL and minimum, the negative caching time of RFC 2308.
	NegativeSOA *dns.SOA
	NS          []*dns.NS
	nodes       map[string]*node
	// serial is the SOA serial answered, SOA.Serial until zone transfers change it (SetSerial).
	serial atomic.Uint32
	// changes counts the refreshes of the zone's records: what it answers may have changed.
	changes atomic.Uint64
	// static are the zone's static records, in file order.
	static []dns.RR
	// watches are the AnswerWatches set on its records (Record.Watch).
	watches watches
	// signing is how the zone is signed (DNSSEC, signed.go); nil for an unsigned zone.
	signing *zoneSigning
	// wire are the zone's templates (wire.go), packed again when the serial changes.
	wire atomic.Pointer[ZoneWire]
}

// clone returns a copy of z with a name tree of its own, to relink records in.
func (z *Zone) clone() *Zone {
	c := &Zone{Origin: z.Origin, SOA: z.SOA, NegativeSOA: z.NegativeSOA, NS: z.NS, nodes: maps.Clone(z.nodes), static: z.static}
	c.serial.Store(z.serial.Load())
	c.wire.Store(z.wire.Load())
	return c
}

// Static returns the zone's static records (static:), in file order. They must not be changed.
func (z *Zone) Static() []dns.RR { return z.static }

// SOARecord returns a copy of the zone's SOA with its current serial.
func (z *Zone) SOARecord() *dns.SOA {
	soa := *z.SOA
	soa.Serial = z.serial.Load()
	return &soa
}

// NegativeSOARecord returns a copy of the SOA of the zone's negative answers (NegativeSOA)
// with its current serial.
func (z *Zone) NegativeSOARecord() *dns.SOA {
	soa := *z.NegativeSOA
	soa.Serial = z.serial.Load()
	return &soa
}

// Serial returns the zone's current SOA serial.
func (z *Zone) Serial() uint32 { return z.serial.Load() }

// SetSerial makes serial the zone's SOA serial: zone transfers raise it when what the zone
// answers changed, so that secondaries transfer it again.
func (z *Zone) SetSerial(serial uint32) {
	if z.serial.Swap(serial) != serial {
		z.buildWire()
		if z.signing != nil {
			z.resignSOA(time.Now())
		}
	}
}

// Changes returns how many times one of the zone's records was refreshed: when it did not
// move, neither did what the zone answers.
func (z *Zone) Changes() uint64 { return z.changes.Load() }

// node is a name that exists in a zone: a record's name, a name with static records, or an
// empty non-terminal above one.
type node struct {
	record   *Record // nil for empty non-terminals, static names and a record-less apex
	wildcard *Record // the record named "*." + this name, if any
	// static is the name's static data; nil for none.
	static *staticNode
	// cut is the delegation this name is at or below; nil for none.
	cut *Delegation
}

// Build compiles zones into a snapshot. Health words come from hs.
func Build(zones []*config.Zone, hs HealthSource) (*Snapshot, error) {
	s, err := BuildUnviewed(zones, hs)
	if err != nil {
		return nil, err
	}
	for _, r := range s.records {
		r.Refresh()
	}
	return s, nil
}

// BuildUnviewed is Build but for the records' views: none is built yet, and the caller must
// Refresh every record before it reads one or publishes the snapshot. A load that sets the
// backends' overrides and health after the build refreshes every record once, not twice.
func BuildUnviewed(zones []*config.Zone, hs HealthSource) (*Snapshot, error) {
	s := &Snapshot{zones: make(map[string]*Zone, len(zones))}
	for _, zc := range zones {
		if _, dup := s.zones[zc.Origin]; dup {
			return nil, fmt.Errorf("zone %s is configured twice (second in %s)", zc.Origin, zc.File)
		}
		z := newZone(zc)
		s.zones[zc.Origin] = z
		s.addRecords(z, zc.Records, hs)
		if err := z.addStatic(zc); err != nil {
			return nil, err
		}
	}
	s.indexZones()
	return s, nil
}

// maxFewZones is the most zones Zone finds by comparing names' ends: up to it, a few string
// comparisons cost less than hashing the query name's suffixes.
const maxFewZones = 4

// indexZones sets fewZones from zones.
func (s *Snapshot) indexZones() {
	s.fewZones = nil
	if len(s.zones) > maxFewZones {
		return
	}
	for _, z := range s.zones {
		s.fewZones = append(s.fewZones, z)
	}
	slices.SortFunc(s.fewZones, func(a, b *Zone) int { return len(b.Origin) - len(a.Origin) })
}

func newZone(zc *config.Zone) *Zone {
	z := &Zone{
		Origin: zc.Origin,
		SOA: &dns.SOA{
			Hdr:     dns.RR_Header{Name: zc.Origin, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: zc.SOA.TTL},
			Ns:      zc.SOA.MName,
			Mbox:    zc.SOA.RName,
			Serial:  zc.SOA.Serial,
			Refresh: zc.SOA.Refresh,
			Retry:   zc.SOA.Retry,
			Expire:  zc.SOA.Expire,
			Minttl:  zc.SOA.Minimum,
		},
		nodes: make(map[string]*node, len(zc.Records)+1),
	}
	z.nodes[zc.Origin] = &node{}
	neg := *z.SOA
	neg.Hdr.Ttl = min(zc.SOA.TTL, zc.SOA.Minimum)
	z.NegativeSOA = &neg
	z.serial.Store(zc.SOA.Serial)
	for _, ns := range zc.NS {
		z.NS = append(z.NS, &dns.NS{
			Hdr: dns.RR_Header{Name: zc.Origin, Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: zc.SOA.TTL},
			Ns:  ns,
		})
	}
	z.buildWire()
	return z
}

// add links r into the zone's name tree, creating empty non-terminals up to the apex.
func (z *Zone) add(r *Record) {
	z.nodeFor(r.Name()).record = r
	if parent, ok := strings.CutPrefix(r.Name(), "*."); ok {
		z.nodeFor(parent).wildcard = r
	}
	z.addParents(r.Name())
}

// addParents creates the empty non-terminals between name and the apex.
func (z *Zone) addParents(name string) {
	for off, end := dns.NextLabel(name, 0); !end && len(name)-off > len(z.Origin); off, end = dns.NextLabel(name, off) {
		z.nodeFor(name[off:])
	}
}

func (z *Zone) nodeFor(name string) *node {
	n, ok := z.nodes[name]
	if !ok {
		n = &node{}
		z.nodes[name] = n
	}
	return n
}

// Zone returns the zone that qname belongs to (the longest origin that is a label-boundary
// suffix of qname), or nil. qname must be lower case and fully qualified.
func (s *Snapshot) Zone(qname string) *Zone {
	if s.fewZones != nil {
		for _, z := range s.fewZones {
			if endsInZone(qname, z.Origin) {
				return z
			}
		}
		return nil
	}
	for off, end := 0, false; !end; off, end = dns.NextLabel(qname, off) {
		if z, ok := s.zones[qname[off:]]; ok {
			return z
		}
	}
	if z, ok := s.zones["."]; ok {
		return z
	}
	return nil
}

// endsInZone reports whether qname (lower case, in presentation form) is origin or below it, on
// a label boundary: the dot before origin is not escaped, as dns.NextLabel splits names.
func endsInZone(qname, origin string) bool {
	n := len(qname) - len(origin)
	switch {
	case origin == ".":
		return true
	case n < 0 || qname[n:] != origin:
		return false
	case n == 0:
		return true
	case qname[n-1] != '.':
		return false
	}
	escapes := 0
	for i := n - 2; i >= 0 && qname[i] == '\\'; i-- {
		escapes++
	}
	return escapes%2 == 0
}

// ZoneOf returns the zone whose origin is origin (lower case, fully qualified), nil when the
// snapshot has none.
func (s *Snapshot) ZoneOf(origin string) *Zone { return s.zones[origin] }

// Origins returns the origins of the snapshot's zones, sorted.
func (s *Snapshot) Origins() []string {
	out := make([]string, 0, len(s.zones))
	for origin := range s.zones {
		out = append(out, origin)
	}
	slices.Sort(out)
	return out
}

// Records returns every record of the snapshot.
func (s *Snapshot) Records() []*Record { return s.records }

// Zones returns the number of zones in the snapshot.
func (s *Snapshot) Zones() int { return len(s.zones) }

// Lookup finds qname, a lower-case name inside the zone. exists is false when the name does not
// exist (NXDOMAIN). rec is nil for names that exist without a record (the apex, empty
// non-terminals, static names); wildcard is true when rec was found through a wildcard
// (RFC 4592). Find tells more: static data and delegations.
func (z *Zone) Lookup(qname string) (rec *Record, exists, wildcard bool) {
	f := z.Find(qname)
	return f.Record, f.Exists, f.Wildcard
}
