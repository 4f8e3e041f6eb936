// Package proxy rewrites the address answers of an upstream authoritative server by the health
// and steering of the backends Meridian monitors: the proxy model, where the operator's own DNS
// (BIND, Knot, NSD, a hidden primary) stays authoritative and Meridian, in front of it, filters
// and orders the A and AAAA records of the names its zone files list.
//
// For every A or AAAA RRset of the upstream answer section whose owner is a record of a served
// zone, Rewrite asks what Meridian itself would answer for that name, type and client
// (answer.Respond on a synthesized query) and then keeps:
//
//   - the upstream's monitored addresses (those of the record's backends) that Meridian's answer
//     holds, in the order of Meridian's answer: health filters them, the mode orders them, and
//     chain's max_answers cuts them;
//   - then the addresses Meridian does not monitor, in the upstream's order.
//
// When the upstream RRset had monitored addresses and none is left, the RRset is what Meridian
// answers for the name: its fallback policy (fail-open's enabled backends, fail-specific's IPs
// or CNAME, last-known-good's backends, or fail-closed's rcode with the zone's SOA).
//
// The RRset keeps the upstream's TTL, lowered to the TTL of Meridian's answer (the record's
// health-driven TTL) when that is lower. Everything else passes unchanged: the header (AA among
// it), the other records of the answer section, the authority and additional sections, and
// whole responses that are not a NOERROR answer to a query or that are truncated. An RRset
// covered by an RRSIG in the answer section is never rewritten: a validating resolver would
// reject a changed RRset under the upstream's signature.
//
// Rewrite reads the snapshot only: no lock, no source, no I/O.
package proxy

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/answer"
	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/geo"
)

// maxInlineRRset is how many records of an RRset fit the stack buffer of a rewrite; larger
// RRsets spill to the heap.
const maxInlineRRset = 16

// Client is the query the upstream answered and whom it came from: what Meridian's own answer
// is computed for.
type Client struct {
	// Request is the client's query; its OPT record (EDNS Client Subnet among its options)
	// goes with the synthesized queries. Nil for none.
	Request *dns.Msg
	// Source is the transport address of the client.
	Source netip.Addr
	// Geo are the GeoIP sources that the geo modes read; nil when none are configured.
	Geo *geo.Sources
}

// Rewrite rewrites the address RRsets of upstream, in place, by the health and steering of
// snap's records, as the package comment describes, for the client c with the answer options
// opts. It reports whether it changed the message.
func Rewrite(upstream *dns.Msg, snap *catalog.Snapshot, opts answer.Options, c Client) bool {
	if snap == nil || !upstream.Response || upstream.Opcode != dns.OpcodeQuery ||
		upstream.Rcode != dns.RcodeSuccess || upstream.Truncated {
		return false
	}
	changed := false
	// Each RRset is rewritten at its first record; the answer section may change under the
	// loop (an RRset shrinks, or fallback records replace it), so i indexes the current one.
	for i := 0; i < len(upstream.Answer); i++ {
		h := upstream.Answer[i].Header()
		if (h.Rrtype != dns.TypeA && h.Rrtype != dns.TypeAAAA) || h.Class != dns.ClassINET || seenBefore(upstream.Answer[:i], h) {
			continue
		}
		n, ok := rewriteRRset(upstream, i, snap, opts, c)
		if ok {
			changed = true
		}
		i += n - 1
		if upstream.Rcode != dns.RcodeSuccess {
			break // fail-closed answered for the whole response
		}
	}
	return changed
}

// seenBefore reports whether rrs holds a record of the RRset of h: an RRset is rewritten once,
// at its first record.
func seenBefore(rrs []dns.RR, h *dns.RR_Header) bool {
	for _, rr := range rrs {
		if sameRRset(rr.Header(), h) {
			return true
		}
	}
	return false
}

func sameRRset(a, b *dns.RR_Header) bool {
	return a.Rrtype == b.Rrtype && a.Class == b.Class && strings.EqualFold(a.Name, b.Name)
}

// rewriteRRset rewrites the RRset whose first record is m.Answer[at]. It returns how many
// records from at on are of the RRset afterwards (0 when it is gone; the records of an
// unchanged RRset that come after another record are skipped by seenBefore) and whether it
// changed m.
func rewriteRRset(m *dns.Msg, at int, snap *catalog.Snapshot, opts answer.Options, c Client) (int, bool) {
	h := *m.Answer[at].Header()
	unchanged := run(m.Answer[at:], &h)
	rec := record(snap, h.Name)
	if rec == nil || signed(m.Answer, &h) {
		return unchanged, false
	}
	var buf [maxInlineRRset]dns.RR
	rrset := collect(buf[:0], m.Answer[at:], &h)
	f, _ := catalog.FamilyOf(h.Rrtype)
	if !slices.ContainsFunc(rrset, func(rr dns.RR) bool { return isMonitored(rec, f, addrOf(rr)) }) {
		return unchanged, false
	}
	ours, res := answer.Respond(snap, opts, answer.Query{Msg: synthesize(c.Request, h.Name, h.Rrtype), Source: c.Source, TCP: true, Geo: c.Geo})
	if ours == nil || res == answer.NotOurs {
		return unchanged, false
	}
	kept := make([]dns.RR, 0, len(rrset))
	for _, rr := range ours.Answer {
		if rr.Header().Rrtype != h.Rrtype {
			continue
		}
		a := addrOf(rr)
		for _, u := range rrset {
			if addrOf(u) == a && !contains(kept, a) {
				kept = append(kept, u)
				break
			}
		}
	}
	for _, u := range rrset {
		if !isMonitored(rec, f, addrOf(u)) {
			kept = append(kept, u)
		}
	}
	if len(kept) == 0 {
		return fallback(m, at, &h, ours), true
	}
	lowered := false
	if ttl, ok := minTTL(ours.Answer); ok {
		lowered = capTTL(kept, ttl)
	}
	if !lowered && slices.Equal(kept, rrset) {
		return unchanged, false
	}
	replace(m, at, &h, kept)
	return len(kept), true
}

