package answer

import (
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/dnssec"
	"github.com/meridian-gslb/meridian/internal/published"
)

// The slow path of a signed zone (docs/dnssec.md): a query with the DO bit gets each RRset of
// the response with its signatures, copied from those prepared with the zone and the
// record's view, or, for what was not prepared (the proof that the queried name does not
// exist, which names it; SRV, HTTPS, TXT; a rare combination of backends), made now through
// the signer's cache of on-demand signatures. Denials are compact (RFC 9824): one NSEC record
// owned by the queried name, NOERROR unless the query sets the Compact Answers OK flag.

// ednsCO is the Compact Answers OK flag of an OPT record's TTL (RFC 9824), beside DO.
const ednsCO = 1 << 14

// keyAnswer answers a query for the key RRsets at the apex of a signed zone (DNSKEY, CDS,
// CDNSKEY), or for the NSEC record of a name of one, and reports whether it did.
func (b *builder) keyAnswer(apex bool) bool {
	sz := b.zone.Signed()
	if sz == nil {
		return false
	}
	var rrs []dns.RR
	switch {
	case apex && b.qtype == dns.TypeDNSKEY:
		rrs = sz.DNSKEY.RRs
	case apex && b.qtype == dns.TypeCDS:
		rrs = sz.CDS.RRs
	case apex && b.qtype == dns.TypeCDNSKEY:
		rrs = sz.CDNSKEY.RRs
	case b.qtype == dns.TypeNSEC:
		if nsec := b.zone.NSECOf(b.qname); nsec != nil {
			rrs = nsec.RRs
		}
	default:
		return false
	}
	if len(rrs) == 0 {
		b.nodata()
		return true
	}
	b.msg.Answer = copyRRs(nil, rrs)
	return true
}

// sign adds the signatures and the denial records to the response of a DO query in a signed
// zone. It reports false when a signature could not be made (the on-demand rate is exceeded):
// the query is answered SERVFAIL rather than unsigned.
func (b *builder) sign() bool {
	m, now := b.msg, time.Now()
	switch {
	case m.Rcode == dns.RcodeNameError:
		if !b.resign(&m.Ns, now) || !b.appendDenial(dnssec.NameError(b.qname, b.negativeTTL()), now) {
			return false
		}
		if !b.co {
			m.Rcode = dns.RcodeSuccess // compact denial: NODATA of a name with no type but NXNAME
		}
		return true
	case m.Rcode != dns.RcodeSuccess:
		return b.resign(&m.Ns, now) // fail-closed: nothing to prove
	case !m.Authoritative:
		return b.signReferral(now)
	case len(m.Answer) == 0:
		return b.resign(&m.Ns, now) && b.appendNoData(now)
	}
	if !b.resign(&m.Answer, now) {
		return false
	}
	if b.wildcard() {
		return b.appendCovering(now)
	}
	return true
}

// resign replaces the section *rrs by its RRsets each followed by its signatures.
func (b *builder) resign(rrs *[]dns.RR, now time.Time) bool {
	section := *rrs
	*rrs = make([]dns.RR, 0, 2*len(section))
	return b.appendSigned(rrs, section, now)
}

// wildcard reports whether the answer is a wildcard's, for a name that does not exist.
func (b *builder) wildcard() bool { return b.rec != nil && b.owner != b.rec.Name() }

// negativeTTL is the TTL of the zone's denials: its negative SOA's.
func (b *builder) negativeTTL() uint32 { return b.zone.NegativeSOA.Hdr.Ttl }

// appendSigned appends to dst each RRset of rrs (in their order, grouped by owner and type)
// followed by its signatures.
func (b *builder) appendSigned(dst *[]dns.RR, rrs []dns.RR, now time.Time) bool {
	for len(rrs) > 0 {
		h := rrs[0].Header()
		n := 1
		for n < len(rrs) && rrs[n].Header().Rrtype == h.Rrtype && strings.EqualFold(rrs[n].Header().Name, h.Name) {
			n++
		}
		rrset := rrs[:n]
		rrs = rrs[n:]
		*dst = append(*dst, rrset...)
		if h.Rrtype == dns.TypeRRSIG || h.Rrtype == dns.TypeOPT {
			continue
		}
		sigs, ok := b.signatures(rrset, now)
		if !ok {
			return false
		}
		*dst = appendRRSIGs(*dst, sigs, h.Name)
	}
	return true
}

// appendRRSIGs appends copies of sigs owned by owner.
func appendRRSIGs(dst []dns.RR, sigs []dns.RR, owner string) []dns.RR {
	for _, rr := range sigs {
		c := *rr.(*dns.RRSIG)
		c.Hdr.Name = owner
		dst = append(dst, &c)
	}
	return dst
}

