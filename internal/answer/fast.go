package answer

import (
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/cookie"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/published"
)

// AppendFast answers pkt, a query from the transport address src (over TCP when tcp is set,
// pkt then being one message without its length prefix), straight from the wire: when it
// handles the query, it appends the response to dst and returns it and true; otherwise it
// returns dst unchanged and false, having done nothing (no counting, no rotation, no record
// marked queried), and the query must take the normal path (Respond, through CoreDNS), which
// stays the reference.
//
// The response is byte for byte what Respond puts on the wire for the same query and client
// (Query.Source src.Unmap(), Query.TCP tcp): the packed dns.Msg, uncompressed as CoreDNS
// writes answers that fit, the question echoed as sent, the reply OPT record of replyOPT. The
// records that do not depend on the query are copied from the snapshot's wire templates
// (catalog.Section): the zone's SOA and NS and its negative SOA, static RRsets, referrals.
// With opts.Count it counts address answers as Respond does, and it marks the record
// queried where Respond does.
//
// It handles a QUERY with one question (QR, TC clear, no answer or authority records), class
// IN, of any type but DS, ANY, the transfers, OPT and the meta types, of a plain name
// (letters, digits, hyphens and underscores, uncompressed) in a served zone and not below a
// zone of opts.Exclude, with no trailing bytes and at most one additional record: an OPT
// record of EDNS version 0 with no option but a COOKIE option of 8 to 40 bytes and, with
// opts.UseECS, one valid Client Subnet option. With opts.Cookies, the reply carries the
// client cookie and a new server cookie made at now, and with opts.RequireCookie a UDP query
// without a valid server cookie gets BADCOOKIE. With opts.Limit, a UDP response goes through
// the rate limiter at now: when it drops it, AppendFast returns dst unchanged and true (send
// nothing); when it slips, the slip replaces the response. It answers:
//   - NXDOMAIN (but not for a name opts.Fallthrough covers, which the next plugin gets), and
//     NODATA, with the zone's negative SOA;
//   - the apex's SOA and NS, static RRsets of any type and static CNAMEs, referrals with
//     their glue (the GSLB records among the glue from their healthy backends);
//   - a GSLB record's A, AAAA and CNAME answers (its backends, host-name backends as a CNAME,
//     fallback addresses or CNAME, fail-closed), exact or through a wildcard; its SRV, HTTPS
//     and SVCB answers; NODATA for its other types (TXT with opts.EnableTXT is the slow
//     path's);
//
// in a response that fits the client's limit: over UDP 512 bytes without EDNS, else its
// buffer but at most 1232; over TCP maxFastTCP. A site's published names (with sites on)
// take the slow path, and so do, in a signed zone, the queries of the types keyType names,
// and with opts.PluginSigns (CoreDNS's dnssec plugin signs) those with the DO bit. In a zone
// Meridian's signer signs, it answers the DO queries whose signatures and NSEC records were
// prepared, each RRset followed by them as Respond adds them (fastsign.go), and leaves the
// others (NXDOMAIN, SRV, HTTPS, SVCB, an answer not prepared).
//
// src is the client's transport address, unmapped here as gslb.ClientOf does for Respond (so
// that a dual-stack socket's IPv4-mapped addresses select as IPv4 ones); sources are the GeoIP
// sources of the engine (nil when none). dst must not overlap pkt. AppendFast takes no lock.
// It allocates nothing when dst has room for the response, except where Respond's selection
// does too: more than 16 backends chosen, and a GeoIP database record decoded for the first
// time (the sources cache it).
func AppendFast(dst []byte, snap *catalog.Snapshot, opts *Options, pkt []byte, src netip.Addr, tcp bool, sources *geo.Sources, now time.Time) ([]byte, bool) {
	var a fastAnswer
	q := &a.q
	if snap == nil || !q.parse(pkt, opts.UseECS) {
		return dst, false
	}
	qname := q.lowerName()
	zone := snap.Zone(qname)
	if zone == nil || under(opts.Exclude, qname) || snap.Heartbeat() != nil && mayBePublished(qname) ||
		(opts.PluginSigns || zone.Signer() != nil) && keyType(q.qtype) || opts.PluginSigns && q.do {
		return dst, false // key types, and the DO queries the dnssec plugin signs, are the slow path's
	}
	src = src.Unmap()
	st := cookie.None
	if q.cookie != nil && opts.Cookies != nil { // one branch for a query without a cookie
		switch st = q.readCookie(opts.Cookies, src, now); {
		case st == cookie.Malformed:
			return dst, false // FORMERR
		case opts.RequireCookie && !tcp && st == cookie.ClientOnly:
			return q.errorReply(dst, dns.RcodeBadCookie, false), true
		}
	}
	if q.do {
		if zone.Signer() != nil {
			if a.signed = zone.Signed(); a.signed == nil {
				return dst, false
			}
		}
		q.co = q.co && a.signed != nil // the reply echoes CO when it is signed (builder.co)
	}
	q.limit = q.sizeLimit(tcp)
	a.zone, a.client, a.geo = zone, src, sources
	a.fallthroughZones, a.enableTXT, a.countAnswers, a.traffic = opts.Fallthrough, opts.EnableTXT, opts.Count, opts.Traffic
	if q.ecsClient.IsValid() {
		a.client = q.ecsClient
	}
	if opts.Limit == nil || tcp {
		return a.answer(dst, qname)
	}
	start := len(dst)
	dst, ok := a.answer(dst, qname)
	if !ok {
		return dst, false
	}
	return a.limit(dst, start, opts.Limit, st, qname, src, now), true
}

