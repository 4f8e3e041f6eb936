package dnssec

import (
	"errors"
	"fmt"
	"time"

	"github.com/miekg/dns"
)

// Keyset is the keys a zone is signed with. When it holds keys with the SEP flag and keys
// without, it signs split: the SEP keys (KSKs) sign the DNSKEY, CDS and CDNSKEY RRsets, the
// others (ZSKs) everything else. Otherwise every key is a CSK and signs everything, as
// CoreDNS's dnssec plugin does.
type Keyset struct {
	keys  []*Key
	split bool
}

// NewKeyset returns the keyset of keys, which must not be empty nor hold one key twice.
func NewKeyset(keys []*Key) (*Keyset, error) {
	if len(keys) == 0 {
		return nil, errors.New("dnssec: no key")
	}
	ks := &Keyset{keys: keys}
	sep, other := false, false
	for i, k := range keys {
		sep, other = sep || k.SEP(), other || !k.SEP()
		for _, prev := range keys[:i] {
			if prev.Tag == k.Tag && prev.DNSKEY.Algorithm == k.DNSKEY.Algorithm && prev.DNSKEY.PublicKey == k.DNSKEY.PublicKey {
				return nil, fmt.Errorf("dnssec: the key %s is given twice (%s)", k.File, prev.File)
			}
		}
	}
	ks.split = sep && other
	return ks, nil
}

// Keys returns the keyset's keys, in the order given. They must not be modified.
func (ks *Keyset) Keys() []*Key { return ks.keys }

// Role returns the role of k in the keyset: KSK or ZSK when the keyset signs split, else CSK.
func (ks *Keyset) Role(k *Key) string {
	switch {
	case !ks.split:
		return "CSK"
	case k.SEP():
		return "KSK"
	}
	return "ZSK"
}

// isKeyType reports whether rrtype is one of the RRsets the KSKs sign: DNSKEY, CDS, CDNSKEY.
func isKeyType(rrtype uint16) bool {
	return rrtype == dns.TypeDNSKEY || rrtype == dns.TypeCDS || rrtype == dns.TypeCDNSKEY
}

// signing returns the keys that sign an RRset of type rrtype at now: the active keys of its
// role.
func (ks *Keyset) signing(rrtype uint16, now time.Time) []*Key {
	var out []*Key
	for _, k := range ks.keys {
		if k.StateAt(now) != StateActive {
			continue
		}
		if ks.split && k.SEP() != isKeyType(rrtype) {
			continue
		}
		out = append(out, k)
	}
	return out
}

// Check returns an error when at now some RRsets would have no key to sign them: no active
// key, or in a split keyset no active KSK or no active ZSK.
func (ks *Keyset) Check(now time.Time) error {
	if len(ks.signing(dns.TypeSOA, now)) == 0 {
		if ks.split {
			return fmt.Errorf("dnssec: no ZSK is active at %s", now.UTC().Format(time.RFC3339))
		}
		return fmt.Errorf("dnssec: no key is active at %s", now.UTC().Format(time.RFC3339))
	}
	if len(ks.signing(dns.TypeDNSKEY, now)) == 0 {
		return fmt.Errorf("dnssec: no KSK is active at %s", now.UTC().Format(time.RFC3339))
	}
	return nil
}

// Epoch returns how many of the keys' timing events are past at now. It changes exactly when
// the state of a key does: a signature made in another epoch may be made with keys that no
// longer sign, and is made again.
func (ks *Keyset) Epoch(now time.Time) int {
	n := 0
	for _, k := range ks.keys {
		for _, t := range k.events() {
			if reached(t, now) {
				n++
			}
		}
	}
	return n
}

// NextEvent returns the first timing event of the keys after now, zero when none is ahead.
func (ks *Keyset) NextEvent(now time.Time) time.Time {
	var next time.Time
	for _, k := range ks.keys {
		for _, t := range k.events() {
			if t.After(now) && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
	}
	return next
}

// DNSKEY returns the zone's DNSKEY RRset at now, owned by zone with the TTL ttl: every
// published key.
func (ks *Keyset) DNSKEY(zone string, ttl uint32, now time.Time) []dns.RR {
	var out []dns.RR
	for _, k := range ks.keys {
		if k.published(now) {
			out = append(out, ownedKey(k, zone, ttl))
		}
	}
	return out
}

// ownedKey returns k's DNSKEY owned by zone with the TTL ttl.
func ownedKey(k *Key, zone string, ttl uint32) *dns.DNSKEY {
	c := *k.DNSKEY
	c.Hdr = dns.RR_Header{Name: zone, Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET, Ttl: ttl}
	return &c
}

// syncKeys returns the SEP keys (KSKs and CSKs; every key of an unsplit keyset) that the
// parent's DS set should hold at now (Key.inSync).
func (ks *Keyset) syncKeys(now time.Time) []*Key {
	var out []*Key
	for _, k := range ks.keys {
		if (!ks.split || k.SEP()) && k.inSync(now) {
			out = append(out, k)
		}
	}
	return out
}

// DS returns the DS records (SHA-256) the parent should hold for zone at now, with the TTL
// ttl: one per key in the CDS RRset.
func (ks *Keyset) DS(zone string, ttl uint32, now time.Time) []*dns.DS {
	var out []*dns.DS
	for _, k := range ks.syncKeys(now) {
		ds := ownedKey(k, zone, ttl).ToDS(dns.SHA256)
		if ds != nil {
			out = append(out, ds)
		}
	}
	return out
}

// CDS returns the zone's CDS RRset at now (RFC 7344), with the TTL ttl: the DS records the
// parent should hold.
func (ks *Keyset) CDS(zone string, ttl uint32, now time.Time) []dns.RR {
	var out []dns.RR
	for _, ds := range ks.DS(zone, ttl, now) {
		c := &dns.CDS{DS: *ds}
		c.Hdr.Rrtype = dns.TypeCDS
		out = append(out, c)
	}
	return out
}

// CDNSKEY returns the zone's CDNSKEY RRset at now (RFC 7344), with the TTL ttl: the keys of
// the CDS RRset.
func (ks *Keyset) CDNSKEY(zone string, ttl uint32, now time.Time) []dns.RR {
	var out []dns.RR
	for _, k := range ks.syncKeys(now) {
		c := &dns.CDNSKEY{DNSKEY: *ownedKey(k, zone, ttl)}
		c.Hdr.Rrtype = dns.TypeCDNSKEY
		out = append(out, c)
	}
	return out
}