// signatures returns the RRSIGs of rrset: prepared, or made on demand.
func (b *builder) signatures(rrset []dns.RR, now time.Time) ([]dns.RR, bool) {
	if s := b.prepared(rrset); s != nil && s.Signed != nil {
		return s.RRSIGs, true
	}
	owner := dns.CanonicalName(rrset[0].Header().Name)
	if b.rec != nil && owner == b.owner && b.owner != b.rec.Name() {
		// A wildcard's answer is signed as the wildcard's, which validates for every name.
		renamed := make([]dns.RR, len(rrset))
		for i, rr := range rrset {
			renamed[i] = copyRR(rr, b.rec.Name())
		}
		rrset = renamed
	}
	s, err := b.zone.Signer().SignCached(rrset, now)
	if err != nil {
		return nil, false
	}
	return s.RRSIGs, true
}

// prepared returns the prepared signatures of rrset, nil when none were prepared for it.
func (b *builder) prepared(rrset []dns.RR) *catalog.SignedRRset {
	h := rrset[0].Header()
	owner := dns.CanonicalName(h.Name)
	if b.rec != nil && owner == b.owner {
		if sv := b.rec.View().Extra().Signed; sv != nil {
			if s := preparedAnswer(sv, rrset); s != nil {
				return s
			}
		}
	}
	if s := b.preparedPublished(owner, rrset); s != nil {
		return s
	}
	sz := b.zone.Signed()
	if sz == nil {
		return nil
	}
	var s *catalog.SignedRRset
	switch {
	case h.Rrtype == dns.TypeSOA:
		for _, soa := range []*catalog.SignedRRset{&sz.SOA, &sz.NegativeSOA} {
			if sameRRs(soa.RRs, rrset) {
				return soa
			}
		}
	case owner == b.zone.Origin && h.Rrtype == dns.TypeNS:
		s = &sz.NS
	case owner == b.zone.Origin && h.Rrtype == dns.TypeDNSKEY:
		s = &sz.DNSKEY
	case owner == b.zone.Origin && h.Rrtype == dns.TypeCDS:
		s = &sz.CDS
	case owner == b.zone.Origin && h.Rrtype == dns.TypeCDNSKEY:
		s = &sz.CDNSKEY
	case h.Rrtype == dns.TypeNSEC:
		s = b.zone.NSECOf(owner)
	default:
		s = sz.Static[catalog.NameType{Name: owner, Type: h.Rrtype}]
	}
	if s != nil && sameRRs(s.RRs, rrset) {
		return s
	}
	return nil
}

// preparedPublished returns the prepared signatures of rrset when it is a name a site
// publishes of a record (localtargets-<record>, localrtt-<record>), nil otherwise.
func (b *builder) preparedPublished(owner string, rrset []dns.RR) *catalog.SignedRRset {
	name, targets := strings.CutPrefix(owner, published.LocalTargetsPrefix)
	if !targets {
		var rtts bool
		if name, rtts = strings.CutPrefix(owner, published.LocalRTTPrefix); !rtts {
			return nil
		}
	}
	rec := b.zone.Find(name).Record
	if rec == nil {
		return nil
	}
	sv := rec.View().Extra().Signed
	if sv == nil {
		return nil
	}
	for _, s := range []*catalog.SignedRRset{&sv.Published[catalog.IPv4], &sv.Published[catalog.IPv6], &sv.PublishedRTTs} {
		if len(s.RRs) > 0 && sameRRs(s.RRs, rrset) {
			return s
		}
	}
	return nil
}

// preparedAnswer returns the prepared signatures of rrset, an address or CNAME answer of the
// view's record, nil when it was not prepared.
func preparedAnswer(sv *catalog.SignedView, rrset []dns.RR) *catalog.SignedRRset {
	var f catalog.Family
	switch rrset[0].Header().Rrtype {
	case dns.TypeA:
		f = catalog.IPv4
	case dns.TypeAAAA:
		f = catalog.IPv6
	case dns.TypeCNAME:
	default:
		return nil
	}
	key := rrsetAnswerKey(rrset)
	for _, fam := range []catalog.Family{f, 1 - f} {
		if s := sv.Set(fam, key); s != nil && sameData(s.RRs, rrset) {
			return &s.SignedRRset
		}
	}
	return nil
}