// fastAnswer is one query that AppendFast answers. The query is part of it, not behind a
// pointer, so that it stays on the stack with it.
type fastAnswer struct {
	q    fastQuery
	zone *catalog.Zone
	// fallthroughZones, enableTXT, countAnswers and traffic are the options answering reads
	// (Options' Fallthrough, EnableTXT, Count and Traffic), not a copy of them all.
	fallthroughZones                 []string
	enableTXT, countAnswers, traffic bool
	client                           netip.Addr
	geo                              *geo.Sources
	// cut is the delegation point of a referral, which rate limiting keeps accounts by.
	cut string
	// signed is the zone's prepared signatures for a DO query in a zone Meridian's signer
	// signs (fastsign.go), nil otherwise; wild, for such a query, the wildcard record that
	// answers it, nil for none.
	signed *catalog.SignedZone
	wild   *catalog.Record
}

// answer answers the query for qname as builder.answer does.
func (a *fastAnswer) answer(dst []byte, qname string) ([]byte, bool) {
	q, zone := &a.q, a.zone
	found := zone.Find(qname)
	if a.signed != nil && !a.signedKind(found) {
		return dst, false
	}
	if found.Cut != nil {
		return a.referral(dst, found.Cut) // DS queries, answered at the cut, are the slow path's
	}
	if !found.Exists {
		if under(a.fallthroughZones, qname) {
			return dst, false
		}
		return a.negative(dst, dns.RcodeNameError, 0, nil)
	}
	rec, apex, w := found.Record, qname == zone.Origin, zone.Wire()
	switch {
	case apex && q.qtype == dns.TypeSOA:
		if a.signed != nil {
			return a.static(dst, a.signed.SOA.Wire, &a.signed.SOA) // the SOA its signatures sign
		}
		return a.static(dst, w.SOA, nil)
	case apex && q.qtype == dns.TypeNS:
		return a.static(dst, w.NS, a.apexNS())
	}
	if found.Static != nil && (rec == nil || !addressType(q.qtype)) { // one branch for most names
		if s, t, answers, ok := staticSection(found, q.qtype); !ok {
			return dst, false
		} else if answers {
			return a.static(dst, s, a.staticSigned(qname, t))
		}
	}
	if rec == nil {
		return a.negative(dst, dns.RcodeSuccess, 0, nil)
	}
	switch q.qtype {
	case dns.TypeA, dns.TypeAAAA, dns.TypeCNAME:
		return a.address(dst, rec)
	case dns.TypeSRV, dns.TypeHTTPS, dns.TypeSVCB:
		if a.signed != nil {
			return dst, false // signed on demand (ViewSigner)
		}
		if q.qtype == dns.TypeSRV {
			return a.srv(dst, rec)
		}
		return a.svcb(dst, rec)
	case dns.TypeTXT:
		if a.enableTXT {
			return dst, false
		}
	}
	return a.negative(dst, dns.RcodeSuccess, 0, rec)
}

