// Package policy holds the selection modes as pure functions: given one record's healthy
// candidates for one address family, prepared once when health or configuration changes, and the
// client of a query, it picks the backends to answer with. Nothing here locks or allocates per
// query beyond what the caller's destination slice needs.
//
// The geo modes, geoip and geoip_affinity, prepare a GeoTable instead, over every backend of the
// family, healthy or not, and select for the client's geo.Location, which the data sources of
// package geo look up. Rule and GeoTable.Explain say how a mode chooses, for explanations.
package policy

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
)

// Candidate describes one healthy, enabled backend as the modes see it.
type Candidate struct {
	Priority int
	Weight   int
	// Addr is the backend's address; invalid for host-name backends, which sort by Host.
	Addr netip.Addr
	// Host is the backend's address as the configuration writes it: the host name, or the
	// IP address's text, which ip-hash's text order sorts by.
	Host string
	// Share, when more than 1, is the number of candidates that share Weight (the targets a
	// site publishes for one placeholder backend, whose weight is the site's): weighted gives
	// each Weight/Share.
	Share int
	// RTT is the backend's smoothed round-trip time, as its probes measured it; 0 when not
	// measured (the rtt step ranks such candidates last).
	RTT time.Duration
	// Load is the backend's load relative to its capacity (1 is full); negative when not
	// known (the load step ranks such candidates last).
	Load float64
	// Vantages are the backend's RTTs as the instances of each site measured them (quorum
	// mode, by redis_site): the rtt step steers a client whose location is a site by that
	// site's. Nil when none did; never written.
	Vantages map[string]time.Duration
}

// shareScale multiplies every weight before a share divides it: a multiple of 1..16, so that
// the shares of sites with up to 16 targets are exact.
const shareScale = 720720

// Set is one record's candidates for one address family, ordered for its mode. Build it with
// Prepare; the candidate at index i of the set is the input candidate Order[i].
type Set struct {
	mode config.Mode
	// Order maps a set index to the index of the candidate given to Prepare.
	Order []int
	// groupStart and groupEnd bound the priority group failover answers with (see
	// Options.MinHealthy).
	groupStart, groupEnd int
	// cumWeights are the running sums of the candidates' weights (weighted).
	cumWeights []uint64
	// hash is consistent-hash's rendezvous hashing, over the candidates in set order.
	hash *Rendezvous
	// next is the rotation counter of roundrobin; shared by the sets of one record so that a
	// health change does not restart the rotation.
	next *atomic.Uint64
}

// Len returns the number of candidates in the set.
func (s *Set) Len() int { return len(s.Order) }

// Options are the settings of a record that Prepare reads besides its mode. The zero value
// suits every mode but consistent-hash, whose prefix it sets to /0.
type Options struct {
	// HashOrder is ip-hash's order of the candidates (the zero value is
	// config.HashOrderAddress).
	HashOrder config.HashOrder
	// HashPrefix is the client prefix consistent-hash hashes.
	HashPrefix config.HashPrefix
	// MinHealthy is how many candidates a priority group of failover needs: a group with
	// fewer counts as down, and the next one answers. When no group has that many, the best
	// group answers. 0 counts as 1.
	MinHealthy int
	// ZeroWeightIdle makes weighted give a weight of 0 (or less) no share while a candidate
	// has a positive weight; without it, such a weight counts as 1.
	ZeroWeightIdle bool
}

// OptionsOf returns the Options a record's configuration sets.
func OptionsOf(rec *config.Record) Options {
	s := rec.Steering()
	return Options{HashOrder: s.HashOrder, HashPrefix: s.HashPrefix, MinHealthy: s.MinHealthy, ZeroWeightIdle: s.ZeroWeightIdle}
}

