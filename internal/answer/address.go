package answer

import (
	"net/netip"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/policy"
)

// maxInlinePicks is how many picks fit the stack buffer of a selection; more spill to the heap.
const maxInlinePicks = 16

// selection is what one address family of a record answers with.
type selection struct {
	// backends are the chosen backends: the mode's picks, or every enabled one under fail-open.
	backends []*catalog.Backend
	// fixed are the fail-specific records (fallback IPs or CNAME); copied before use.
	fixed []dns.RR
	// rcode is set (non-zero) when fail-closed answers with an error code.
	rcode int
	// closed is set when fail-closed applies, whatever its rcode.
	closed bool
	// scope is how many leading bits of the client address the choice depends on (the EDNS
	// Client Subnet scope): 0 for none; never more than the query gave (see replyOPT).
	scope int
	// ttl is the TTL of the answer records: the View's for the family (catalog.View.TTL).
	ttl uint32
}

// client is whom a query is answered for: its address, and where the geo modes look it up.
type client struct {
	addr netip.Addr
	// geo are the GeoIP sources; loc is the address looked up in them, set by the caller
	// before a geo mode selects (nil otherwise).
	geo *geo.Sources
	loc *geo.Location
	// explaining is set when no client asked (builder.explaining).
	explaining bool
}

// selectFamily runs rec's mode for family f and the client, or its fallback policy when no
// backend of the family is healthy. It is a function of its arguments only, so that nothing of
// the response under construction escapes through it.
func selectFamily(rec *catalog.Record, c client, f catalog.Family, dst []*catalog.Backend) selection {
	v := rec.View()
	sel := pickFamily(rec, v, c, f, dst)
	sel.ttl = v.TTL[f]
	return sel
}

// pickFamily is selectFamily over the view v, without the TTL.
func pickFamily(rec *catalog.Record, v *catalog.View, c client, f catalog.Family, dst []*catalog.Backend) selection {
	x := v.Extra()
	if x.Watch != nil && !c.explaining {
		x.Watch.NoteAnswer(f) // the first answer of a change (a failover timeline)
	}
	if t := x.Geo[f]; t != nil && len(v.Healthy[f]) > 0 {
		var buf [maxInlinePicks]int
		picks, scope := t.Select(c.geo, c.loc, buf[:0])
		for _, i := range picks {
			dst = append(dst, x.GeoBackends[f][i])
		}
		return selection{backends: dst, scope: scope}
	}
	if ch := x.Chains[f]; ch != nil && ch.Len() > 0 {
		var buf [maxInlinePicks]int
		picks, scope := ch.Pick(c.addr, c.geo, c.loc, buf[:0])
		for _, i := range picks {
			dst = append(dst, v.Healthy[f][i])
		}
		return selection{backends: dst, scope: scope}
	}
	if set := v.Sets[f]; set.Len() > 0 {
		var buf [maxInlinePicks]int
		for _, i := range set.Pick(c.addr, buf[:0]) {
			dst = append(dst, v.Healthy[f][i])
		}
		return selection{backends: dst, scope: set.Scope(c.addr)}
	}
	if !v.FallbackApplies(f) {
		return selection{}
	}
	fb := &rec.Config.Settings().Fallback
	switch fb.Mode {
	case config.FallbackFailClosed:
		return selection{rcode: fb.Rcode, closed: true}
	case config.FallbackFailSpecific:
		if cname := rec.FallbackCNAME(); cname != nil {
			return selection{fixed: []dns.RR{cname}}
		}
		return selection{fixed: rec.FallbackIPs(f)}
	case config.FallbackLastKnownGood:
		if len(x.LastGood[f]) > 0 {
			return selection{backends: append(dst, x.LastGood[f]...)}
		}
	}
	return selection{backends: append(dst, v.Enabled[f]...)}
}

// chooser is what a selection reads of the query and what counting it needs, apart from the
// response under construction (builder embeds it), so that the fast path's selection starts
// from these few words alone.
type chooser struct {
	rec    *catalog.Record // the record asked for, once found
	client netip.Addr
	// geo are the GeoIP sources of the query.
	geo *geo.Sources
	// count makes address answers count in the record's and the backends' query counts,
	// and traffic weighs them by their TTL and country (Options.Traffic).
	count, traffic bool
	// explaining is set for an answer no client asked for (Explain, Decide): it does not note
	// the first answer of a change on the record's AnswerWatch.
	explaining bool
	// ttl and country are, while an answer counts, its TTL and its client's country (when the
	// selection looked it up), for the traffic counts (catalog.Record.CountSelected).
	ttl     uint32
	country string
}

