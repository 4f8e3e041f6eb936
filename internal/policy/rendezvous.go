package policy

import (
	"encoding/binary"
	"math"
	"net/netip"
	"slices"

	"github.com/meridian-gslb/meridian/internal/config"
)

// Weighted rendezvous hashing (highest random weight), the consistent-hash mode. A client's key
// is its network of the record's hash prefix; each candidate's identity is its address (the
// canonical text of an IP address, the canonical host name otherwise), never its position, so
// that every instance computes the same answer from the same healthy backends, and a backend
// that leaves moves only the clients it had. For a key k and an identity i:
//
//	k     = mix(mix(hi) ^ mix(lo ^ bits))  // the network's address as 128 bits hi:lo, its length
//	h     = mix(k ^ mix(fnv(i)))           // fnv: FNV-1a 64 of the text; mix: SplitMix64's finaliser
//	u     = (h>>11 + 0.5) / 2^53           // uniform in (0, 1)
//	score = weight / -ln(u)
//
// and the candidate with the highest score wins (with equal weights, the highest h: the same
// order). An IPv4 network counts as IPv4-mapped IPv6; an invalid client as the zero address of
// length 0. A weight of 0 or less is never chosen while a candidate of the set has a positive
// weight; when none has, every candidate counts with the same weight. weight is
// Candidate.Weight divided by Candidate.Share, as weighted divides it.

// HashBits returns how many leading bits of client consistent-hash keeps with p: p.V4 for an
// IPv4 client (IPv4-mapped IPv6 counts as IPv4), p.V6 otherwise, within 0 and the address's
// length. It is the EDNS Client Subnet scope of the answer. An invalid client keeps 0.
func HashBits(p config.HashPrefix, client netip.Addr) int {
	client = client.Unmap()
	bits := p.V6
	if client.Is4() {
		bits = p.V4
	}
	return min(max(bits, 0), client.BitLen())
}

// subnetKey returns the hash of client's network of p.
func subnetKey(client netip.Addr, p config.HashPrefix) uint64 {
	var a [16]byte
	client = client.Unmap()
	bits := HashBits(p, client)
	if pfx, err := client.Prefix(bits); err == nil {
		a = pfx.Addr().As16()
	}
	hi, lo := binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])
	return mix64(mix64(hi) ^ mix64(lo^uint64(bits)))
}

// identityKey returns the hash of c's identity, on a stack buffer.
func identityKey(c *Candidate) uint64 {
	if c.Addr.IsValid() {
		var buf [64]byte
		return mix64(fnv64(c.Addr.AppendTo(buf[:0])))
	}
	return mix64(fnv64(c.Host))
}

// rendezvousWeight returns c's weight for the scores: Weight/Share, 0 for a weight of 0 or less.
func rendezvousWeight(c *Candidate) float64 {
	if c.Weight <= 0 {
		return 0
	}
	return float64(c.Weight) / float64(max(c.Share, 1))
}

const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

func fnv64[T []byte | string](s T) uint64 {
	h := uint64(fnvOffset64)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime64
	}
	return h
}

// mix64 is the finaliser of SplitMix64: every input bit moves about half the output bits.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// highest finds the winner of one rendezvous: offer every candidate, in a fixed order, then
// read winner. Ties go to the first offered.
type highest struct {
	key uint64
	// equal is set when every weight offered is the same positive number: the highest draw
	// wins, and no score needs computing.
	equal bool
	// best and score are the winner among the positive weights; plain and draw among all,
	// counted with equal weights.
	best, plain int
	score       float64
	draw        uint64
}

func newHighest(key uint64, equal bool) highest {
	return highest{key: key, equal: equal, best: -1, plain: -1}
}

// offer scores candidate i, whose identity hashes to id, with weight w.
func (h *highest) offer(i int, id uint64, w float64) {
	x := mix64(h.key ^ id)
	if h.plain < 0 || x > h.draw {
		// With equal weights the score grows with u, so the highest draw wins.
		h.plain, h.draw = i, x
	}
	if w <= 0 || h.equal {
		return
	}
	u := (float64(x>>11) + 0.5) / (1 << 53)
	if s := w / -math.Log(u); h.best < 0 || s > h.score {
		h.best, h.score = i, s
	}
}

// winner returns the index offered that won, or -1 when none was.
func (h *highest) winner() int {
	if h.best >= 0 {
		return h.best
	}
	return h.plain
}

// Rendezvous is weighted rendezvous hashing prepared over candidates, their identities hashed
// once: the chain's hash step, over whatever subset of them is left.
type Rendezvous struct {
	ids     []uint64
	weights []float64
	prefix  config.HashPrefix
	// equal is set when every candidate has the same weight.
	equal bool
}

// PrepareRendezvous prepares rendezvous hashing over cands, hashing the clients' networks of p.
func PrepareRendezvous(cands []Candidate, p config.HashPrefix) *Rendezvous {
	r := &Rendezvous{ids: make([]uint64, len(cands)), weights: make([]float64, len(cands)), prefix: p}
	for i := range cands {
		r.ids[i], r.weights[i] = identityKey(&cands[i]), rendezvousWeight(&cands[i])
	}
	r.equal = !slices.ContainsFunc(r.weights, func(w float64) bool { return w != r.weights[0] })
	return r
}

// Pick returns the position in idx of the candidate that weighted rendezvous hashing gives
// client, whose network of the prefix is the key (see HashBits), over the prepared candidates
// idx[0], idx[1], ...; -1 when idx is empty. A candidate's identity is its address or host
// name, not its index, and ties (the same identity twice) go to the first in idx. It does not
// allocate. Over the whole set, it gives what Set.Pick of a consistent-hash Set gives.
func (r *Rendezvous) Pick(idx []int, client netip.Addr) int {
	equal := true
	for _, i := range idx {
		equal = equal && r.weights[i] == r.weights[idx[0]]
	}
	h := newHighest(subnetKey(client, r.prefix), equal)
	for pos, i := range idx {
		h.offer(pos, r.ids[i], r.weights[i])
	}
	return h.winner()
}

// pickAll is Pick over every prepared candidate: consistent-hash's pick, the winner's index
// for client, -1 when there is none.
func (r *Rendezvous) pickAll(client netip.Addr) int {
	h := newHighest(subnetKey(client, r.prefix), r.equal)
	for i, id := range r.ids {
		h.offer(i, id, r.weights[i])
	}
	return h.winner()
}
