package catalog

import (
	"encoding/binary"

	"github.com/miekg/dns"
)

// StaticAddresses are a name's static A and AAAA RRsets in the form an answer writes them: for
// each record in zone order its TTL (4 bytes, network order) and its address (4 or 16 bytes).
// A query path composes the records from them without reaching the RRs behind.
type StaticAddresses struct {
	// wire holds each family's records, by Family.
	wire [2][]byte
}

// Records returns the records of family f, each TTL and address, and how many there are
// (0 for none).
func (a *StaticAddresses) Records(f Family) ([]byte, int) {
	if a == nil {
		return nil, 0
	}
	w := a.wire[f]
	return w, len(w) / (4 + addressLen(f))
}

// addressLen is the size of an address of family f.
func addressLen(f Family) int {
	if f == IPv4 {
		return 4
	}
	return 16
}

// staticAddresses returns the A and AAAA RRsets of static in wire form. An RRset with a
// record whose address is not of its type's family (an A record holding an IPv6 address) is
// left out, so that it is answered from the RRs.
func staticAddresses(static map[uint16][]dns.RR) StaticAddresses {
	var a StaticAddresses
	for f, rrtype := range [2]uint16{IPv4: dns.TypeA, IPv6: dns.TypeAAAA} {
		a.wire[f] = wireAddresses(static[rrtype], Family(f))
	}
	return a
}

// wireAddresses returns rrs, address records of family f, as StaticAddresses holds them; nil
// for none or for a record that is not one.
func wireAddresses(rrs []dns.RR, f Family) []byte {
	if len(rrs) == 0 {
		return nil
	}
	out := make([]byte, 0, len(rrs)*(4+addressLen(f)))
	for _, rr := range rrs {
		ip := AddressOf(rr)
		if len(ip) != addressLen(f) {
			return nil
		}
		out = binary.BigEndian.AppendUint32(out, rr.Header().Ttl)
		out = append(out, ip...)
	}
	return out
}

// AddressOf returns the address of rr as an answer writes it: an A record's 4 bytes, an AAAA
// record's 16; nil for any other record.
func AddressOf(rr dns.RR) []byte {
	switch x := rr.(type) {
	case *dns.A:
		return x.A.To4()
	case *dns.AAAA:
		return x.AAAA
	}
	return nil
}
