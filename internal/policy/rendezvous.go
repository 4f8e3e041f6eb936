package policy

import (
	"math"
	"net/netip"

	"github.com/meridian-gslb/meridian/internal/config"
)

// Weighted rendezvous hashing (highest random weight), the consistent-hash mode. A client's key
// is its network of the record's hash prefix; each candidate's identity is its address (the
// canonical text of an IP address, the canonical host name otherwise), never its position, so
// that every instance computes the same answer from the same healthy backends, and a backend
// that leaves moves only the clients it had. For a key k and an identity i:
//
//	h     = mix(mix(fnv(k)) ^ mix(fnv(i)))  // fnv: FNV-1a 64; mix: the SplitMix64 finaliser
//	u     = (h>>11 + 0.5) / 2^53            // uniform in (0, 1)
//	score = weight / -ln(u)
//
// and the candidate with the highest score wins. k is the 16 bytes of the network address (an
// IPv4 network as IPv4-mapped IPv6) followed by one byte of its prefix length; an invalid client
// hashes as 17 zero bytes. A weight of 0 or less is never chosen while a candidate of the set
// has a positive weight; when none has, every candidate counts with the same weight. weight is
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

// subnetKey returns the hash of client's network of p, on a stack buffer.
func subnetKey(client netip.Addr, p config.HashPrefix) uint64 {
	var buf [17]byte
	client = client.Unmap()
	bits := HashBits(p, client)
	if pfx, err := client.Prefix(bits); err == nil {
		a := pfx.Addr().As16()
		copy(buf[:16], a[:])
		buf[16] = byte(bits)
	}
	return mix64(fnv64(buf[:]))
}

// identityKey returns the hash of c's identity, on a stack buffer.
func identityKey(c *Candidate) uint64 {
	if c.Addr.IsValid() {
		var buf [64]byte
		return mix64(fnv64(c.Addr.AppendTo(buf[:0])))
	}
	return mix64(fnvString(c.Host))
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

func fnv64(b []byte) uint64 {
	h := uint64(fnvOffset64)
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime64
	}
	return h
}

func fnvString(s string) uint64 {
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
	// best and score are the winner among the positive weights; plain and draw among all,
	// counted with equal weights.
	best, plain int
	score       float64
	draw        uint64
}

func newHighest(key uint64) highest { return highest{key: key, best: -1, plain: -1} }

// offer scores candidate i, whose identity hashes to id, with weight w.
func (h *highest) offer(i int, id uint64, w float64) {
	x := mix64(h.key ^ id)
	if h.plain < 0 || x > h.draw {
		// With equal weights the score grows with u, so the highest draw wins.
		h.plain, h.draw = i, x
	}
	if w <= 0 {
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

// RendezvousPick returns the position in idx of the candidate that weighted rendezvous hashing
// gives client, whose network of p is the key (see HashBits), over the candidates cands[idx[0]],
// cands[idx[1]], ...; -1 when idx is empty. A candidate's identity is its address or host name,
// not its index, and ties (the same identity twice) go to the first in idx. It does not
// allocate. It hashes each candidate's identity per call: Set.Pick of a consistent-hash Set,
// which hashed them once in Prepare, gives the same answer over the whole set.
func RendezvousPick(cands []Candidate, idx []int, client netip.Addr, p config.HashPrefix) int {
	h := newHighest(subnetKey(client, p))
	for pos, i := range idx {
		c := &cands[i]
		h.offer(pos, identityKey(c), rendezvousWeight(c))
	}
	return h.winner()
}

// rendezvous is consistent-hash's Pick: the set index of the winner for client.
func (s *Set) rendezvous(client netip.Addr) int {
	h := newHighest(subnetKey(client, s.hashPrefix))
	for i, id := range s.ids {
		h.offer(i, id, s.weights[i])
	}
	return h.winner()
}
