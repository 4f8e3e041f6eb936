package answer

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/dnssec"
)

// The fast path's signed answers: a DO query in a zone Meridian's signer signs gets, after each
// RRset, the signatures prepared for it (catalog.SignedRRset.SigWire, packed when they were
// made), as builder.sign adds them; the query's ID, case and ECS scope are patched as in any
// answer, and no signature covers them. It answers what was prepared and what the slow path
// copies from there: a GSLB record's address and CNAME answers, the apex's SOA and NS, static
// RRsets, fail-closed, NODATA at a name that exists (its NSEC record as prepared), referrals
// (the cut's DS RRset, or its NSEC record), and a wildcard's answers and NODATA (the
// wildcard's signatures renamed to the query's name, and the NSEC record of its chain that
// covers the name). What needs a signature made for the query (the denial of a name that does
// not exist, SRV, HTTPS and SVCB answers, an answer not prepared) is the slow path's.

// signedKind reports whether the fast path may answer a DO query for the name found in the
// zone of a.signed: a name that exists or a referral, while the zone's signatures are of its
// current serial. It notes a wildcard's answer in a.wild.
func (a *fastAnswer) signedKind(found catalog.Found) bool {
	if found.Wildcard {
		a.wild = found.Record
	}
	return (found.Cut != nil || found.Exists) && a.signed.Serial == a.zone.Serial()
}

// cutProof returns what a referral to d adds to its authority section for a DO query in a
// signed zone (a.signed set; builder.signReferral): the cut's DS RRset and its signatures, or
// the NSEC record proving it has none (an insecure delegation) and its signatures. ok is false
// when they were not prepared (the slow path signs on demand).
func (a *fastAnswer) cutProof(d *catalog.Delegation) (proof [2]catalog.Section, ok bool) {
	s := a.signed.Static[catalog.NameType{Name: d.Name, Type: dns.TypeDS}]
	if s == nil {
		s = a.zone.NSECOf(d.Name)
	}
	if !s.Ready() || s.Wire.Count == 0 {
		return proof, false
	}
	return [2]catalog.Section{s.Wire, s.SigWire}, true
}

// signatures returns the signatures that follow an RRset whose prepared signatures are s in the
// answer: none without a.signed; ok is false when s has none (the slow path signs on demand).
func (a *fastAnswer) signatures(s *catalog.SignedRRset) (sigs catalog.Section, ok bool) {
	if a.signed == nil {
		return catalog.Section{}, true
	}
	if !s.Ready() {
		return catalog.Section{}, false
	}
	return s.SigWire, true
}

// apexNS returns the prepared signatures of the apex's NS RRset (nil without a.signed).
func (a *fastAnswer) apexNS() *catalog.SignedRRset {
	if a.signed == nil {
		return nil
	}
	return &a.signed.NS
}

// staticSigned returns the prepared signatures of the static RRset of type t at qname (nil
// without a.signed, or when there are none).
func (a *fastAnswer) staticSigned(qname string, t uint16) *catalog.SignedRRset {
	if a.signed == nil {
		return nil
	}
	return a.signed.Static[catalog.NameType{Name: qname, Type: t}]
}

// authority is a negative answer's authority section: the zone's negative SOA, and for a DO
// query in a signed zone its signatures and, for NODATA, the name's NSEC record and its
// signatures, then for a wildcard's the covering NSEC record and its signatures. Its sections
// carry their owners.
type authority [6]catalog.Section

// count counts the authority's records in r.
func (s *authority) count(r *fastReply) {
	for _, x := range s {
		r.addAuthority(x.Count, len(x.Wire))
	}
}

// signedNegative is negativeReply for a DO query in a signed zone (a.signed set): the
// authority section negativeAuthority makes.
func (a *fastAnswer) signedNegative(dst []byte, rcode, scope int) ([]byte, bool) {
	q := &a.q
	auth, ok := a.negativeAuthority(rcode)
	r := q.base(rcode)
	auth.count(&r)
	if !ok || r.size > q.limit {
		return dst, false
	}
	dst = q.appendHeader(dst, &r)
	for _, s := range auth {
		dst = q.appendSection(dst, s)
	}
	return q.finish(dst, scope), true
}

