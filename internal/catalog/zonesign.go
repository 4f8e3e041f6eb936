package catalog

import (
	"errors"
	"slices"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/dnssec"
)

// signZone signs the zone's own data at now, reusing the signatures of prev (nil for none)
// that still sign the same RRsets, and publishes them.
func (z *Zone) signZone(prev *SignedZone, now time.Time) error {
	s := z.signing
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev == nil {
		prev = &SignedZone{}
	}
	sz := &SignedZone{Serial: z.Serial(), Epoch: s.signer.Epoch(now), Static: map[NameType]*SignedRRset{}, NSEC: map[string]*SignedRRset{}}
	var errs []error
	sign := func(rrs []dns.RR, old *SignedRRset) SignedRRset {
		out, err := reuse(s.signer, old, rrs, now)
		errs = append(errs, err)
		return out
	}
	sz.SOA = sign([]dns.RR{z.SOARecord()}, &prev.SOA)
	sz.NegativeSOA = sign([]dns.RR{z.NegativeSOARecord()}, &prev.NegativeSOA)
	ns := make([]dns.RR, len(z.NS))
	for i, rr := range z.NS {
		ns[i] = rr
	}
	sz.NS = sign(ns, &prev.NS)
	sz.DNSKEY = sign(s.signer.DNSKEY(now), &prev.DNSKEY)
	if cds := s.signer.CDS(now); len(cds) > 0 {
		sz.CDS = sign(cds, &prev.CDS)
		sz.CDNSKEY = sign(s.signer.CDNSKEY(now), &prev.CDNSKEY)
	}
	ttl := z.NegativeSOA.Hdr.Ttl
	for name, n := range z.nodes {
		if n.cut != nil && n.cut.Name != name {
			continue // below a cut: glue, not the zone's
		}
		for t, rrs := range n.rrsets() {
			if len(rrs) == 0 || n.cut != nil && t != dns.TypeDS {
				continue
			}
			k := NameType{name, t}
			signed := sign(rrs, prev.Static[k])
			sz.Static[k] = &signed
		}
		if n.record == nil {
			nsec := dnssec.NSEC(name, z.NSECNext(name), z.ownTypes(name, sz), ttl)
			signed := sign([]dns.RR{nsec}, prev.NSEC[name])
			sz.NSEC[name] = &signed
		}
	}
	err := errors.Join(errs...)
	sz.Due = sz.due()
	if err != nil {
		sz.Due = now // what failed is made again by the next pass
	}
	s.signed.Store(sz)
	return err
}

// reuse returns rrs signed: old's signatures when old signs the same records and is still
// fresh, else new ones. On error the RRset is returned without signatures.
func reuse(signer *dnssec.Signer, old *SignedRRset, rrs []dns.RR, now time.Time) (SignedRRset, error) {
	if old != nil && sameRRs(old.RRs, rrs) && old.Signed.Fresh(now, signer.Epoch(now)) {
		return withWire(rrs, old.Signed, old), nil
	}
	sig, err := signer.Sign(rrs, now)
	return withWire(rrs, sig, nil), err
}

// withWire returns rrs and their signatures sig (nil for none) with their wire forms (see
// SignedRRset): old's signatures' when sig is old's.
func withWire(rrs []dns.RR, sig *dnssec.Signed, old *SignedRRset) SignedRRset {
	out := SignedRRset{RRs: rrs, Signed: sig}
	if sig == nil {
		return out
	}
	if old != nil && old.Signed == sig && old.SigWire.Count > 0 {
		out.SigWire = old.SigWire
	} else {
		out.SigWire = packSection(sig.RRSIGs, false)
	}
	if t := rrs[0].Header().Rrtype; t == dns.TypeSOA || t == dns.TypeNSEC || t == dns.TypeDS {
		out.Wire = packSection(rrs, false)
	}
	return out
}

// Reuse is reuse for the view signers: rrs signed by the zone's signer, with old's signatures
// when they still sign the same records. On error the RRset is returned without signatures.
func (z *Zone) Reuse(old *SignedRRset, rrs []dns.RR, now time.Time) (SignedRRset, error) {
	return reuse(z.signing.signer, old, rrs, now)
}

// sameRRs reports whether a and b are the same records, in any order.
func sameRRs(a, b []dns.RR) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.ContainsFunc(b, func(y dns.RR) bool { return dns.IsDuplicate(x, y) && x.Header().Ttl == y.Header().Ttl }) {
			return false
		}
	}
	return true
}

// due returns when the first of the zone's signatures must be made again.
func (sz *SignedZone) due() time.Time {
	var due time.Time
	sz.each(func(s *SignedRRset) {
		if s.Signed != nil && (due.IsZero() || s.Due.Before(due)) {
			due = s.Due
		}
	})
	return due
}

