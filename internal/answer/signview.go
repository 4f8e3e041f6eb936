package answer

import (
	"errors"
	"net/netip"
	"slices"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/dnssec"
)

// ViewSigner signs what a record's view answers (catalog.ViewSigner), for a signed zone: each
// address answer the record's selection may give in each family (every answer of the modes
// that pick from a set, the common ones of the geo modes and chains, the fallback's), as
// address records or a CNAME, and the NSEC record of the record's name with the types it
// answers now. The answers it did not prepare (a rare combination, SRV, HTTPS and TXT) are
// signed on demand (answer.go's signing).
type ViewSigner struct {
	// EnableTXT is the block's enable_txt: record names answer TXT.
	EnableTXT bool
}

// SignView implements catalog.ViewSigner.
func (s ViewSigner) SignView(r *catalog.Record, v *catalog.View, prev *catalog.SignedView, now time.Time) *catalog.SignedView {
	z := r.Zone
	out := &catalog.SignedView{Epoch: z.Signer().Epoch(now)}
	var errs []error
	var answered []uint16 // the types of the answers
	for f := catalog.IPv4; f <= catalog.IPv6; f++ {
		answers(r, v, f, func(rrs []dns.RR) {
			answered = append(answered, rrs[0].Header().Rrtype)
			key := rrsetAnswerKey(rrs)
			if slices.ContainsFunc(out.Sets[f], func(e catalog.SignedSet) bool { return e.Key == key }) {
				return
			}
			var old *catalog.SignedRRset
			if p := prev.Set(f, key); p != nil {
				old = &p.SignedRRset
			}
			signed, err := z.Reuse(old, rrs, now)
			errs = append(errs, err)
			out.Sets[f] = append(out.Sets[f], catalog.SignedSet{Key: key, SignedRRset: signed})
		})
		slices.SortFunc(out.Sets[f], func(a, b catalog.SignedSet) int {
			switch {
			case a.Key < b.Key:
				return -1
			case a.Key > b.Key:
				return 1
			}
			return 0
		})
	}
	name := r.Name()
	types := append(z.OwnTypes(name), recordTypes(r, answered, s.EnableTXT)...)
	nsec := dnssec.NSEC(name, z.NSECNext(name), types, z.NegativeSOA.Hdr.Ttl)
	var err error
	out.NSEC, err = z.Reuse(prevPart(prev, func(p *catalog.SignedView) *catalog.SignedRRset { return &p.NSEC }), []dns.RR{nsec}, now)
	errs = append(errs, err)
	x := v.Extra()
	for f := catalog.IPv4; f <= catalog.IPv6; f++ {
		if len(x.Published[f]) > 0 {
			out.Published[f], err = z.Reuse(prevPart(prev, func(p *catalog.SignedView) *catalog.SignedRRset { return &p.Published[f] }), x.Published[f], now)
			errs = append(errs, err)
		}
	}
	if len(x.PublishedRTTs) > 0 {
		out.PublishedRTTs, err = z.Reuse(prevPart(prev, func(p *catalog.SignedView) *catalog.SignedRRset { return &p.PublishedRTTs }), x.PublishedRTTs, now)
		errs = append(errs, err)
	}
	out.Due, out.Incomplete = now, true // a signature that failed is due at once
	if errors.Join(errs...) == nil {
		out.Due, out.Incomplete = due(out), false
	}
	return out
}

// prevPart returns part of prev, nil when prev is nil.
func prevPart(prev *catalog.SignedView, part func(*catalog.SignedView) *catalog.SignedRRset) *catalog.SignedRRset {
	if prev == nil {
		return nil
	}
	return part(prev)
}

// due returns when the first signature of sv must be made again.
func due(sv *catalog.SignedView) time.Time {
	d := sv.NSEC.Due
	sv.Each(func(s *catalog.SignedRRset) {
		if s.Signed != nil && s.Due.Before(d) {
			d = s.Due
		}
	})
	return d
}

