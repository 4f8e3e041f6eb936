package dnssec

import (
	"slices"

	"github.com/miekg/dns"
)

// TypeNXNAME is the pseudo-type of compact denial of existence (RFC 9824): in the type bit map
// of an NSEC record, it says that the name does not exist.
const TypeNXNAME = 128

// Compact denial of existence (RFC 9824) answers that a name does not exist, or has no record
// of a type, with one NSEC record owned by the name itself, whose next name is the name's
// immediate successor ("\000.name"): it covers no other name, so it tells nothing of the zone.
// A name that does not exist gets the type bit map RRSIG NSEC NXNAME, and the response is
// NOERROR (NXDOMAIN when the query sets the Compact Answers OK flag).

// CompactNext returns the next name of name's compact NSEC record: its immediate successor in
// canonical order.
func CompactNext(name string) string {
	if name == "." {
		return "\\000."
	}
	return "\\000." + name
}

// NSEC returns the NSEC record of owner with next name next and the types (unsorted, repeats
// allowed), to which it adds RRSIG and NSEC, with the TTL ttl.
func NSEC(owner, next string, types []uint16, ttl uint32) *dns.NSEC {
	bitmap := append(slices.Clone(types), dns.TypeRRSIG, dns.TypeNSEC)
	slices.Sort(bitmap)
	return &dns.NSEC{
		Hdr:        dns.RR_Header{Name: owner, Rrtype: dns.TypeNSEC, Class: dns.ClassINET, Ttl: ttl},
		NextDomain: next,
		TypeBitMap: slices.Compact(bitmap),
	}
}

// NameError returns the compact denial of name's existence: an NSEC record owned by name,
// next name its successor, types RRSIG NSEC NXNAME, with the TTL ttl (the zone's negative TTL).
func NameError(name string, ttl uint32) *dns.NSEC {
	return NSEC(name, CompactNext(name), []uint16{TypeNXNAME}, ttl)
}

// CanonicalKey returns a key of name (presentation form, fully qualified) whose byte order is
// the canonical order of names (RFC 4034 6.1): labels compared from the root, each as
// lower-case octets, a name before the names below it. ok is false for a name that does not
// pack.
func CanonicalKey(name string) (key []byte, ok bool) {
	buf := make([]byte, 256)
	end, err := dns.PackDomainName(dns.CanonicalName(name), buf, 0, nil, false)
	if err != nil {
		return nil, false
	}
	return AppendWireKey(make([]byte, 0, 2*end), buf[:end]), true
}

// AppendWireKey appends CanonicalKey's key of wire, a name in lower case in wire form
// (uncompressed), to dst; it allocates nothing when dst has room for it (twice the name's
// length).
func AppendWireKey(dst, wire []byte) []byte {
	var starts [128]uint8 // the offset of each label's length octet
	n := 0
	for off := 0; off < len(wire) && wire[off] != 0 && n < len(starts); off += int(wire[off]) + 1 {
		starts[n] = uint8(off)
		n++
	}
	for i := n - 1; i >= 0; i-- {
		off := int(starts[i])
		// Octets 0 and 1 are escaped as 1 1 and 1 2, so that 0 ends a label and sorts first:
		// a label before its extensions ("a" before "a\000").
		for _, c := range wire[off+1 : min(off+1+int(wire[off]), len(wire))] {
			switch c {
			case 0:
				dst = append(dst, 1, 1)
			case 1:
				dst = append(dst, 1, 2)
			default:
				dst = append(dst, c)
			}
		}
		dst = append(dst, 0)
	}
	return dst
}