// sameData reports whether the answers a and b hold the same data, whatever their owners and
// TTLs: the same addresses, or the same CNAME target.
func sameData(a, b []dns.RR) bool {
	if c, ok := a[0].(*dns.CNAME); ok {
		d, ok := b[0].(*dns.CNAME)
		return ok && len(a) == 1 && len(b) == 1 && strings.EqualFold(c.Target, d.Target)
	}
	in := func(x []dns.RR, ip []byte) bool {
		return slices.ContainsFunc(x, func(rr dns.RR) bool { return slices.Equal(catalog.AddressOf(rr), ip) })
	}
	for _, rr := range a {
		if a := catalog.AddressOf(rr); a == nil || !in(b, a) {
			return false
		}
	}
	for _, rr := range b {
		if !in(a, catalog.AddressOf(rr)) {
			return false
		}
	}
	return a[0].Header().Rrtype == b[0].Header().Rrtype
}

// sameRRs reports whether a and b are the same records with the same TTLs, in any order.
func sameRRs(a, b []dns.RR) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.ContainsFunc(b, func(y dns.RR) bool { return x.Header().Ttl == y.Header().Ttl && dns.IsDuplicate(x, y) }) {
			return false
		}
	}
	return true
}

// appendDenial appends nsec, a denial made for this query, and its signatures (on demand) to
// the authority section.
func (b *builder) appendDenial(nsec *dns.NSEC, now time.Time) bool {
	return b.appendSigned(&b.msg.Ns, []dns.RR{nsec}, now)
}

// appendNSEC appends the prepared NSEC record s of a name and its signatures.
func (b *builder) appendNSEC(s *catalog.SignedRRset) {
	b.msg.Ns = append(b.msg.Ns, copyRRs(nil, s.RRs)...)
	b.msg.Ns = appendRRSIGs(b.msg.Ns, s.RRSIGs, s.RRs[0].Header().Name)
}

// appendNoData appends the proof of a NODATA answer: the NSEC record of the name (of its
// wildcard, with the one proving that the name itself does not exist), without the queried
// type; made on demand when the prepared one has it (a type only some answers give) or the
// name is one a site publishes.
func (b *builder) appendNoData(now time.Time) bool {
	name := b.qname
	if b.wildcard() {
		name = b.rec.Name()
	}
	s := b.zone.NSECOf(name)
	if s == nil || s.Signed == nil || hasType(s.RRs[0].(*dns.NSEC), b.qtype) {
		var types []uint16
		if s != nil {
			types = without(s.RRs[0].(*dns.NSEC).TypeBitMap, b.qtype)
		}
		nsec := dnssec.NSEC(name, b.zone.NSECNext(name), types, b.negativeTTL())
		if !b.appendDenial(nsec, now) {
			return false
		}
	} else {
		b.appendNSEC(s)
	}
	if b.wildcard() {
		return b.appendCovering(now)
	}
	return true
}

// appendCovering appends the NSEC record that proves the queried name, answered by a
// wildcard, does not exist itself: the one of its wildcard's chain before it (unless it is
// the wildcard's own, already there).
func (b *builder) appendCovering(now time.Time) bool {
	owner, ok := b.zone.Covering(b.qname)
	if !ok {
		return true
	}
	for _, rr := range b.msg.Ns {
		if rr.Header().Rrtype == dns.TypeNSEC && strings.EqualFold(rr.Header().Name, owner) {
			return true
		}
	}
	s := b.zone.NSECOf(owner)
	if s == nil || s.Signed == nil {
		return b.appendDenial(dnssec.NSEC(owner, b.zone.NSECNext(owner), b.zone.OwnTypes(owner), b.negativeTTL()), now)
	}
	b.appendNSEC(s)
	return true
}

// signReferral adds to a referral the delegation's DS RRset and its signatures, or the NSEC
// record of the cut proving it has none (an insecure delegation).
func (b *builder) signReferral(now time.Time) bool {
	cut := b.found.Cut
	if cut == nil {
		return true
	}
	if ds := b.zone.Find(cut.Name).Static[dns.TypeDS]; len(ds) > 0 {
		return b.appendSigned(&b.msg.Ns, copyRRs(nil, ds), now)
	}
	if s := b.zone.NSECOf(cut.Name); s != nil && s.Signed != nil {
		b.appendNSEC(s)
		return true
	}
	return b.appendDenial(dnssec.NSEC(cut.Name, b.zone.NSECNext(cut.Name), []uint16{dns.TypeNS}, b.negativeTTL()), now)
}

// hasType reports whether nsec's type bit map has t.
func hasType(nsec *dns.NSEC, t uint16) bool { return slices.Contains(nsec.TypeBitMap, t) }

// without returns types without t (and without the RRSIG and NSEC types, which dnssec.NSEC
// adds).
func without(types []uint16, t uint16) []uint16 {
	out := make([]uint16, 0, len(types))
	for _, x := range types {
		if x != t && x != dns.TypeRRSIG && x != dns.TypeNSEC {
			out = append(out, x)
		}
	}
	return out
}
