// Package axfr turns a gslb zone into the records of a zone transfer (AXFR, and IXFR answered
// in full), for secondaries that serve it without steering: the SOA, the apex's NS, the static
// records, and each GSLB record's current answer, every healthy backend of each family (or
// what the record's fallback policy answers when none is). A Versioner raises a zone's SOA
// serial whenever that content changes, so that secondaries transfer it again, and says which
// zones to NOTIFY.
package axfr

import (
	"hash/fnv"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/answer"
	"github.com/meridian-gslb/meridian/internal/catalog"
)

// Records returns the records of the zone with origin in snap as a transfer carries them,
// starting with the SOA (at the zone's current serial) and without the closing SOA; nil when
// snap has no such zone.
func Records(snap *catalog.Snapshot, origin string) []dns.RR {
	z := snap.ZoneOf(origin)
	if z == nil {
		return nil
	}
	out := []dns.RR{z.SOARecord()}
	for _, ns := range z.NS {
		out = append(out, dns.Copy(ns))
	}
	for _, rr := range z.Static() {
		out = append(out, dns.Copy(rr))
	}
	for _, rec := range snap.Records() {
		if rec.Zone == z {
			out = append(out, recordRRs(snap, rec)...)
		}
	}
	return out
}

// recordRRs returns what a secondary serves for rec: for each family, its healthy address
// backends (with the family's current TTL), a CNAME when its first healthy backend is a host
// name, or, when the family has none healthy and the fallback applies, what gslb answers for
// it (the fallback policy's addresses or CNAME; nothing for the policies that answer an error).
func recordRRs(snap *catalog.Snapshot, rec *catalog.Record) []dns.RR {
	v := rec.View()
	var out []dns.RR
	for f := catalog.IPv4; f <= catalog.IPv6; f++ {
		healthy := v.Healthy[f]
		switch {
		case len(healthy) > 0 && healthy[0].Config.IsHost():
			if f == catalog.IPv4 {
				out = append(out, healthy[0].NewRR("", v.TTL[f]))
			}
		case len(healthy) > 0:
			for _, b := range healthy {
				if !b.Config.IsHost() {
					out = append(out, b.NewRR("", v.TTL[f]))
				}
			}
		case v.FallbackApplies(f):
			out = append(out, fallback(snap, rec, f)...)
		}
	}
	return dedupe(out)
}

// fallback returns the answer records gslb gives for rec's family f from no client in
// particular: the fallback policy's.
func fallback(snap *catalog.Snapshot, rec *catalog.Record, f catalog.Family) []dns.RR {
	qtype := dns.TypeA
	if f == catalog.IPv6 {
		qtype = dns.TypeAAAA
	}
	m := new(dns.Msg)
	m.SetQuestion(rec.Name(), qtype)
	resp, _ := answer.Respond(snap, answer.Options{}, answer.Query{Msg: m, Source: netip.IPv4Unspecified(), TCP: true})
	if resp == nil || resp.Rcode != dns.RcodeSuccess {
		return nil
	}
	var out []dns.RR
	for _, rr := range resp.Answer {
		if strings.EqualFold(rr.Header().Name, rec.Name()) {
			out = append(out, rr)
		}
	}
	return out
}

// dedupe drops the records of rrs that repeat an earlier one (a CNAME both families answer).
func dedupe(rrs []dns.RR) []dns.RR {
	out := rrs[:0]
	for i, rr := range rrs {
		if !slices.ContainsFunc(rrs[:i], func(prev dns.RR) bool { return dns.IsDuplicate(prev, rr) }) {
			out = append(out, rr)
		}
	}
	return out
}

// Versioner keeps each zone's transfer serial: it raises it whenever the zone's content
// changes, to the larger of the last serial plus one, the time in Unix seconds and the zone
// file's serial, so that serials only grow, across reloads and (by the clock) restarts.
type Versioner struct {
	mu    sync.Mutex
	zones map[string]*version
	now   func() time.Time
	// raised are the origins whose serial was raised since the last Raised.
	raised []string
}

// version is what a Versioner knows of one zone.
type version struct {
	zone    *catalog.Zone // the zone object last seen: a reload makes a new one
	changes uint64        // its Changes when last hashed
	hash    uint64        // of the content, without the serial
	serial  uint32
}

// NewVersioner returns a Versioner that knows no zone yet.
func NewVersioner() *Versioner {
	return &Versioner{zones: map[string]*version{}, now: time.Now}
}

// Update brings every zone of snap up to date: a zone whose records changed since the last
// call is hashed again, and when its content differs its serial is raised; a zone of a new
// snapshot gets the serial its content had, or a raised one. It sets each zone's serial, and
// notes the origins whose serial was raised (none at a zone's first sight) for Raised.
func (v *Versioner) Update(snap *catalog.Snapshot) {
	v.mu.Lock()
	defer v.mu.Unlock()
	seen := map[string]bool{}
	for _, origin := range snap.Origins() {
		seen[origin] = true
		z := snap.ZoneOf(origin)
		ver := v.zones[origin]
		if ver != nil && ver.zone == z && ver.changes == z.Changes() {
			continue
		}
		changes := z.Changes()
		h := contentHash(snap, origin)
		switch {
		case ver == nil:
			ver = &version{serial: max(z.SOA.Serial, uint32(v.now().Unix()))}
			v.zones[origin] = ver
		case h != ver.hash || z.SOA.Serial > ver.serial:
			ver.serial = max(ver.serial+1, uint32(v.now().Unix()), z.SOA.Serial)
			if !slices.Contains(v.raised, origin) {
				v.raised = append(v.raised, origin)
			}
		}
		ver.zone, ver.changes, ver.hash = z, changes, h
		z.SetSerial(ver.serial)
	}
	for origin := range v.zones {
		if !seen[origin] {
			delete(v.zones, origin)
		}
	}
}

// Raised returns the origins whose serial Update raised since the last call, sorted, and
// forgets them.
func (v *Versioner) Raised() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := v.raised
	v.raised = nil
	slices.Sort(out)
	return out
}

// contentHash hashes the zone's transfer records, the SOA's serial aside.
func contentHash(snap *catalog.Snapshot, origin string) uint64 {
	h := fnv.New64a()
	for i, rr := range Records(snap, origin) {
		if i == 0 {
			soa := *rr.(*dns.SOA)
			soa.Serial = 0
			rr = &soa
		}
		h.Write([]byte(rr.String()))
		h.Write([]byte{'\n'})
	}
	return h.Sum64()
}

// Transfer returns the records answering a transfer of the zone with origin at serial (0: an
// AXFR; otherwise an IXFR from that serial): the SOA alone when serial is the current one or
// newer (RFC 1995: the secondary is up to date), or the whole zone between two SOAs (an
// AXFR-style answer, which RFC 1995 allows for any IXFR). ok is false when snap has no such
// zone.
func Transfer(snap *catalog.Snapshot, origin string, serial uint32) (rrs []dns.RR, ok bool) {
	records := Records(snap, origin)
	if records == nil {
		return nil, false
	}
	soa := records[0].(*dns.SOA)
	if serial != 0 && !serialLess(serial, soa.Serial) {
		return []dns.RR{soa}, true
	}
	return append(records, dns.Copy(soa)), true
}

// serialLess reports whether a precedes b in serial number arithmetic (RFC 1982).
func serialLess(a, b uint32) bool {
	return a != b && (a < b && b-a < 1<<31 || a > b && a-b > 1<<31)
}