// negativeAuthority returns the authority section of a negative answer of rcode for a DO
// query in a signed zone (a.signed set), as builder.sign makes it; ok is false when the slow
// path must make it (NXDOMAIN, whose proof names the query; a NODATA whose NSEC record is not
// prepared, or has the type asked for).
func (a *fastAnswer) negativeAuthority(rcode int) (auth authority, ok bool) {
	sz := a.signed
	soa := &sz.NegativeSOA
	if bytes.Equal(sz.SOA.Wire.Wire, soa.Wire.Wire) {
		soa = &sz.SOA // the signatures builder.prepared finds first
	}
	if rcode == dns.RcodeNameError || !soa.Ready() {
		return authority{}, false
	}
	auth = authority{soa.Wire, soa.SigWire}
	if rcode != dns.RcodeSuccess {
		return auth, true // fail-closed: nothing to prove
	}
	name := a.q.lowerName()
	if a.wild != nil {
		name = a.wild.Name()
	}
	s := a.zone.NSECOf(name)
	if !s.Ready() {
		return authority{}, false
	}
	if nsec, isNSEC := s.RRs[0].(*dns.NSEC); !isNSEC || hasType(nsec, a.q.qtype) {
		return authority{}, false
	}
	auth[2], auth[3] = s.Wire, s.SigWire
	cover, ok := a.covering(name)
	auth[4], auth[5] = cover[0], cover[1]
	return auth, ok
}

// covering returns the NSEC record and its signatures that prove the name of a wildcard's
// answer does not exist itself (builder.appendCovering): none when the answer is not a
// wildcard's, when the name is in no wildcard's chain, or when the record is the one owned by
// have, already in the answer. ok is false when it was not prepared.
func (a *fastAnswer) covering(have string) (proof [2]catalog.Section, ok bool) {
	if a.wild == nil {
		return proof, true
	}
	var buf [2 * maxNameWire]byte
	owner, found := a.zone.CoveringKey(dnssec.AppendWireKey(buf[:0], a.q.owner()))
	if !found || owner == have {
		return proof, true
	}
	s := a.zone.NSECOf(owner)
	if !s.Ready() || s.Wire.Count == 0 {
		return proof, false
	}
	return [2]catalog.Section{s.Wire, s.SigWire}, true
}

// sigsLen is the size of an answer's signatures sigs in the reply: a wildcard's are renamed to
// the query's name (builder.appendRRSIGs).
func (a *fastAnswer) sigsLen(sigs catalog.Section) int {
	if a.wild == nil {
		return len(sigs.Wire)
	}
	n := 0
	for rr, w := nextRecord(sigs.Wire); rr != nil; rr, w = nextRecord(w) {
		n += len(a.q.owner()) + len(rr)
	}
	return n
}

// appendSigs appends an answer's signatures sigs, a wildcard's renamed to the query's name.
func (a *fastAnswer) appendSigs(dst []byte, sigs catalog.Section) []byte {
	if a.wild == nil {
		return append(dst, sigs.Wire...)
	}
	owner := a.q.owner()
	for rr, w := nextRecord(sigs.Wire); rr != nil; rr, w = nextRecord(w) {
		dst = append(dst, owner...)
		dst = append(dst, rr...)
	}
	return dst
}

// nextRecord returns the first record of w, records with their owners (a Section's), without
// its owner (type, class, TTL, RDLENGTH and RDATA), and the records after it; nil when w is
// empty.
func nextRecord(w []byte) (rr, rest []byte) {
	if len(w) == 0 {
		return nil, nil
	}
	off := 0
	for w[off] != 0 {
		off += 1 + int(w[off])
	}
	w = w[off+1:]
	n := rrFixedLen + int(binary.BigEndian.Uint16(w[8:]))
	return w[:n], w[n:]
}

// signedView returns rec's prepared signatures for a DO query's address answer (nil without
// a.signed); ok is false when the fast path leaves the query: none prepared, one of them
// failed, or a chain that rotates (its rarer answers are signed on demand, after the
// rotation turned). Without a.signed it is one branch, inlined.
func (a *fastAnswer) signedView(rec *catalog.Record) (sv *catalog.SignedView, ok bool) {
	if a.signed == nil {
		return nil, true
	}
	return preparedView(rec)
}

// preparedView is signedView for a DO query in a signed zone.
func preparedView(rec *catalog.Record) (sv *catalog.SignedView, ok bool) {
	sv = rec.View().Extra().Signed
	if sv == nil || sv.Incomplete || rotates(rec.Config) && rec.Config.Mode != config.ModeRoundRobin {
		return nil, false
	}
	return sv, true
}

// maxSignatures is the size of the largest signatures of an answer of sv (0 for nil): the bound
// a rotation's answer must fit before it turns.
func maxSignatures(sv *catalog.SignedView) int {
	if sv == nil {
		return 0
	}
	n := 0
	for f := range sv.Sets {
		for i := range sv.Sets[f] {
			n = max(n, len(sv.Sets[f][i].SigWire.Wire))
		}
	}
	return n
}