// staticSection returns the static records that answer qtype at the name found, as
// staticAnswer gives them to the slow path, and their type t (qtype, or CNAME): answers tells
// whether static records answer it at all, ok is false when they do but have no wire form (the
// slow path answers). The caller asks only where the name has static records, and, when a GSLB
// record is at the name too, for a type but A, AAAA and CNAME (addressType), which the record
// answers.
func staticSection(found catalog.Found, qtype uint16) (s catalog.Section, t uint16, answers, ok bool) {
	t = qtype
	if len(found.Static[t]) == 0 {
		if t = dns.TypeCNAME; len(found.Static[t]) == 0 {
			return catalog.Section{}, 0, false, true
		}
	}
	s, ok = found.Wire.RRset(t)
	return s, t, true, ok
}

// static answers with the records of s: the name's static RRset (or CNAME), or the apex's SOA
// or NS; for a DO query in a signed zone, followed by their signatures sigs (signatures).
func (a *fastAnswer) static(dst []byte, s catalog.Section, sigs *catalog.SignedRRset) ([]byte, bool) {
	q := &a.q
	r := q.base(dns.RcodeSuccess)
	r.addAnswer(s.Count, q.sectionLen(s))
	var sig catalog.Section // none unsigned: one branch on a.signed
	if a.signed != nil {
		var ok bool
		if sig, ok = a.signatures(sigs); !ok {
			return dst, false
		}
		r.addAnswer(sig.Count, len(sig.Wire))
	}
	if r.size > q.limit {
		return dst, false
	}
	dst = q.appendHeader(dst, &r)
	dst = q.appendSection(dst, s)
	if a.signed != nil {
		dst = append(dst, sig.Wire...)
	}
	return q.finish(dst, 0), true
}

// negative answers rcode without an answer, the zone's negative SOA in authority (NXDOMAIN,
// NODATA, fail-closed), with the ECS scope scope. rec, when not nil, is the record asked for,
// marked queried once the answer is certain.
func (a *fastAnswer) negative(dst []byte, rcode, scope int, rec *catalog.Record) ([]byte, bool) {
	dst, ok := a.negativeReply(dst, rcode, scope)
	if ok && rec != nil {
		rec.MarkQueried()
	}
	return dst, ok
}

// negativeReply appends the reply of rcode without an answer, with the zone's negative SOA in
// authority (for a DO query in a signed zone, the authority signedNegative writes) and the
// ECS scope scope. ok is false, dst unchanged, when it does not fit or the slow path answers.
func (a *fastAnswer) negativeReply(dst []byte, rcode, scope int) ([]byte, bool) {
	if rcode > 0xf {
		return dst, false
	}
	if a.signed != nil {
		return a.signedNegative(dst, rcode, scope)
	}
	q, soa := &a.q, a.zone.Wire().Negative
	r := q.base(rcode)
	r.addAuthority(soa.Count, q.sectionLen(soa))
	if r.size > q.limit {
		return dst, false
	}
	dst = q.appendHeader(dst, &r)
	dst = q.appendSection(dst, soa)
	return q.finish(dst, scope), true
}

