package dnssec

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// Options are the signature timing of a zone and the TTL of its key RRsets.
type Options struct {
	// Validity is how long a signature is valid from when it is made (its expiration, less a
	// jitter of up to half of Refresh, so that signatures made together are not due together).
	Validity time.Duration
	// Refresh is how long before its expiration a signature is made again.
	Refresh time.Duration
	// InceptionOffset back-dates the inception of signatures, for validators whose clocks are
	// behind.
	InceptionOffset time.Duration
	// KeyTTL is the TTL of the DNSKEY, CDS and CDNSKEY RRsets, in seconds.
	KeyTTL uint32
	// CacheCapacity is the number of RRsets whose signatures made on demand are kept (rounded
	// up to a power of two); SignRate how many such signatures a second may be made at most.
	CacheCapacity int
	SignRate      int
}

// Signed is the signatures of one RRset.
type Signed struct {
	// RRSIGs are the signatures, one per key that signed, owned by the RRset's owner.
	RRSIGs []dns.RR
	// Expires is the earliest expiration among them; Due when they must be made again
	// (Options.Refresh before Expires).
	Expires, Due time.Time
	// Made is when they were made; Epoch the keyset's epoch then (Keyset.Epoch).
	Made  time.Time
	Epoch int
}

// Fresh reports whether s may still be served at now in the keyset's epoch: made in that
// epoch, and not due.
func (s *Signed) Fresh(now time.Time, epoch int) bool {
	return s != nil && len(s.RRSIGs) > 0 && s.Epoch == epoch && now.Before(s.Due)
}

// Signer signs the RRsets of one zone with a keyset.
type Signer struct {
	zone string
	keys *Keyset
	opts Options
	// cache holds the signatures made on demand; limit bounds how fast they are made.
	cache *cache
	limit *limiter
	// made counts signatures; onDemand the on-demand lookups by result (hit, signed, limited).
	made     prometheus.Counter
	onDemand [3]prometheus.Counter
	// served are the stats of the last pass over the zone's signatures (ReportServed).
	served servedStats
}

// NewSigner returns the signer of zone (lower case, fully qualified) with keys.
func NewSigner(zone string, keys *Keyset, opts Options) *Signer {
	s := &Signer{zone: zone, keys: keys, opts: opts, cache: newCache(opts.CacheCapacity), limit: newLimiter(opts.SignRate)}
	s.made = signaturesMade.WithLabelValues(zone)
	for i, r := range onDemandResults {
		s.onDemand[i] = onDemandTotal.WithLabelValues(zone, r)
	}
	return s
}

// Zone returns the zone the signer signs.
func (s *Signer) Zone() string { return s.zone }

// Keys returns the signer's keyset.
func (s *Signer) Keys() *Keyset { return s.keys }

// Options returns the signer's options.
func (s *Signer) Options() Options { return s.opts }

// Epoch returns the keyset's epoch at now (Keyset.Epoch).
func (s *Signer) Epoch(now time.Time) int { return s.keys.Epoch(now) }

// ErrNoKey is the error of signing an RRset that no key is active for.
var ErrNoKey = errors.New("dnssec: no active key signs this RRset")

// Sign signs rrset, one RRset of the zone (one owner, type and class; the TTL of its first
// record is the signatures' original TTL), with the keys active at now for its type. An
// RRset owned by a wildcard ("*.example.org.") is signed so that it validates for every name
// it answers (the RRSIG's labels leave the wildcard out): the caller renames the RRSIGs with
// the RRset.
func (s *Signer) Sign(rrset []dns.RR, now time.Time) (*Signed, error) {
	if len(rrset) == 0 {
		return nil, errors.New("dnssec: an empty RRset")
	}
	keys := s.keys.signing(rrset[0].Header().Rrtype, now)
	if len(keys) == 0 {
		return nil, ErrNoKey
	}
	inception := now.Add(-s.opts.InceptionOffset)
	expiration := now.Add(s.opts.Validity)
	if j := int64(s.opts.Refresh / 2); j > 0 {
		expiration = expiration.Add(-time.Duration(rand.Int64N(j)))
	}
	out := &Signed{Expires: expiration, Due: expiration.Add(-s.opts.Refresh), Made: now, Epoch: s.keys.Epoch(now)}
	for _, k := range keys {
		sig := &dns.RRSIG{
			Hdr:        dns.RR_Header{Ttl: rrset[0].Header().Ttl},
			Algorithm:  k.DNSKEY.Algorithm,
			KeyTag:     k.Tag,
			SignerName: s.zone,
			Inception:  uint32(inception.Unix()),
			Expiration: uint32(expiration.Unix()),
		}
		if err := signRRset(k.signer, sig, rrset); err != nil {
			return nil, fmt.Errorf("dnssec: signing %s %s with key %d: %w", rrset[0].Header().Name, dns.TypeToString[rrset[0].Header().Rrtype], k.Tag, err)
		}
		s.made.Inc()
		out.RRSIGs = append(out.RRSIGs, sig)
	}
	return out, nil
}

// Reuse returns prev when it still signs rrset at now (Signed.Fresh), else rrset signed anew.
func (s *Signer) Reuse(prev *Signed, rrset []dns.RR, now time.Time) (*Signed, error) {
	if prev.Fresh(now, s.keys.Epoch(now)) {
		return prev, nil
	}
	return s.Sign(rrset, now)
}

// The results of an on-demand signature, as onDemandTotal labels them, by index.
var onDemandResults = [...]string{"hit", "signed", "limited"}

// ErrLimited is the error of an on-demand signature refused by the sign rate.
var ErrLimited = errors.New("dnssec: the on-demand signing rate is exceeded")

// SignCached returns the signatures of rrset from the signer's cache of on-demand signatures,
// or signs it and keeps them there: for the RRsets that depend on the query (the proof that a
// name does not exist names it) or that were not prepared ahead (a rare combination of
// backends). It takes no lock. Beyond Options.SignRate signatures a second it fails with
// ErrLimited.
func (s *Signer) SignCached(rrset []dns.RR, now time.Time) (*Signed, error) {
	key, err := rrsetKey(rrset)
	if err != nil {
		return nil, err
	}
	epoch := s.keys.Epoch(now)
	if sig := s.cache.lookup(key); sig.Fresh(now, epoch) {
		s.onDemand[0].Inc()
		return sig, nil
	}
	if !s.limit.allow(now) {
		s.onDemand[2].Inc()
		return nil, ErrLimited
	}
	sig, err := s.Sign(rrset, now)
	if err != nil {
		return nil, err
	}
	s.onDemand[1].Inc()
	s.cache.store(key, sig)
	return sig, nil
}

// DNSKEY returns the zone's DNSKEY RRset at now (Keyset.DNSKEY).
func (s *Signer) DNSKEY(now time.Time) []dns.RR { return s.keys.DNSKEY(s.zone, s.opts.KeyTTL, now) }

// CDS returns the zone's CDS RRset at now (Keyset.CDS).
func (s *Signer) CDS(now time.Time) []dns.RR { return s.keys.CDS(s.zone, s.opts.KeyTTL, now) }

// CDNSKEY returns the zone's CDNSKEY RRset at now (Keyset.CDNSKEY).
func (s *Signer) CDNSKEY(now time.Time) []dns.RR {
	return s.keys.CDNSKEY(s.zone, s.opts.KeyTTL, now)
}