// answerProof is what follows a signed address answer: its signatures, and for a wildcard's
// answer the NSEC record that covers the query's name and its signatures (covering).
type answerProof struct {
	sigs  catalog.Section
	cover [2]catalog.Section
}

// addressProof returns the proof of the address answer the fast path writes from sv's record
// (answerSignatures) for a DO query in a signed zone (a.signed set); ok is false when it was
// not prepared.
func (a *fastAnswer) addressProof(sv *catalog.SignedView, f catalog.Family, fixed []dns.RR, backends []*catalog.Backend, hostFirst bool) (p answerProof, ok bool) {
	sigs, ok := a.answerSignatures(sv, f, fixed, backends, hostFirst)
	cover, covered := a.covering("")
	return answerProof{sigs: sigs, cover: cover}, ok && covered
}

// countProof counts the records of p in r: the signatures in the answer, the covering NSEC
// record and its signatures in authority.
func (a *fastAnswer) countProof(r *fastReply, p *answerProof) {
	r.addAnswer(p.sigs.Count, a.sigsLen(p.sigs))
	for _, s := range p.cover {
		r.addAuthority(s.Count, len(s.Wire))
	}
}

// appendProof appends p after the answer's records, its covering NSEC record after the
// signatures (the first of the authority section).
func (a *fastAnswer) appendProof(dst []byte, p *answerProof) []byte {
	dst = a.appendSigs(dst, p.sigs)
	for _, s := range p.cover {
		dst = append(dst, s.Wire...)
	}
	return dst
}

// answerSignatures returns the prepared signatures of the address answer the fast path writes
// from sv's record for a DO query in a signed zone (a.signed set): of the fixed records, else
// of the CNAME of a host-name backend chosen first (hostFirst), else of the backends'
// addresses of family f. ok is false when they were not prepared (builder.prepared finds none;
// the slow path signs on demand).
func (a *fastAnswer) answerSignatures(sv *catalog.SignedView, f catalog.Family, fixed []dns.RR, backends []*catalog.Backend, hostFirst bool) (catalog.Section, bool) {
	var buf [maxInlinePicks]netip.Addr
	addrs, target := buf[:0], ""
	switch {
	case len(fixed) > 0:
		if c, isCNAME := fixed[0].(*dns.CNAME); isCNAME {
			target = c.Target
			break
		}
		for _, rr := range fixed {
			ip, ok := netip.AddrFromSlice(catalog.AddressOf(rr))
			if !ok || len(addrs) == cap(addrs) {
				return catalog.Section{}, false
			}
			addrs = append(addrs, ip)
		}
	case hostFirst:
		target = backends[0].Config.Address
	default:
		for _, be := range backends {
			if be.IsAddressOf(f) {
				if len(addrs) == cap(addrs) {
					return catalog.Section{}, false
				}
				addrs = append(addrs, be.Config.IP)
			}
		}
	}
	first := f
	if target != "" {
		target, first = dns.CanonicalName(target), catalog.IPv4 // preparedAnswer's order for a CNAME
	}
	key := catalog.AnswerKey(addrs, target)
	for _, fam := range [2]catalog.Family{first, 1 - first} {
		if s := sv.Set(fam, key); s != nil && sameAnswer(s.RRs, addrs, target, f) {
			return a.signatures(&s.SignedRRset)
		}
	}
	return catalog.Section{}, false
}

// sameAnswer reports whether rrs, a prepared answer, holds the CNAME to target or, when target
// is empty, the addresses addrs of family f, each at least once (sameData).
func sameAnswer(rrs []dns.RR, addrs []netip.Addr, target string, f catalog.Family) bool {
	if len(rrs) == 0 {
		return false
	}
	if target != "" {
		c, ok := rrs[0].(*dns.CNAME)
		return ok && len(rrs) == 1 && strings.EqualFold(c.Target, target)
	}
	want := uint16(dns.TypeA)
	if f == catalog.IPv6 {
		want = dns.TypeAAAA
	}
	if rrs[0].Header().Rrtype != want {
		return false
	}
	for _, rr := range rrs {
		ip, ok := netip.AddrFromSlice(catalog.AddressOf(rr))
		if !ok || !slices.Contains(addrs, ip) {
			return false
		}
	}
	for _, ip := range addrs {
		found := false
		for _, rr := range rrs {
			if x, ok := netip.AddrFromSlice(catalog.AddressOf(rr)); ok && x == ip {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
