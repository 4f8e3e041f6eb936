package answer

import (
	"strings"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/published"
)

// published answers the names a site serves for its peers when sites are on (the snapshot has
// a heartbeat): localtargets-<record>, the record's healthy backends of this site;
// localrtt-<record>, this site's RTTs to the record's backends (with measure_remote); and
// heartbeat-<site>.<zone>. It reports false for every other name, and for a name that is a
// record of its own. With a peer key (opts.PeerKey), only signed queries (q.Signed) get them;
// others get REFUSED.
func (b *builder) published(snap *catalog.Snapshot, opts *Options, signed bool) bool {
	hb := snap.Heartbeat()
	if hb == nil {
		return false
	}
	label, rest, ok := strings.Cut(b.qname, ".")
	if !ok {
		return false
	}
	isHeartbeat := label == hb.Label() && rest == b.zone.Origin
	target, isTargets := strings.CutPrefix(b.qname, published.LocalTargetsPrefix)
	rtts, isRTTs := strings.CutPrefix(b.qname, published.LocalRTTPrefix)
	if !isHeartbeat && !isTargets && !isRTTs {
		return false
	}
	if _, exists, wildcard := b.zone.Lookup(b.qname); exists && !wildcard {
		return false // an operator's own record of that name
	}
	if opts.PeerKey && !signed {
		b.msg = b.finishError(dns.RcodeRefused)
		return true
	}
	switch {
	case isHeartbeat:
		b.heartbeat(hb)
	case isRTTs:
		rec := b.publishing(rtts, func(rc *config.Record) bool { return rc.PublishRTT })
		if rec != nil && (b.qtype == dns.TypeTXT || b.qtype == dns.TypeANY) {
			b.publish(rec.View().Extra().PublishedRTTs)
		}
		b.nodataIfEmpty(rec)
	default:
		rec := b.publishing(target, func(rc *config.Record) bool { return rc.Publish })
		if f, ok := catalog.FamilyOf(b.qtype); ok && rec != nil {
			x := rec.View().Extra()
			if x.Watch != nil && !b.explaining {
				x.Watch.NotePeerRead() // a peer site learns the change now
			}
			b.publish(x.Published[f])
		}
		b.nodataIfEmpty(rec)
	}
	return true
}

// publishing starts the answer for the record named name that a site publishes something of:
// it returns the record when it exists and publishes (publishes says whether it does), after
// starting a NOERROR reply; otherwise it answers NXDOMAIN and returns nil.
func (b *builder) publishing(name string, publishes func(*config.Record) bool) *catalog.Record {
	rec, exists, wildcard := b.zone.Lookup(name)
	if !exists || wildcard || rec == nil || !publishes(rec.Config) {
		b.reply(dns.RcodeNameError)
		b.msg.Ns = []dns.RR{b.zone.NegativeSOARecord()}
		return nil
	}
	b.reply(dns.RcodeSuccess)
	return rec
}

// publish answers copies of rrs, named as the query.
func (b *builder) publish(rrs []dns.RR) {
	for _, rr := range rrs {
		b.msg.Answer = append(b.msg.Answer, copyRR(rr, ""))
	}
}

// nodataIfEmpty makes a published name's reply for rec (nil: NXDOMAIN, already answered)
// NODATA when it has no answer.
func (b *builder) nodataIfEmpty(rec *catalog.Record) {
	if rec != nil && len(b.msg.Answer) == 0 {
		b.nodata()
	}
}

// heartbeat answers the site's heartbeat name: its TXT record, with TTL 0 (a heartbeat must
// never be cached), for TXT and ANY queries; NODATA for other types.
func (b *builder) heartbeat(hb *published.Served) {
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