// answers calls yield with the RRset of each answer of family f that r's view v may give (see
// ViewSigner), owned by the record's name.
func answers(r *catalog.Record, v *catalog.View, f catalog.Family, yield func([]dns.RR)) {
	x := v.Extra()
	emit := func(backends []*catalog.Backend) {
		if rrs := answerRRs(r, backends, v.TTL[f]); len(rrs) > 0 {
			yield(rrs)
		}
	}
	pick := func(from []*catalog.Backend) func([]int) {
		return func(idx []int) {
			picked := make([]*catalog.Backend, len(idx))
			for i, j := range idx {
				picked[i] = from[j]
			}
			emit(picked)
		}
	}
	switch {
	case x.Geo[f] != nil && len(v.Healthy[f]) > 0:
		x.Geo[f].Answers(pick(x.GeoBackends[f]))
	case x.Chains[f] != nil && x.Chains[f].Len() > 0:
		x.Chains[f].Answers(pick(v.Healthy[f]))
	case v.Sets[f].Len() > 0:
		v.Sets[f].Answers(pick(v.Healthy[f]))
	case v.FallbackApplies(f):
		fb := &r.Config.Settings().Fallback
		switch {
		case fb.Mode == config.FallbackFailClosed:
		case fb.Mode == config.FallbackFailSpecific && r.FallbackCNAME() != nil:
			yield([]dns.RR{withTTL(copyRR(r.FallbackCNAME(), ""), v.TTL[f])})
		case fb.Mode == config.FallbackFailSpecific:
			var rrs []dns.RR
			for _, rr := range r.FallbackIPs(f) {
				rrs = append(rrs, withTTL(copyRR(rr, ""), v.TTL[f]))
			}
			if len(rrs) > 0 {
				yield(rrs)
			}
		case fb.Mode == config.FallbackLastKnownGood && len(x.LastGood[f]) > 0:
			emit(x.LastGood[f])
		default:
			emit(v.Enabled[f])
		}
	}
}

// answerRRs returns the records an answer of backends holds (builder.rrs): the CNAME of a
// host-name backend chosen first, else the address records of the others, owned by the
// record's name with the TTL ttl.
func answerRRs(r *catalog.Record, backends []*catalog.Backend, ttl uint32) []dns.RR {
	var out []dns.RR
	for i, be := range backends {
		if be.Config.IsHost() {
			if i == 0 {
				return []dns.RR{be.NewRR(r.Name(), ttl)}
			}
			continue
		}
		out = append(out, be.NewRR(r.Name(), ttl))
	}
	return out
}

// rrsetAnswerKey returns the catalog.AnswerKey of an answer's RRset: of its addresses, or of
// its CNAME's target.
func rrsetAnswerKey(rrs []dns.RR) uint64 {
	if c, ok := rrs[0].(*dns.CNAME); ok {
		return catalog.AnswerKey(nil, dns.CanonicalName(c.Target))
	}
	var buf [maxInlinePicks]netip.Addr
	addrs := buf[:0]
	for _, rr := range rrs {
		if a, ok := netip.AddrFromSlice(catalog.AddressOf(rr)); ok {
			addrs = append(addrs, a)
		}
	}
	return catalog.AnswerKey(addrs, "")
}

// recordTypes returns the types r's name answers, for its NSEC record: the types of its
// address answers (answered: A, AAAA, or CNAME when a host name may answer), SRV when a
// backend has a port, HTTPS and SVCB when it answers at all, TXT with enable_txt. A type that
// some queries get and others do not (a host name among addresses) is in it: a NODATA answer
// for such a type gets an NSEC record without it, signed on demand.
func recordTypes(r *catalog.Record, answered []uint16, enableTXT bool) []uint16 {
	out := slices.Clone(answered)
	if len(answered) > 0 {
		out = append(out, dns.TypeHTTPS, dns.TypeSVCB)
		if slices.ContainsFunc(r.Backends, func(b *catalog.Backend) bool { return b.Config.Port != 0 }) {
			out = append(out, dns.TypeSRV)
		}
	}
	if enableTXT {
		out = append(out, dns.TypeTXT)
	}
	return out
}