// Prepare orders candidates for mode and precomputes what Pick needs, with the record's
// settings o (each mode reads its own). counter is the record's rotation counter (roundrobin);
// it may be nil for other modes.
func Prepare(mode config.Mode, cands []Candidate, o Options, counter *atomic.Uint64) *Set {
	if len(cands) == 0 {
		if s := emptySets[mode]; s != nil {
			return s
		}
	}
	s := &Set{mode: mode, Order: make([]int, len(cands)), next: counter}
	for i := range s.Order {
		s.Order[i] = i
	}
	switch {
	case mode == config.ModeIPHash && o.HashOrder == config.HashOrderText:
		// CoreDNS-GSLB's order: the addresses as written, compared as bytes.
		slices.SortStableFunc(s.Order, func(a, b int) int { return cmp.Compare(cands[a].Host, cands[b].Host) })
	case mode == config.ModeIPHash || mode == config.ModeConsistentHash:
		// A deterministic order that does not depend on the configuration's order.
		slices.SortStableFunc(s.Order, func(a, b int) int { return compareAddress(cands[a], cands[b]) })
	case mode == config.ModeRoundRobin || mode == config.ModeRandom || mode == config.ModeWeighted:
		// Configuration order.
	default:
		// failover, and the geo modes' final fallback: best priority first, ties in config order.
		slices.SortStableFunc(s.Order, func(a, b int) int { return cmp.Compare(cands[a].Priority, cands[b].Priority) })
		s.groupStart, s.groupEnd = serveGroup(cands, s.Order, o.MinHealthy)
		if mode == config.ModeFailover { // not the geo modes' fallback sets, which are not failover's
			if shared := sharedFailoverSet(s); shared != nil {
				return shared
			}
		}
	}
	switch mode {
	case config.ModeWeighted:
		s.cumWeights = make([]uint64, len(s.Order))
		idle := o.ZeroWeightIdle && slices.ContainsFunc(cands, func(c Candidate) bool { return c.Weight > 0 })
		var sum uint64
		for i, idx := range s.Order {
			if !idle || cands[idx].Weight > 0 { // an idle candidate's running sum does not grow: never drawn
				sum += scaledWeight(cands[idx].Weight, cands[idx].Share)
			}
			s.cumWeights[i] = sum
		}
	case config.ModeConsistentHash:
		ordered := make([]Candidate, len(s.Order))
		for i, idx := range s.Order {
			ordered[i] = cands[idx]
		}
		s.hash = PrepareRendezvous(ordered, o.HashPrefix)
	}
	return s
}

// emptySets are the sets of no candidate, one per mode, that Prepare shares: most records
// have backends of one address family only, and the other family's set is empty. An empty set
// reads only its mode; consistent-hash's has none here, as its Scope reads the record's hash
// prefix.
var emptySets = func() map[config.Mode]*Set {
	m := make(map[config.Mode]*Set, len(config.Modes))
	for _, mode := range config.Modes {
		if mode != config.ModeConsistentHash {
			m[mode] = &Set{mode: mode, Order: []int{}}
		}
	}
	return m
}()

// sharedFailover holds, for n up to sharedFailoverMax candidates, every failover set of n
// candidates in configuration order, by the bounds of the group it answers with: such a set
// says nothing of its record, and most failover records of a big zone have one of these.
// Prepare returns them in place of its own. Index: [n][groupStart][groupEnd].
var sharedFailover = func() (t [sharedFailoverMax + 1][sharedFailoverMax][sharedFailoverMax + 1]*Set) {
	for n := 1; n <= sharedFailoverMax; n++ {
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		for start := range n {
			for end := start + 1; end <= n; end++ {
				t[n][start][end] = &Set{mode: config.ModeFailover, Order: order, groupStart: start, groupEnd: end}
			}
		}
	}
	return t
}()

// sharedFailoverMax is the most candidates of the sets in sharedFailover.
const sharedFailoverMax = 4

// sharedFailoverSet returns the set of sharedFailover that is the same as s, a failover set,
// or nil when there is none: s has more candidates, or not in configuration order.
func sharedFailoverSet(s *Set) *Set {
	n := len(s.Order)
	if n > sharedFailoverMax || s.groupStart >= s.groupEnd {
		return nil
	}
	for i, idx := range s.Order {
		if idx != i {
			return nil
		}
	}
	return sharedFailover[n][s.groupStart][s.groupEnd]
}

// scaledWeight is weighted's weight of a candidate: weight (1 for 0 or less) times shareScale,
// divided by share.
func scaledWeight(weight, share int) uint64 {
	return uint64(max(weight, 1)) * shareScale / uint64(max(share, 1))
}

func compareAddress(a, b Candidate) int {
	switch {
	case a.Addr.IsValid() && b.Addr.IsValid():
		return a.Addr.Compare(b.Addr)
	case a.Addr.IsValid():
		return -1
	case b.Addr.IsValid():
		return 1
	default:
		return cmp.Compare(a.Host, b.Host)
	}
}

