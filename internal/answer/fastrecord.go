package answer

import (
	"slices"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
)

// A GSLB record's answers in the fast path, as builder.address, builder.srv and builder.svcb
// make them: the selection is the slow path's own (builder.timedPick), and a rotating mode's
// is made only once the largest answer it may give is known to fit.

// picker returns the chooser whose pick the fast path's selection runs (a builder's without
// the response under construction, which the fast path has not).
func (a *fastAnswer) picker(rec *catalog.Record) chooser {
	return chooser{rec: rec, client: a.client, geo: a.geo, count: a.countAnswers, traffic: a.traffic}
}

// address answers A, AAAA and CNAME at rec (builder.address): the selection's address records,
// a host-name backend chosen first or the fallback CNAME as a CNAME, fail-closed's rcode, or
// NODATA.
func (a *fastAnswer) address(dst []byte, rec *catalog.Record) ([]byte, bool) {
	q := &a.q
	f, isAddress := catalog.FamilyOf(q.qtype)
	if !isAddress {
		f = catalog.IPv4 // CNAME: a host-name backend or a fallback CNAME answers it
	}
	owner := q.owner()
	sv, ok := a.signedView(rec)
	if !ok || rotates(rec.Config) && q.base(0).size+maxAddressAnswer(rec, f, owner)+maxSignatures(sv) > q.limit {
		return dst, false
	}
	r := a.picker(rec)
	var buf [maxInlinePicks]*catalog.Backend
	sel, took := r.timedPick(f, buf[:0])
	if sel.closed {
		dst, ok := a.negativeReply(dst, sel.rcode, sel.scope)
		if ok {
			a.count(&r, rec, true, took)
		}
		return dst, ok
	}
	// The records rrs makes: the fixed ones, else the backends, a host name chosen first
	// alone as a CNAME, the other host names left out.
	fixed, backends := sel.fixed, sel.backends
	hostFirst := len(backends) > 0 && backends[0].Config.IsHost()
	if hostFirst {
		backends = backends[:1]
	}
	reply := q.base(dns.RcodeSuccess)
	for _, rr := range fixed {
		n, ok := fixedLen(rr, owner, f)
		if !ok {
			return dst, false
		}
		reply.addAnswer(1, n)
	}
	if hostFirst {
		n, ok := cnameLen(owner, backends[0].Config.Address)
		if !ok {
			return dst, false
		}
		reply.addAnswer(1, n)
	} else {
		for _, be := range backends {
			if be.IsAddressOf(f) {
				reply.addAnswer(1, addressLen(owner, f))
			}
		}
	}
	firstCNAME := hostFirst || len(fixed) > 0 && fixed[0].Header().Rrtype == dns.TypeCNAME
	if reply.an == 0 || !isAddress && !firstCNAME {
		// NODATA: no record, or for CNAME, no CNAME now.
		dst, ok := a.negativeReply(dst, dns.RcodeSuccess, sel.scope)
		if ok {
			a.count(&r, rec, false, took)
			for _, be := range backends {
				if be.IsAddressOf(f) {
					r.selected(be)
				}
			}
		}
		return dst, ok
	}
	var proof answerProof // an unsigned answer has none, and pays one branch on a.signed for it
	if a.signed != nil {
		if proof, ok = a.addressProof(sv, f, fixed, backends, hostFirst); !ok {
			return dst, false
		}
		a.countProof(&reply, &proof)
	}
	if reply.size > q.limit {
		return dst, false
	}
	a.count(&r, rec, false, took)
	dst = q.appendHeader(dst, &reply)
	for _, rr := range fixed {
		dst = appendFixed(dst, rr, owner, sel.ttl)
	}
	if hostFirst {
		r.selected(backends[0])
		dst = appendCNAME(dst, owner, sel.ttl, backends[0].Config.Address)
	} else {
		for _, be := range backends {
			if be.IsAddressOf(f) {
				r.selected(be)
				dst = appendBackendAddress(dst, owner, sel.ttl, be.Config.IP)
			}
		}
	}
	if a.signed != nil {
		dst = a.appendProof(dst, &proof)
	}
	return q.finish(dst, sel.scope), true
}

// count marks rec queried and, when the answer counts, counts it (closed: fail-closed).
func (a *fastAnswer) count(r *chooser, rec *catalog.Record, closed bool, took time.Duration) {
	rec.MarkQueried()
	if r.count {
		rec.CountAnswer(closed, took)
	}
}

// maxAddressAnswer is the size of the largest address answer of family f that rec's selection
// may give: every backend (or fallback address), or its CNAME.
func maxAddressAnswer(rec *catalog.Record, f catalog.Family, owner []byte) int {
	n := max(len(rec.Backends), len(rec.FallbackIPs(f))) * addressLen(owner, f)
	for _, be := range rec.Backends {
		if be.Config.IsHost() {
			c, _ := cnameLen(owner, be.Config.Address)
			n = max(n, c)
		}
	}
	return n
}

// fixedLen is the size of rr, a fallback record of family f (an address, or the fallback
// CNAME), at owner; false for one the fast path does not write.
func fixedLen(rr dns.RR, owner []byte, f catalog.Family) (int, bool) {
	switch x := rr.(type) {
	case *dns.CNAME:
		return cnameLen(owner, x.Target)
	case *dns.A:
		return addressLen(owner, f), f == catalog.IPv4 && x.A.To4() != nil
	case *dns.AAAA:
		return addressLen(owner, f), f == catalog.IPv6 && len(x.AAAA) == 16
	}
	return 0, false
}

// appendFixed appends rr, a fallback record that fixedLen accepted, at owner with ttl.
func appendFixed(dst []byte, rr dns.RR, owner []byte, ttl uint32) []byte {
	if c, ok := rr.(*dns.CNAME); ok {
		return appendCNAME(dst, owner, ttl, c.Target)
	}
	return appendAddressRecord(dst, owner, ttl, rr.Header().Rrtype, catalog.AddressOf(rr))
}

// cnameLen is the size of a CNAME record at owner to target; false for a target the fast path
// does not write (nameLen).
func cnameLen(owner []byte, target string) (int, bool) {
	n, ok := nameLen(target)
	return len(owner) + rrFixedLen + n, ok
}

// appendCNAME appends a CNAME record at owner to target, which cnameLen accepted.
func appendCNAME(dst, owner []byte, ttl uint32, target string) []byte {
	n, _ := nameLen(target)
	dst = appendRRHeader(dst, owner, dns.TypeCNAME, ttl, n)
	return appendName(dst, target)
}

// rotates reports whether the record's selection turns a rotation on every query (roundrobin,
// or a chain with a roundrobin step).
func rotates(rc *config.Record) bool {
	return rc.Mode == config.ModeRoundRobin || rc.Mode == config.ModeChain && slices.Contains(rc.Steering().Chain, config.StepRoundRobin)
}
