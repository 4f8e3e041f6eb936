package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/dnssec"
)

// DNSSEC: what a signed zone serves signed, prepared ahead (docs/dnssec.md). A zone's own data
// (SOA, NS, the key RRsets, static RRsets, the NSEC records of the names that are not GSLB
// records) is signed when the snapshot is built, when the serial changes, and when its
// signatures are due (SignedZone); each record's answers are signed with each of its views,
// by the ViewSigner the engine gives the snapshot (SignedView). Answers copy them: no query
// signs what was prepared.

// ViewSigner signs what a record's view answers: package answer implements it, which knows
// what the answers hold.
type ViewSigner interface {
	// SignView returns the signatures of what r answers from v, reusing those of prev (the
	// record's previous ones, nil for none) that still sign the same RRsets.
	SignView(r *Record, v *View, prev *SignedView, now time.Time) *SignedView
}

// SignedRRset is an RRset and its signatures.
type SignedRRset struct {
	// RRs are the records signed: owned by the record's name (or its wildcard), in any order.
	RRs []dns.RR
	*dnssec.Signed
	// SigWire are the signatures (Signed.RRSIGs) in wire form, with their owner, packed when
	// they are made, for the fast path to copy (answer.AppendFast): empty without signatures.
	// Wire are the records in wire form too, for the RRsets the fast path copies from here
	// (SOA, NSEC, DS); empty for the others.
	SigWire, Wire Section
}

// Ready reports whether s is an RRset prepared with its signatures in wire form, which the
// fast path may copy.
func (s *SignedRRset) Ready() bool {
	return s != nil && s.Signed != nil && s.SigWire.Count > 0
}

// SignedSet is the signed RRset of one answer of a record: a set of addresses (A or AAAA), or
// a CNAME.
type SignedSet struct {
	// Key identifies the RRset (AnswerKey).
	Key uint64
	SignedRRset
}

// SignedView is a view's prepared signatures.
type SignedView struct {
	// Sets are, per family, the signed answers the view may give, sorted by Key.
	Sets [2][]SignedSet
	// NSEC is the record's NSEC record (the types its name answers now), signed: the proof of
	// NODATA at the name and, for a wildcard, of the names the wildcard answers.
	NSEC SignedRRset
	// Published are, per family, the record's localtargets-<record> answer, and PublishedRTTs
	// its localrtt-<record> answer, signed (empty when it publishes none).
	Published     [2]SignedRRset
	PublishedRTTs SignedRRset
	// Due is when the earliest of them must be made again; Epoch the keyset's epoch they
	// were made in.
	Due   time.Time
	Epoch int
	// Incomplete is set when a signature of the view could not be made: the fast path then
	// leaves the view's signed answers to the slow path.
	Incomplete bool
}

// Set returns the signed answer of family f whose key is key, nil when none was prepared.
func (s *SignedView) Set(f Family, key uint64) *SignedSet {
	if s == nil {
		return nil
	}
	sets := s.Sets[f]
	i, ok := slices.BinarySearchFunc(sets, key, func(e SignedSet, k uint64) int {
		switch {
		case e.Key < k:
			return -1
		case e.Key > k:
			return 1
		}
		return 0
	})
	if !ok {
		return nil
	}
	return &sets[i]
}

// Each calls fn with every signed RRset of the view.
func (s *SignedView) Each(fn func(*SignedRRset)) {
	for f := range s.Sets {
		for i := range s.Sets[f] {
			fn(&s.Sets[f][i].SignedRRset)
		}
	}
	fn(&s.NSEC)
	for _, p := range []*SignedRRset{&s.Published[IPv4], &s.Published[IPv6], &s.PublishedRTTs} {
		if len(p.RRs) > 0 {
			fn(p)
		}
	}
}

// answerSeed keys AnswerKey's hashes; fixed for the process, as the keys live in views.
var answerSeed = maphash.MakeSeed()

// AnswerKey returns the key of an answer of addresses (deduplicated and sorted by the caller,
// or not: the key does not depend on their order or repeats) or, when addrs is empty, of a
// CNAME to target (lower case).
func AnswerKey(addrs []netip.Addr, target string) uint64 {
	if len(addrs) == 0 {
		return maphash.String(answerSeed, target)
	}
	// A sum of the addresses' hashes, each once: the order of the answer does not matter.
	var sum uint64
	for i, a := range addrs {
		if i > 0 && slices.Contains(addrs[:i], a) {
			continue
		}
		b := a.As16()
		sum += maphash.Bytes(answerSeed, b[:])
	}
	return sum
}

