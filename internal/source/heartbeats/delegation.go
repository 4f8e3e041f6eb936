package heartbeats

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/exchange"
)

// keepDelegation keeps the parent zone's delegation of each of the block's zones under it in
// step with the sites: this site adds its name server (and glue) while it is healthy, and
// removes another site's once its heartbeat has been stale for delegation_stale_threshold,
// never the last name server (the removal is conditional on the NS set it read, so that two
// sites removing at once cannot both succeed and empty it). For a zone Meridian signs, it
// keeps the parent's DS set the one the zone's keys call for (its CDS), whatever the site's
// health: every site signs with the same keys.
func (k *Keeper) keepDelegation(ctx context.Context, u updater, ownHealthy bool) {
	k.mu.Lock()
	d := *k.opts.Delegation
	origins := slices.Clone(k.origins)
	dsOf := k.ds
	now := time.Now()
	var gone []string // the name servers of sites stale for the threshold
	for _, s := range k.sites {
		if s.ok && s.rec.NS != "" && s.rec.NS != d.NS && now.Sub(s.rec.Time.Add(k.healthyFor(s.kind))) > d.StaleThreshold {
			gone = append(gone, s.rec.NS)
		}
	}
	k.mu.Unlock()
	c := &exchange.Client{Timeout: u.timeout}
	defer c.Close()
	for _, origin := range origins {
		if !dns.IsSubDomain(d.Parent, origin) || origin == d.Parent {
			continue
		}
		if dsOf != nil {
			if want, signed := dsOf(origin); signed {
				k.keepDS(ctx, u, c, d, origin, want)
			}
		}
		ns, ok := delegationNS(ctx, c, d.Servers, origin)
		if !ok {
			continue
		}
		if ownHealthy && !slices.Contains(nsTargets(ns), d.NS) {
			k.applyDelegation(ctx, u, d, addNS(d, origin), "added this site's name server "+d.NS+" to the delegation of "+origin)
		}
		for _, name := range gone {
			if len(ns) > 1 && slices.Contains(nsTargets(ns), name) {
				k.applyDelegation(ctx, u, d, removeNS(d, origin, name, ns), "removed the stale site's name server "+name+" from the delegation of "+origin)
				break // the NS set changed: the next round reads it again
			}
		}
	}
}

// applyDelegation sends the delegation update m and logs what it did, or why not (each cause
// once until an update passes).
func (k *Keeper) applyDelegation(ctx context.Context, u updater, d config.Delegation, m *dns.Msg, did string) {
	res, err := u.send(ctx, d.Servers, m)
	countUpdate("delegation", res)
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil {
		if msg := err.Error(); msg != k.delegationErr {
			k.log.Warningf("heartbeats: the delegation: %v", err)
			k.delegationErr = msg
		}
		return
	}
	k.delegationErr = ""
	k.log.Infof("heartbeats: %s", did)
}

// delegationNS reads the NS records of origin from the parent's servers: the referral's, or
// the answer's of a server that is authoritative for both.
func delegationNS(ctx context.Context, c *exchange.Client, servers []string, origin string) ([]*dns.NS, bool) {
	for _, server := range servers {
		m, err := c.Exchange(ctx, server, origin, dns.TypeNS)
		if err != nil {
			continue
		}
		var out []*dns.NS
		for _, rr := range append(m.Answer, m.Ns...) {
			if ns, ok := rr.(*dns.NS); ok && strings.EqualFold(ns.Hdr.Name, origin) {
				out = append(out, ns)
			}
		}
		return out, true
	}
	return nil, false
}

// nsTargets returns the name servers of ns, lower case.
func nsTargets(ns []*dns.NS) []string {
	out := make([]string, len(ns))
	for i, r := range ns {
		out[i] = strings.ToLower(r.Ns)
	}
	return out
}

// delegationTTL is the TTL of the NS and glue records the keeper adds.
const delegationTTL = 300