// each calls fn with every signed RRset of the zone's own data.
func (sz *SignedZone) each(fn func(*SignedRRset)) {
	for _, s := range []*SignedRRset{&sz.SOA, &sz.NegativeSOA, &sz.NS, &sz.DNSKEY, &sz.CDS, &sz.CDNSKEY} {
		if len(s.RRs) > 0 {
			fn(s)
		}
	}
	for _, s := range sz.Static {
		fn(s)
	}
	for _, s := range sz.NSEC {
		fn(s)
	}
}

// resignSOA signs the zone's SOA records again after its serial changed.
func (z *Zone) resignSOA(now time.Time) {
	s := z.signing
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.signed.Load()
	if cur == nil || cur.Serial == z.Serial() {
		return
	}
	sz := *cur
	sz.Serial = z.Serial()
	sz.SOA, _ = reuse(s.signer, nil, []dns.RR{z.SOARecord()}, now)
	sz.NegativeSOA, _ = reuse(s.signer, nil, []dns.RR{z.NegativeSOARecord()}, now)
	sz.Due = sz.due()
	s.signed.Store(&sz)
}

// Resign makes the snapshot's due signatures again at now: the zones' own (SignedZone.Due
// passed, or a key changed state) and the records' views (by refreshing the record). It
// returns, per signed zone, what its prepared signatures are after the pass.
func (s *Snapshot) Resign(now time.Time) map[string]dnssec.ServedStats {
	out := map[string]dnssec.ServedStats{}
	for origin, z := range s.zones {
		if z.signing == nil {
			continue
		}
		start := time.Now()
		epoch := z.signing.signer.Epoch(now)
		if sz := z.Signed(); sz == nil || !now.Before(sz.Due) || sz.Epoch != epoch {
			_ = z.signZone(sz, now) // a failed signature is due at once: the next pass tries again
		}
		var st dnssec.ServedStats
		z.Signed().each(func(r *SignedRRset) { st.Add(r.Signed) })
		for _, n := range z.nodes {
			r := n.record
			if r == nil || r.Zone != z {
				continue
			}
			if sv := r.View().Extra().Signed; sv == nil || !now.Before(sv.Due) || sv.Epoch != epoch {
				r.refresh(now)
			}
			if sv := r.View().Extra().Signed; sv != nil {
				sv.Each(func(r *SignedRRset) { st.Add(r.Signed) })
			}
		}
		st.Took = time.Since(start)
		out[origin] = st
	}
	return out
}

// buildIslands finds the zone's wildcards' chains: for each wildcard whose parent is not in
// another's chain, every name at or below its parent (not below a cut), in canonical order,
// each the owner of an NSEC record to the next; the last one's next name is the name right
// after the parent's subtree, or the apex when the parent is the apex.
func (z *Zone) buildIslands() {
	s := z.signing
	s.next = map[string]string{}
	var parents []string
	for name, n := range z.nodes {
		if n.wildcard != nil {
			parents = append(parents, name)
		}
	}
	slices.SortFunc(parents, func(a, b string) int { return len(a) - len(b) })
	var top [][]byte
	for _, p := range parents {
		key, ok := dnssec.CanonicalKey(p)
		if !ok || slices.ContainsFunc(top, func(t []byte) bool { return prefixOf(t, key) }) {
			continue
		}
		top = append(top, key)
		is := island{}
		for name, n := range z.nodes {
			k, ok := dnssec.CanonicalKey(name)
			if !ok || !prefixOf(key, k) || n.cut != nil && n.cut.Name != name {
				continue
			}
			is.names, is.keys = append(is.names, name), append(is.keys, k)
		}
		order := make([]int, len(is.names))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return compareBytes(is.keys[a], is.keys[b]) })
		names, keys := make([]string, len(order)), make([][]byte, len(order))
		for i, j := range order {
			names[i], keys[i] = is.names[j], is.keys[j]
		}
		is.names, is.keys = names, keys
		for i, name := range names[:len(names)-1] {
			s.next[name] = names[i+1]
		}
		s.next[names[len(names)-1]] = z.afterSubtree(p)
		s.islands = append(s.islands, is)
	}
}

// afterSubtree returns a name right after every name at or below name in canonical order:
// its first label extended by an octet 0 ("app\000.example.org."), or the apex for the apex
// (the chain wraps) and for a first label that cannot grow.
func (z *Zone) afterSubtree(name string) string {
	if name == z.Origin {
		return z.Origin
	}
	first, rest, _ := cutLabel(name)
	if len(first) >= 63 {
		return z.Origin
	}
	return first + "\\000." + rest
}

// cutLabel splits name (presentation form) into its first label and the rest, honouring
// escaped dots.
func cutLabel(name string) (first, rest string, ok bool) {
	for i := 0; i < len(name); i++ {
		switch name[i] {
		case '\\':
			i++
		case '.':
			return name[:i], name[i+1:], true
		}
	}
	return name, "", false
}
