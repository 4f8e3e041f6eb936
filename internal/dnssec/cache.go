package dnssec

import (
	"bytes"
	"hash/maphash"
	"math/bits"
	"slices"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// cache keeps the signatures made on demand, by the RRset they sign: a fixed array of slots,
// each holding one RRset's signatures, chosen by a hash of the RRset; a new RRset replaces
// what its slot held. Lookups and stores are an atomic load or store each: no lock.
type cache struct {
	seed  maphash.Seed
	slots []atomic.Pointer[cacheEntry]
	mask  uint64
}

// cacheEntry is one RRset's signatures and the RRset's key (rrsetKey), which a lookup compares.
type cacheEntry struct {
	key []byte
	sig *Signed
}

// minCacheCapacity is the fewest slots a cache has.
const minCacheCapacity = 64

// newCache returns a cache of at least capacity slots, a power of two.
func newCache(capacity int) *cache {
	n := 1 << bits.Len(uint(max(capacity, minCacheCapacity)-1))
	return &cache{seed: maphash.MakeSeed(), slots: make([]atomic.Pointer[cacheEntry], n), mask: uint64(n - 1)}
}

// slot returns the slot of key.
func (c *cache) slot(key []byte) *atomic.Pointer[cacheEntry] {
	return &c.slots[maphash.Bytes(c.seed, key)&c.mask]
}

// lookup returns the signatures kept for key, nil for none.
func (c *cache) lookup(key []byte) *Signed {
	if e := c.slot(key).Load(); e != nil && bytes.Equal(e.key, key) {
		return e.sig
	}
	return nil
}

// store keeps sig as the signatures of key.
func (c *cache) store(key []byte, sig *Signed) {
	c.slot(key).Store(&cacheEntry{key: key, sig: sig})
}

// rrsetKey returns what identifies an RRset's signatures: its records in wire form with their
// owner lower-cased (the TTL is part of what a signature covers), sorted.
func rrsetKey(rrset []dns.RR) ([]byte, error) {
	wires := make([][]byte, len(rrset))
	for i, rr := range rrset {
		buf := make([]byte, dns.Len(rr)+1)
		end, err := dns.PackRR(rr, buf, 0, nil, false)
		if err != nil {
			return nil, err
		}
		wire := buf[:end]
		lowerName(wire)
		wires[i] = wire
	}
	slices.SortFunc(wires, bytes.Compare)
	return bytes.Join(wires, nil), nil
}

// lowerName lower-cases the uncompressed name at the start of wire in place.
func lowerName(wire []byte) {
	for off := 0; off < len(wire) && wire[off] != 0; {
		n := int(wire[off])
		for i := off + 1; i <= off+n && i < len(wire); i++ {
			if c := wire[i]; 'A' <= c && c <= 'Z' {
				wire[i] = c + 'a' - 'A'
			}
		}
		off += n + 1
	}
}

// limiter bounds a rate of events (a generic cell rate algorithm): each event moves a
// theoretical arrival time one interval ahead, and an event is refused while that time is
// more than a second ahead of now. It takes no lock; nil allows every event.
type limiter struct {
	interval int64 // nanoseconds per event
	tat      atomic.Int64
}

// newLimiter returns a limiter of rate events a second, nil for no limit (rate <= 0).
func newLimiter(rate int) *limiter {
	if rate <= 0 {
		return nil
	}
	return &limiter{interval: int64(time.Second) / int64(rate)}
}

// allow reports whether one more event may happen at now, and counts it when it may.
func (l *limiter) allow(now time.Time) bool {
	if l == nil {
		return true
	}
	t := now.UnixNano()
	for {
		tat := l.tat.Load()
		next := max(tat, t) + l.interval
		if next-t > int64(time.Second) {
			return false
		}
		if l.tat.CompareAndSwap(tat, next) {
			return true
		}
	}
}
