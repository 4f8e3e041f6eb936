package fastpath

import (
	"hash/maphash"
	"net/netip"
	"sync/atomic"
)

// clientSlots is the size of a server's table of connections per client.
const clientSlots = 1 << 16

// clientConns counts the TCP connections each client has open on a server, in a fixed table of
// counters indexed by a keyed hash of the client (an IPv4 address, or an IPv6 address's /64,
// which one host may hold whole): no lock, no allocation, 256 KiB. Two clients whose hashes
// meet share a counter, which only makes the limit of each stricter, and rarely: the key is
// random, so a client cannot aim at another's counter.
type clientConns struct {
	seed maphash.Seed
	n    [clientSlots]atomic.Int32
}

func newClientConns() *clientConns { return &clientConns{seed: maphash.MakeSeed()} }

// slot returns the counter of client a.
func (c *clientConns) slot(a netip.Addr) uint32 {
	a = a.Unmap()
	var key [8]byte
	if a.Is4() {
		b := a.As4()
		copy(key[:], b[:])
	} else {
		b := a.As16()
		copy(key[:], b[:8])
	}
	return uint32(maphash.Bytes(c.seed, key[:]) % clientSlots)
}

// take counts one more connection at slot i when it has fewer than most, and reports whether it
// did.
func (c *clientConns) take(i uint32, most int32) bool {
	if c.n[i].Add(1) > most {
		c.n[i].Add(-1)
		return false
	}
	return true
}

// give counts one connection less at slot i.
func (c *clientConns) give(i uint32) { c.n[i].Add(-1) }
