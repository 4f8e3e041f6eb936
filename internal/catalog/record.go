package catalog

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/published"
)

// Family is an address family of answers: IPv4 (A) or IPv6 (AAAA).
type Family int

// The address families, usable as array indexes.
const (
	IPv4 Family = iota
	IPv6
)

// FamilyOf returns the family asked for by a query type, and false for other types.
func FamilyOf(qtype uint16) (Family, bool) {
	switch qtype {
	case dns.TypeA:
		return IPv4, true
	case dns.TypeAAAA:
		return IPv6, true
	}
	return 0, false
}

// Record is one compiled GSLB record.
type Record struct {
	Config   *config.Record
	Zone     *Zone
	Backends []*Backend
	// extra is what the fail-specific and last-known-good fallbacks answer from, and the
	// localtargets answers of a record that publishes; nil for the other records, the most
	// common case.
	extra *recordExtra

	// Activity is marked by queries of the record; the health scheduler takes the mark to
	// probe records nobody asks for less often.
	Activity health.Activity

	counter   atomic.Uint64 // roundrobin rotation, kept across health changes
	view      atomic.Pointer[View]
	refreshMu sync.Mutex  // serialises writers of view; never taken by queries
	ramp      *time.Timer // refreshes the record while a backend ramps (slowstart.go); under refreshMu

	// counts are the query counters of CountAnswer and CountSelected, allocated at the first
	// count: only CoreDNS-GSLB's metrics count, and most records of a big zone are never
	// asked for, so most records never carry them (about 300 bytes a record and 70 a
	// backend). An allocation of their own (of a size class that neither the records, their
	// views nor their backends have), the counters that every query writes are kept apart
	// from what queries read.
	counts atomic.Pointer[queryCounts]
}

// recordExtra are the answers only some records have: what a record with the fail-specific or
// last-known-good fallback answers from while it is down, and the localtargets answers of a
// record that publishes.
type recordExtra struct {
	// ips are the fail-specific addresses, prebuilt as A and AAAA records by family.
	ips [2][]dns.RR
	// cname is the fail-specific CNAME, or nil.
	cname *dns.CNAME
	// lastGood is, per family, the backends that were healthy the last time any was, for the
	// last-known-good fallback; Refresh keeps it, under the record's refreshMu.
	lastGood [2][]*Backend
	// published is, by the backend's index in Record.Backends, its address named
	// localtargets-<record>: for the backends of this site of a record that publishes
	// (config.Record.Publish) that have an address; nil for the others.
	published []dns.RR
}

// publishedRR returns the localtargets answer of the record's backend i, or nil.
func (r *Record) publishedRR(i int) dns.RR {
	if r.extra == nil || i >= len(r.extra.published) {
		return nil
	}
	return r.extra.published[i]
}

// FallbackIPs returns the fail-specific addresses of family f, prebuilt as A or AAAA records;
// nil when there are none.
func (r *Record) FallbackIPs(f Family) []dns.RR {
	if r.extra == nil {
		return nil
	}
	return r.extra.ips[f]
}

// FallbackCNAME returns the fail-specific CNAME, or nil.
func (r *Record) FallbackCNAME() *dns.CNAME {
	if r.extra == nil {
		return nil
	}
	return r.extra.cname
}

// newRecord builds the record of rc in zone z. Its probed backends' health words come from
// words: they may be set only at its next flush.
func newRecord(z *Zone, rc *config.Record, words *stateWords) *Record {
	r := &Record{Config: rc, Zone: z, Backends: make([]*Backend, 0, len(rc.Backends))}
	backends := make([]Backend, len(rc.Backends)) // one allocation for the record's backends
	for i := range rc.Backends {
		bc := &rc.Backends[i]
		b := &backends[i]
		*b = Backend{Config: bc, record: r, index: int32(i), State: unprobedState}
		if bc.Probed() {
			words.set(config.BackendKey(rc.Name, bc), &b.State) // the health source keeps the key
		}
		if rc.Publish && !bc.Remote && bc.IP.IsValid() {
			if r.extra == nil {
				r.extra = &recordExtra{published: make([]dns.RR, len(rc.Backends))}
			}
			r.extra.published[i] = addressRR(published.LocalTargetsPrefix+rc.Name, rc.TTL, bc)
		}
		r.Backends = append(r.Backends, b)
	}
	fb := &rc.Settings().Fallback
	if m := fb.Mode; m != config.FallbackFailSpecific && m != config.FallbackLastKnownGood {
		return r
	}
	if r.extra == nil {
		r.extra = &recordExtra{}
	}
	for _, ip := range fb.IPs {
		f := IPv6
		if ip.Is4() {
			f = IPv4
		}
		r.extra.ips[f] = append(r.extra.ips[f], addressRR(rc.Name, rc.TTL, &config.Backend{IP: ip}))
	}
	if fb.CNAME != "" {
		r.extra.cname = &dns.CNAME{Hdr: header(rc.Name, dns.TypeCNAME, rc.TTL), Target: fb.CNAME}
	}
	return r
}

func header(name string, rrtype uint16, ttl uint32) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: rrtype, Class: dns.ClassINET, Ttl: ttl}
}

func addressRR(name string, ttl uint32, b *config.Backend) dns.RR {
	switch {
	case !b.IP.IsValid():
		return &dns.CNAME{Hdr: header(name, dns.TypeCNAME, ttl), Target: b.Address}
	case b.IP.Is4():
		rr := &aRecord{}
		rr.ip = b.IP.As4()
		rr.A = dns.A{Hdr: header(name, dns.TypeA, ttl), A: rr.ip[:]}
		return &rr.A
	default:
		rr := &aaaaRecord{}
		rr.ip = b.IP.As16()
		rr.AAAA = dns.AAAA{Hdr: header(name, dns.TypeAAAA, ttl), AAAA: rr.ip[:]}
		return &rr.AAAA
	}
}

// aRecord and aaaaRecord are an address record and the bytes of its address, made in one
// allocation.
type (
	aRecord struct {
		dns.A
		ip [4]byte
	}
	aaaaRecord struct {
		dns.AAAA
		ip [16]byte
	}
)

// Name returns the record's name: its configuration's (a copy of its own took 16 bytes a
// record).
func (r *Record) Name() string { return r.Config.Name }

// MarkQueried notes that the record was queried (see health.Activity.Mark).
func (r *Record) MarkQueried() { r.Activity.Mark() }
