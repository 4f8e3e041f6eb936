package rrl

import (
	"net/netip"
	"slices"
)

// exemptSet holds the exempt networks by prefix length: a lookup masks the address to each
// length the set has and finds it in that length's map, so it costs one map lookup a
// length, however many networks there are.
type exemptSet struct {
	bits []int // the lengths, longest first
	nets map[netip.Prefix]struct{}
}

func newExemptSet(list []netip.Prefix) exemptSet {
	e := exemptSet{nets: make(map[netip.Prefix]struct{}, len(list))}
	for _, p := range list {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-unmapBits(p)).Masked()
		e.nets[p] = struct{}{}
		bits := p.Bits()
		if p.Addr().Is4() {
			bits += 128 // IPv4 lengths apart from IPv6 ones
		}
		if !slices.Contains(e.bits, bits) {
			e.bits = append(e.bits, bits)
		}
	}
	slices.Sort(e.bits)
	slices.Reverse(e.bits)
	return e
}

// unmapBits is 96 for an IPv4-mapped prefix, whose IPv4 prefix is 96 bits shorter.
func unmapBits(p netip.Prefix) int {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		return 96
	}
	return 0
}

// contains reports whether a is in an exempt network.
func (e exemptSet) contains(a netip.Addr) bool {
	if len(e.bits) == 0 {
		return false
	}
	a = a.Unmap()
	for _, bits := range e.bits {
		if a.Is4() != (bits >= 128) {
			continue
		}
		p, err := a.Prefix(bits % 128)
		if err == nil {
			if _, ok := e.nets[p]; ok {
				return true
			}
		}
	}
	return false
}
