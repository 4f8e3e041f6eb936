package answer

import (
	"strings"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
)

// published answers the names a site serves for its peers when sites are on (the snapshot has
// a heartbeat): localtargets-<record>, the record's healthy backends of this site, and
// heartbeat-<site>.<zone>. It reports false for every other name, and for a name that is a
// record of its own. With a peer key (opts.PeerKey), only signed queries (q.Signed) get them;
// others get REFUSED.
func (b *builder) published(snap *catalog.Snapshot, opts Options, signed bool) bool {
	hb := snap.Heartbeat()
	if hb == nil {
		return false
	}
	label, rest, ok := strings.Cut(b.qname, ".")
	if !ok {
		return false
	}
	isHeartbeat := label == hb.Label() && rest == b.zone.Origin
	target, isTargets := strings.CutPrefix(b.qname, catalog.LocalTargetsPrefix)
	if !isHeartbeat && !isTargets {
		return false
	}
	if _, exists, wildcard := b.zone.Lookup(b.qname); exists && !wildcard {
		return false // an operator's own record of that name
	}
	if opts.PeerKey && !signed {
		b.msg = b.finishError(dns.RcodeRefused)
		return true
	}
	if isHeartbeat {
		b.heartbeat(hb)
		return true
	}
	rec, exists, wildcard := b.zone.Lookup(target)
	if !exists || wildcard || rec == nil || !rec.Config.Publish {
		b.reply(dns.RcodeNameError)
		b.msg.Ns = []dns.RR{copyRR(b.zone.NegativeSOA, "")}
		return true
	}
	b.reply(dns.RcodeSuccess)
	if f, ok := catalog.FamilyOf(b.qtype); ok {
		for _, rr := range rec.View().Published[f] {
			b.msg.Answer = append(b.msg.Answer, copyRR(rr, ""))
		}
	}
	if len(b.msg.Answer) == 0 {
		b.nodata()
	}
	return true
}

// heartbeat answers the site's heartbeat name: its TXT record, with TTL 0 (a heartbeat must
// never be cached), for TXT and ANY queries; NODATA for other types.
func (b *builder) heartbeat(hb *catalog.Heartbeat) {
	b.reply(dns.RcodeSuccess)
	txt := hb.TXT()
	if (b.qtype != dns.TypeTXT && b.qtype != dns.TypeANY) || txt == nil {
		b.nodata()
		return
	}
	b.msg.Answer = []dns.RR{&dns.TXT{
		Hdr: dns.RR_Header{Name: b.qname, Rrtype: dns.TypeTXT, Class: dns.ClassINET},
		Txt: txt,
	}}
}