// SignedZone is a zone's prepared signatures of its own data.
type SignedZone struct {
	// Serial is the SOA serial SOA and NegativeSOA sign.
	Serial           uint32
	SOA, NegativeSOA SignedRRset
	NS               SignedRRset
	// DNSKEY, CDS and CDNSKEY are the key RRsets at the apex (CDS and CDNSKEY may be empty).
	DNSKEY, CDS, CDNSKEY SignedRRset
	// Static are the signed static RRsets, by owner and type; NSEC the signed NSEC records of
	// the names that are not records (the apex, static names, empty non-terminals, cuts).
	Static map[NameType]*SignedRRset
	NSEC   map[string]*SignedRRset
	// Epoch is the keyset's epoch the key RRsets are of; Due when the earliest signature must
	// be made again.
	Epoch int
	Due   time.Time
}

// NameType is an owner name and a type.
type NameType struct {
	Name string
	Type uint16
}

// zoneSigning is how a signed zone is signed.
type zoneSigning struct {
	signer *dnssec.Signer
	views  ViewSigner
	// next is the next name of the NSEC record of each name in a wildcard's chain (see
	// island); the other names' NSEC records are compact (dnssec.CompactNext).
	next map[string]string
	// islands are the wildcards' chains, each sorted in canonical order.
	islands []island
	// carry are the signatures of the previous snapshot's records, by name, which a record's
	// first view reuses; nil once the snapshot is published.
	carry atomic.Pointer[map[string]*SignedView]
	// mu serialises the writers of signed (the serial, the passes that sign again).
	mu     sync.Mutex
	signed atomic.Pointer[SignedZone]
}

// island is the names below and at a wildcard's parent, every one an owner of an NSEC record
// whose next name is the next one (the last one's the name after the parent's subtree): a
// name the wildcard answers for lies between two of them, which proves that it does not exist
// itself (RFC 4035 3.1.3.3). Compact denial cannot prove it without signing the name.
type island struct {
	names []string
	keys  [][]byte
}

// Signer returns the zone's signer, nil for an unsigned zone.
func (z *Zone) Signer() *dnssec.Signer {
	if z.signing == nil {
		return nil
	}
	return z.signing.signer
}

// Signed returns the zone's prepared signatures, nil for an unsigned zone.
func (z *Zone) Signed() *SignedZone {
	if z.signing == nil {
		return nil
	}
	return z.signing.signed.Load()
}

// Sign makes the snapshot's zones that signers names (by origin) signed zones: their own data
// is signed now, and each record's views by views from the next Refresh on, reusing the
// signatures of prev (the snapshot served before, nil for none) that still sign the same
// RRsets. Call it before the first Refresh of the records, and CarryDone once they are
// refreshed.
func (s *Snapshot) Sign(signers map[string]*dnssec.Signer, views ViewSigner, prev *Snapshot, now time.Time) error {
	var errs []error
	for origin, signer := range signers {
		z := s.zones[origin]
		if z == nil {
			continue
		}
		z.signing = &zoneSigning{signer: signer, views: views}
		z.buildIslands()
		var prevZone *SignedZone
		if prev != nil {
			if pz := prev.zones[origin]; pz != nil && pz.signing != nil && pz.signing.signer == signer {
				prevZone = pz.Signed()
				z.signing.carry.Store(pz.carried())
			}
		}
		if err := z.signZone(prevZone, now); err != nil {
			errs = append(errs, fmt.Errorf("zone %s: %w", origin, err))
		}
	}
	return errors.Join(errs...)
}

// CarryDone drops what the records' first views reused of the previous snapshot.
func (s *Snapshot) CarryDone() {
	for _, z := range s.zones {
		if z.signing != nil {
			z.signing.carry.Store(nil)
		}
	}
}