// IsGeo reports whether mode selects by the client's location, with a GeoTable.
func IsGeo(mode config.Mode) bool {
	return mode == config.ModeGeoIP || mode == config.ModeGeoIPAffinity
}

// DependsOnClient reports whether the mode's answer varies with the client address, which
// decides the EDNS Client Subnet scope of the reply.
func DependsOnClient(mode config.Mode) bool {
	return mode == config.ModeIPHash || mode == config.ModeConsistentHash
}

// Scope returns how many leading bits of client the set's answer depends on, the EDNS Client
// Subnet scope of the reply: 0 for the modes that do not depend on the client, the hash prefix
// for consistent-hash (see HashBits; 96 more for an IPv4-mapped IPv6 client), and the whole
// address for ip-hash.
func (s *Set) Scope(client netip.Addr) int {
	switch s.mode {
	case config.ModeIPHash:
		return client.BitLen()
	case config.ModeConsistentHash:
		if client.Is4In6() {
			return 96 + HashBits(s.hash.prefix, client) // the mapping's leading bits count
		}
		return HashBits(s.hash.prefix, client)
	}
	return 0
}

// Pick appends to dst the set indexes chosen for a query from client and returns dst.
// It appends nothing when the set is empty.
func (s *Set) Pick(client netip.Addr, dst []int) []int {
	n := len(s.Order)
	if n == 0 {
		return dst
	}
	switch s.mode {
	case config.ModeRoundRobin:
		return append(dst, int(s.next.Add(1)-1)%n)
	case config.ModeRandom:
		start := len(dst)
		for i := range n {
			dst = append(dst, i)
		}
		shuffled := dst[start:]
		for i := n - 1; i > 0; i-- {
			j := rand.IntN(i + 1)
			shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
		}
		return dst
	case config.ModeWeighted:
		r := rand.Uint64N(s.cumWeights[n-1])
		i, _ := slices.BinarySearchFunc(s.cumWeights, r, func(cum, r uint64) int {
			if cum <= r {
				return -1
			}
			return 1
		})
		return append(dst, i)
	case config.ModeIPHash:
		return append(dst, int(HashAddr(client)%uint32(n)))
	case config.ModeConsistentHash:
		return append(dst, s.hash.pickAll(client))
	default:
		for i := s.groupStart; i < s.groupEnd; i++ {
			dst = append(dst, i)
		}
		return dst
	}
}

// HashAddr returns the 32-bit FNV-1a hash of the address in its canonical text form
// ("192.0.2.1", "2001:db8::1"), the key CoreDNS-GSLB's ip-hash uses too (by default it orders
// the backends differently: config.HashOrderText is its order, and docs/modes.md says what a
// migration does). It is computed on a stack buffer and never allocates.
func HashAddr(a netip.Addr) uint32 {
	var buf [64]byte
	const (
		offset32 = 2166136261
		prime32  = 16777619
	)
	h := uint32(offset32)
	for _, c := range a.AppendTo(buf[:0]) {
		h ^= uint32(c)
		h *= prime32
	}
	return h
}

// Rule says in a few words how mode picks among n healthy candidates of a Set for client, as
// explanations print it; o are the options given to Prepare. The geo modes explain themselves
// step by step: see GeoTable.Explain.
func Rule(mode config.Mode, o Options, client netip.Addr, n int) string {
	switch mode {
	case config.ModeRoundRobin:
		return "roundrobin (one in turn)"
	case config.ModeRandom:
		return "random (all, shuffled)"
	case config.ModeWeighted:
		return "weighted (one at random, in proportion to weight)"
	case config.ModeIPHash:
		by := "address"
		if o.HashOrder == config.HashOrderText {
			by = "text"
		}
		return fmt.Sprintf("ip-hash (FNV-1a of %s mod %d = %d, in %s order)", client, n, HashAddr(client)%uint32(max(n, 1)), by)
	case config.ModeConsistentHash:
		network := "no network (no client address)"
		if pfx, err := client.Unmap().Prefix(HashBits(o.HashPrefix, client)); err == nil {
			network = pfx.String()
		}
		return fmt.Sprintf("consistent-hash (the highest weighted rendezvous score for %s, by backend address)", network)
	}
	if o.MinHealthy > 1 {
		return fmt.Sprintf("failover (every backend of the best priority with at least %d healthy, else of the best priority)", o.MinHealthy)
	}
	return "failover (every backend of the best priority)"
}