// maxGlueRecords bounds the GSLB records among a referral's glue that the fast path answers:
// their views are loaded once, on the stack.
const maxGlueRecords = 8

// referral answers a query at or below the delegation d as builder.referral does: not
// authoritative, d's NS RRset in authority (with DO in a signed zone, then the cut's DS RRset
// or NSEC record and their signatures: cutProof), its static glue, then the healthy backends
// of the GSLB records among its name servers, in additional.
func (a *fastAnswer) referral(dst []byte, d *catalog.Delegation) ([]byte, bool) {
	q, w := &a.q, d.Wire
	if q.qtype == dns.TypeDS || w == nil || len(d.GlueRecords) > maxGlueRecords {
		return dst, false
	}
	a.cut = d.Name
	var proof [2]catalog.Section // none unsigned: one branch on a.signed
	if a.signed != nil {
		var ok bool
		if proof, ok = a.cutProof(d); !ok {
			return dst, false
		}
	}
	r := q.base(dns.RcodeSuccess)
	r.notAuth = true
	r.addAuthority(w.NS.Count, q.sectionLen(w.NS))
	if a.signed != nil {
		for _, s := range proof {
			r.addAuthority(s.Count, len(s.Wire))
		}
	}
	r.addAdditional(w.Glue.Count, q.sectionLen(w.Glue))
	var views [maxGlueRecords]*catalog.View
	for i, rec := range d.GlueRecords {
		views[i] = rec.View()
		for f := catalog.IPv4; f <= catalog.IPv6; f++ {
			for _, be := range views[i].Healthy[f] {
				if !be.Config.IsHost() {
					r.addAdditional(1, addressLen(w.GlueOwners[i], f))
				}
			}
		}
		if len(w.GlueOwners[i]) == 0 {
			return dst, false
		}
	}
	if r.size > q.limit {
		return dst, false
	}
	dst = q.appendHeader(dst, &r)
	dst = q.appendSection(dst, w.NS)
	if a.signed != nil {
		for _, s := range proof {
			dst = append(dst, s.Wire...)
		}
	}
	dst = q.appendSection(dst, w.Glue)
	for i, rec := range d.GlueRecords {
		for f := catalog.IPv4; f <= catalog.IPv6; f++ {
			for _, be := range views[i].Healthy[f] {
				if !be.Config.IsHost() {
					dst = appendBackendAddress(dst, w.GlueOwners[i], rec.Config.TTL, be.Config.IP)
				}
			}
		}
	}
	return q.finish(dst, 0), true
}

// addressType reports whether t is A, AAAA or CNAME: the types a GSLB record's selection
// answers.
func addressType(t uint16) bool {
	return t == dns.TypeA || t == dns.TypeAAAA || t == dns.TypeCNAME
}

// under reports whether qname (lower case, fully qualified) is at or below one of zones
// (lower case, fully qualified; "." is every name).
func under(zones []string, qname string) bool {
	for _, z := range zones {
		if z == "." || qname == z || strings.HasSuffix(qname, z) && qname[len(qname)-len(z)-1] == '.' {
			return true
		}
	}
	return false
}

// keyType reports whether t is a type that a signed zone answers from its signer whatever the
// DO bit (builder.keyAnswer, and CoreDNS's dnssec plugin for DNSKEY), which the slow path does.
func keyType(t uint16) bool {
	return t == dns.TypeDNSKEY || t == dns.TypeCDS || t == dns.TypeCDNSKEY || t == dns.TypeNSEC
}

// mayBePublished reports whether qname may be a name a site publishes for its peers (see
// builder.published), which Respond answers.
func mayBePublished(qname string) bool {
	return strings.HasPrefix(qname, published.LocalTargetsPrefix) || strings.HasPrefix(qname, published.LocalRTTPrefix) ||
		strings.HasPrefix(qname, published.HeartbeatPrefix)
}