// addNS returns the update of the parent that adds this site's name server to origin's
// delegation, with its glue when the name server is inside the parent zone.
func addNS(d config.Delegation, origin string) *dns.Msg {
	m := new(dns.Msg)
	m.SetUpdate(d.Parent)
	rrs := []dns.RR{&dns.NS{Hdr: dns.RR_Header{Name: origin, Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: delegationTTL}, Ns: d.NS}}
	if dns.IsSubDomain(d.Parent, d.NS) {
		for _, ip := range d.Glue {
			hdr := dns.RR_Header{Name: d.NS, Class: dns.ClassINET, Ttl: delegationTTL}
			if ip.Is4() {
				hdr.Rrtype = dns.TypeA
				rrs = append(rrs, &dns.A{Hdr: hdr, A: ip.AsSlice()})
			} else {
				hdr.Rrtype = dns.TypeAAAA
				rrs = append(rrs, &dns.AAAA{Hdr: hdr, AAAA: ip.AsSlice()})
			}
		}
	}
	m.Insert(rrs)
	return m
}

// removeNS returns the update of the parent that removes name from origin's delegation (and
// its glue), on the condition that the delegation is still exactly ns.
func removeNS(d config.Delegation, origin, name string, ns []*dns.NS) *dns.Msg {
	m := new(dns.Msg)
	m.SetUpdate(d.Parent)
	m.Used(prerequisite(ns))
	m.Remove([]dns.RR{&dns.NS{Hdr: dns.RR_Header{Name: origin, Rrtype: dns.TypeNS, Class: dns.ClassINET}, Ns: name}})
	if dns.IsSubDomain(d.Parent, name) {
		m.RemoveRRset([]dns.RR{
			&dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET}},
			&dns.AAAA{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeAAAA, Class: dns.ClassINET}},
		})
	}
	return m
}

// prerequisite returns copies of rrs with TTL 0, as an UPDATE's prerequisite that the RRset
// is exactly rrs (RFC 2136 2.4.2).
func prerequisite[R dns.RR](rrs []R) []dns.RR {
	out := make([]dns.RR, len(rrs))
	for i, r := range rrs {
		c := dns.Copy(r)
		c.Header().Ttl = 0
		out[i] = c
	}
	return out
}

// keepDS replaces the parent's DS set of origin by want when it differs, on the condition
// that it is still the set read.
func (k *Keeper) keepDS(ctx context.Context, u updater, c *exchange.Client, d config.Delegation, origin string, want []*dns.DS) {
	have, ok := parentDS(ctx, c, d.Servers, origin)
	if !ok || sameDS(have, want) {
		return
	}
	m := new(dns.Msg)
	m.SetUpdate(d.Parent)
	if len(have) == 0 {
		m.RRsetNotUsed([]dns.RR{&dns.DS{Hdr: dns.RR_Header{Name: origin, Rrtype: dns.TypeDS, Class: dns.ClassINET}}})
	} else {
		m.Used(prerequisite(have))
		m.RemoveRRset([]dns.RR{&dns.DS{Hdr: dns.RR_Header{Name: origin, Rrtype: dns.TypeDS, Class: dns.ClassINET}}})
	}
	add := make([]dns.RR, len(want))
	for i, ds := range want {
		add[i] = ds
	}
	if len(add) > 0 {
		m.Insert(add)
	}
	tags := make([]string, len(want))
	for i, ds := range want {
		tags[i] = strconv.Itoa(int(ds.KeyTag))
	}
	k.applyDelegation(ctx, u, d, m, "set the DS of "+origin+" in the parent to the keys "+strings.Join(tags, ", "))
}

// parentDS reads the DS records of origin from the parent's servers.
func parentDS(ctx context.Context, c *exchange.Client, servers []string, origin string) ([]*dns.DS, bool) {
	for _, server := range servers {
		m, err := c.Exchange(ctx, server, origin, dns.TypeDS)
		if err != nil {
			continue
		}
		var out []*dns.DS
		for _, rr := range m.Answer {
			if ds, ok := rr.(*dns.DS); ok && strings.EqualFold(ds.Hdr.Name, origin) {
				out = append(out, ds)
			}
		}
		return out, true
	}
	return nil, false
}

// sameDS reports whether a and b hold the same DS records (key, algorithm, digest), in any
// order.
func sameDS(a, b []*dns.DS) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.ContainsFunc(b, func(y *dns.DS) bool {
			return x.KeyTag == y.KeyTag && x.Algorithm == y.Algorithm && x.DigestType == y.DigestType && strings.EqualFold(x.Digest, y.Digest)
		}) {
			return false
		}
	}
	return true
}
