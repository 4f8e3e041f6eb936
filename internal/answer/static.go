package answer

import (
	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
)

// static answers the query from the name's static RRsets (staticAnswer) and reports whether
// it did.
func (b *builder) static(rrsets map[uint16][]dns.RR, record bool) bool {
	rrs, ok := staticAnswer(rrsets, record, b.qtype)
	if ok {
		b.msg.Answer = copyRRs(b.msg.Answer, rrs)
	}
	return ok
}

// staticAnswer returns what a name's static RRsets (nil: none) answer for qtype, and whether
// they answer it: the RRset of the type; the CNAME of a name that has one (for any type but
// CNAME itself, which the RRset answers); every RRset for ANY at a name without a GSLB record.
// At a GSLB record's name (record set) A, AAAA and CNAME are the record's, and ANY its
// answer; the static RRsets answer the other types they have. The records are the catalog's.
func staticAnswer(rrsets map[uint16][]dns.RR, record bool, qtype uint16) ([]dns.RR, bool) {
	switch {
	case rrsets == nil:
		return nil, false
	case record && (qtype == dns.TypeA || qtype == dns.TypeAAAA || qtype == dns.TypeCNAME || qtype == dns.TypeANY):
		return nil, false
	case len(rrsets[qtype]) > 0:
		return rrsets[qtype], true
	case len(rrsets[dns.TypeCNAME]) > 0:
		return rrsets[dns.TypeCNAME], true
	case qtype == dns.TypeANY && !record:
		var all []dns.RR
		for _, rrs := range rrsets {
			all = append(all, rrs...)
		}
		return all, true
	}
	return nil, false
}

// referral answers a query at or below the delegation d: no answer, not authoritative, d's NS
// set in authority and its glue in additional (RFC 1034 4.3.2): the static addresses of its
// name servers, and the healthy backends of those that are GSLB records.
func (b *builder) referral(d *catalog.Delegation) {
	b.cut = d.Name
	b.reply(dns.RcodeSuccess)
	b.msg.Authoritative = false
	b.msg.Ns = copyRRs(nil, d.NS)
	b.msg.Extra = copyRRs(nil, d.Glue)
	for _, rec := range d.GlueRecords {
		v := rec.View()
		for f := catalog.IPv4; f <= catalog.IPv6; f++ {
			for _, be := range v.Healthy[f] {
				if !be.Config.IsHost() {
					b.msg.Extra = append(b.msg.Extra, be.NewRR("", rec.Config.TTL))
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