// carried returns the signatures of the zone's records' current views, by name.
func (z *Zone) carried() *map[string]*SignedView {
	m := make(map[string]*SignedView)
	for name, n := range z.nodes {
		if n.record == nil {
			continue
		}
		if v := n.record.View(); v != nil && v.Extra().Signed != nil {
			m[name] = v.Extra().Signed
		}
	}
	return &m
}

// signView signs v, a view of r being built (nil for an unsigned zone).
func (r *Record) signView(v *View, now time.Time) *SignedView {
	s := r.Zone.signing
	if s == nil {
		return nil
	}
	var prev *SignedView
	if old := r.view.Load(); old != nil {
		prev = old.Extra().Signed
	} else if carry := s.carry.Load(); carry != nil {
		prev = (*carry)[r.Name()]
	}
	return s.views.SignView(r, v, prev, now)
}

// NSECNext returns the next name of the NSEC record of name, a name of the zone: the next
// name of its wildcard chain, or its compact successor.
func (z *Zone) NSECNext(name string) string {
	if z.signing != nil {
		if next, ok := z.signing.next[name]; ok {
			return next
		}
	}
	return dnssec.CompactNext(name)
}

// OwnTypes returns the types of the RRsets the zone holds at name besides a record's answers:
// its static RRsets (at a cut, NS and DS only), and at the apex SOA, NS and the key RRsets
// (signed is the zone's signatures being built, nil for the current ones).
func (z *Zone) OwnTypes(name string) []uint16 {
	return z.ownTypes(name, z.Signed())
}

func (z *Zone) ownTypes(name string, signed *SignedZone) []uint16 {
	var out []uint16
	n := z.nodes[name]
	if n == nil {
		return nil
	}
	for t, rrs := range n.rrsets() {
		if len(rrs) > 0 && (n.cut == nil || t == dns.TypeNS || t == dns.TypeDS) {
			out = append(out, t)
		}
	}
	if name == z.Origin {
		out = append(out, dns.TypeSOA, dns.TypeNS, dns.TypeDNSKEY)
		if signed != nil && len(signed.CDS.RRs) > 0 {
			out = append(out, dns.TypeCDS, dns.TypeCDNSKEY)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Covering returns the owner of the NSEC record that proves qname, a name a wildcard of the
// zone answers for, does not exist itself: the name of its wildcard's chain before it. ok is
// false when qname is in no chain.
func (z *Zone) Covering(qname string) (owner string, ok bool) {
	if z.signing == nil {
		return "", false
	}
	key, ok := dnssec.CanonicalKey(qname)
	if !ok {
		return "", false
	}
	return z.CoveringKey(key)
}

// CoveringKey is Covering of the name whose canonical key is key (dnssec.CanonicalKey). It
// allocates nothing.
func (z *Zone) CoveringKey(key []byte) (owner string, ok bool) {
	if z.signing == nil {
		return "", false
	}
	for _, is := range z.signing.islands {
		// The first of the chain's keys not before key.
		i, j := 0, len(is.keys)
		for i < j {
			if h := int(uint(i+j) >> 1); bytes.Compare(is.keys[h], key) < 0 {
				i = h + 1
			} else {
				j = h
			}
		}
		found := i < len(is.keys) && bytes.Equal(is.keys[i], key)
		if found || i == 0 {
			continue // qname exists, or sorts before the chain's first name (its parent)
		}
		if prefixOf(is.keys[0], key) {
			return is.names[i-1], true
		}
	}
	return "", false
}

// NSECOf returns the signed NSEC record of name, a name of the zone: its record's view's for
// a record, else the zone's. nil when there is none (the zone is not signed, the name is not
// the zone's).
func (z *Zone) NSECOf(name string) *SignedRRset {
	n := z.nodes[name]
	if n == nil || z.signing == nil {
		return nil
	}
	if n.record != nil {
		if sv := n.record.View().Extra().Signed; sv != nil {
			return &sv.NSEC
		}
		return nil
	}
	if sz := z.Signed(); sz != nil {
		return sz.NSEC[name]
	}
	return nil
}

func compareBytes(a, b []byte) int { return strings.Compare(string(a), string(b)) }

// prefixOf reports whether the canonical key parent is a prefix of key: the name of key is at
// or below parent's.
func prefixOf(parent, key []byte) bool {
	return len(key) >= len(parent) && string(key[:len(parent)]) == string(parent)
}