// fallback answers the RRset of h, which starts at m.Answer[at], with Meridian's own answer
// ours: its records, or its rcode and SOA when it is an error (fail-closed). It returns how
// many records replace the RRset.
func fallback(m *dns.Msg, at int, h *dns.RR_Header, ours *dns.Msg) int {
	if ours.Rcode != dns.RcodeSuccess {
		m.Rcode = ours.Rcode
		replace(m, at, h, nil)
		m.Ns = ours.Ns
		return 0
	}
	for _, rr := range ours.Answer {
		rr.Header().Name = h.Name // the upstream's spelling of the owner
	}
	replace(m, at, h, ours.Answer)
	if len(m.Answer) == 0 {
		// NODATA now: the zone's SOA says for how long (RFC 2308).
		m.Ns = ours.Ns
	}
	return len(ours.Answer)
}

// run returns how many records at the start of rrs are of the RRset of h.
func run(rrs []dns.RR, h *dns.RR_Header) int {
	n := 0
	for n < len(rrs) && sameRRset(rrs[n].Header(), h) {
		n++
	}
	return n
}

// collect appends the records of the RRset of h in rrs to dst, in order.
func collect(dst, rrs []dns.RR, h *dns.RR_Header) []dns.RR {
	for _, rr := range rrs {
		if sameRRset(rr.Header(), h) {
			dst = append(dst, rr)
		}
	}
	return dst
}

// replace removes every record of the RRset of h from m's answer section and puts with in the
// place of the first, at.
func replace(m *dns.Msg, at int, h *dns.RR_Header, with []dns.RR) {
	out := make([]dns.RR, 0, len(m.Answer)-1+len(with))
	out = append(out, m.Answer[:at]...)
	out = append(out, with...)
	for _, rr := range m.Answer[at:] {
		if !sameRRset(rr.Header(), h) {
			out = append(out, rr)
		}
	}
	m.Answer = out
}

// signed reports whether an RRSIG of rrs covers the RRset of h.
func signed(rrs []dns.RR, h *dns.RR_Header) bool {
	for _, rr := range rrs {
		if sig, ok := rr.(*dns.RRSIG); ok && sig.TypeCovered == h.Rrtype && strings.EqualFold(sig.Hdr.Name, h.Name) {
			return true
		}
	}
	return false
}

// record returns the record of snap that answers name (exactly or by a wildcard), nil when
// name is in no served zone or is no record.
func record(snap *catalog.Snapshot, name string) *catalog.Record {
	name = strings.ToLower(name)
	z := snap.Zone(name)
	if z == nil {
		return nil
	}
	rec, _, _ := z.Lookup(name)
	return rec
}

// isMonitored reports whether a is the address of a backend of rec in family f.
func isMonitored(rec *catalog.Record, f catalog.Family, a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	for _, b := range rec.Backends {
		if ip := b.Config.IP; ip.IsValid() && ip.Is4() == (f == catalog.IPv4) && ip == a {
			return true
		}
	}
	return false
}

// addrOf returns the address of an A or AAAA record, the zero Addr for other records.
func addrOf(rr dns.RR) netip.Addr {
	switch x := rr.(type) {
	case *dns.A:
		if a, ok := netip.AddrFromSlice(x.A); ok {
			return a.Unmap()
		}
	case *dns.AAAA:
		if a, ok := netip.AddrFromSlice(x.AAAA); ok && len(x.AAAA) == 16 {
			return a
		}
	}
	return netip.Addr{}
}

// contains reports whether rrs holds a record of address a.
func contains(rrs []dns.RR, a netip.Addr) bool {
	for _, rr := range rrs {
		if addrOf(rr) == a {
			return true
		}
	}
	return false
}

// minTTL returns the lowest TTL of rrs, false when rrs is empty.
func minTTL(rrs []dns.RR) (uint32, bool) {
	if len(rrs) == 0 {
		return 0, false
	}
	ttl := rrs[0].Header().Ttl
	for _, rr := range rrs[1:] {
		ttl = min(ttl, rr.Header().Ttl)
	}
	return ttl, true
}

// capTTL lowers the TTL of every record of rrs to at most ttl, and reports whether it lowered
// one.
func capTTL(rrs []dns.RR, ttl uint32) bool {
	lowered := false
	for _, rr := range rrs {
		if h := rr.Header(); h.Ttl > ttl {
			h.Ttl, lowered = ttl, true
		}
	}
	return lowered
}

// synthesize returns the query Meridian answers for the RRset of name and qtype: the question,
// with the OPT record of the client's request req (nil for none).
func synthesize(req *dns.Msg, name string, qtype uint16) *dns.Msg {
	q := &dns.Msg{Question: []dns.Question{{Name: name, Qtype: qtype, Qclass: dns.ClassINET}}}
	q.Opcode = dns.OpcodeQuery
	if req != nil {
		q.Id = req.Id
		if o := req.IsEdns0(); o != nil {
			q.Extra = []dns.RR{o}
		}
	}
	return q
}
