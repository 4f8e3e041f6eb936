package answer

import (
	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
)

// static answers the query from the name's static RRsets (nil: none) and reports whether it
// did: the RRset of the query's type; the CNAME of a name that has one (for any type but
// CNAME itself, which the RRset answers); every RRset for ANY at a name without a GSLB record.
// At a GSLB record's name (record set) A, AAAA and CNAME are the record's, and ANY its
// answer; the static RRsets answer the other types they have.
func (b *builder) static(rrsets map[uint16][]dns.RR, record bool) bool {
	if rrsets == nil {
		return false
	}
	switch {
	case record && (b.qtype == dns.TypeA || b.qtype == dns.TypeAAAA || b.qtype == dns.TypeCNAME || b.qtype == dns.TypeANY):
		return false
	case len(rrsets[b.qtype]) > 0:
		b.msg.Answer = copyRRs(b.msg.Answer, rrsets[b.qtype])
	case len(rrsets[dns.TypeCNAME]) > 0:
		b.msg.Answer = copyRRs(b.msg.Answer, rrsets[dns.TypeCNAME])
	case b.qtype == dns.TypeANY && !record:
		for _, rrs := range rrsets {
			b.msg.Answer = copyRRs(b.msg.Answer, rrs)
		}
	default:
		return false
	}
	return true
}

// referral answers a query at or below the delegation d: no answer, not authoritative, d's NS
// set in authority and its glue in additional (RFC 1034 4.3.2): the static addresses of its
// name servers, and the healthy backends of those that are GSLB records.
func (b *builder) referral(d *catalog.Delegation) {
	b.reply(dns.RcodeSuccess)
	b.msg.Authoritative = false
	b.msg.Ns = copyRRs(nil, d.NS)
	b.msg.Extra = copyRRs(nil, d.Glue)
	for _, rec := range d.GlueRecords {
		v := rec.View()
		for f := catalog.IPv4; f <= catalog.IPv6; f++ {
			for _, be := range v.Healthy[f] {
				if !be.Config.IsHost() {
					b.msg.Extra = append(b.msg.Extra, withTTL(copyRR(be.RR, ""), rec.Config.TTL))
				}
			}
		}
	}
}

// copyRRs appends copies of rrs to dst.
func copyRRs(dst, rrs []dns.RR) []dns.RR {
	for _, rr := range rrs {
		dst = append(dst, copyRR(rr, ""))
	}
	return dst
}