// pick runs selectFamily for the query's client. A geo mode first looks the client up in the
// GeoIP sources, into a Location on this function's stack: queries of the other modes neither
// zero nor carry it.
func (r *chooser) pick(f catalog.Family, dst []*catalog.Backend) selection {
	c := client{addr: r.client, explaining: r.explaining}
	if mode := r.rec.Config.Mode; !policy.IsGeo(mode) && (mode != config.ModeChain || !needsLocation(r.rec, f)) {
		return selectFamily(r.rec, c, f, dst)
	}
	var loc geo.Location
	r.geo.Lookup(r.client, &loc)
	c.geo, c.loc = r.geo, &loc
	if r.count {
		r.country = loc.Country.Country
		if !loc.Country.Found {
			r.country = loc.City.Country
		}
	}
	return selectFamily(r.rec, c, f, dst)
}

// timedPick is pick, and the time the selection took when the answer counts (0 otherwise), for
// catalog.Record.CountAnswer.
func (r *chooser) timedPick(f catalog.Family, dst []*catalog.Backend) (selection, time.Duration) {
	if !r.count {
		return r.pick(f, dst), 0
	}
	start := time.Now()
	sel := r.pick(f, dst)
	r.ttl = sel.ttl // for selected
	return sel, time.Since(start)
}

// needsLocation reports whether rec's chain for family f has a geo step.
func needsLocation(rec *catalog.Record, f catalog.Family) bool {
	ch := rec.View().Extra().Chains[f]
	return ch != nil && ch.NeedsLocation()
}

// rrs returns the answer records of a selection, with its TTL. A host-name backend chosen first
// answers alone, as a CNAME; otherwise host-name backends are left out of an address answer.
func (r *builder) rrs(sel selection, dst []dns.RR) []dns.RR {
	for _, rr := range sel.fixed {
		dst = append(dst, withTTL(copyRR(rr, r.owner), sel.ttl))
	}
	for i, be := range sel.backends {
		if be.Config.IsHost() {
			if i == 0 {
				r.selected(be)
				return append(dst, be.NewRR(r.owner, sel.ttl))
			}
			continue
		}
		r.selected(be)
		dst = append(dst, be.NewRR(r.owner, sel.ttl))
	}
	return dst
}

// withTTL sets the TTL of rr, a copy, and returns it.
func withTTL(rr dns.RR, ttl uint32) dns.RR {
	rr.Header().Ttl = ttl
	return rr
}

// selected counts be in the answer, when the answer counts (countSelected): one branch when
// it does not.
func (r *chooser) selected(be *catalog.Backend) {
	if r.count {
		r.countSelected(be)
	}
}

// countSelected counts be in the answer: with traffic_shares, with the answer's TTL and, when
// the selection looked the client up, its country.
func (r *chooser) countSelected(be *catalog.Backend) {
	if r.traffic {
		r.rec.CountSelected(be, r.ttl, r.country)
		return
	}
	r.rec.CountSelected(be, 0, "") // no traffic to weigh
}

// address answers A, AAAA and CNAME queries.
func (r *builder) address(qtype uint16) {
	f, isAddress := catalog.FamilyOf(qtype)
	if !isAddress {
		f = catalog.IPv4 // CNAME: a host-name backend or a fallback CNAME answers it
	}
	var buf [maxInlinePicks]*catalog.Backend
	sel, took := r.timedPick(f, buf[:0])
	r.scope = max(r.scope, sel.scope)
	if r.count {
		r.rec.CountAnswer(sel.closed, took)
	}
	if sel.closed {
		r.failClosed(sel.rcode)
		return
	}
	answer := r.rrs(sel, make([]dns.RR, 0, len(sel.backends)+len(sel.fixed)))
	if !isAddress && (len(answer) == 0 || answer[0].Header().Rrtype != dns.TypeCNAME) {
		return // NODATA: the name has no CNAME now
	}
	r.msg.Answer = answer
}

// failClosed answers with the fail-closed rcode and the SOA in authority.
func (r *builder) failClosed(rcode int) {
	r.msg.Rcode = rcode
	r.msg.Answer = nil
	r.msg.Ns = []dns.RR{r.zone.NegativeSOARecord()}
}

// any answers ANY with one RRset (RFC 8482): the IPv4 answer, else the IPv6 answer.
func (r *builder) any() {
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
		r.address(qtype)
		if len(r.msg.Answer) > 0 || r.msg.Rcode != dns.RcodeSuccess {
			return
		}
	}
}
