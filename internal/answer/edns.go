package answer

import (
	"net"
	"net/netip"

	"github.com/miekg/dns"
)

// Sizes of responses.
const (
	// advertisedUDPSize is the EDNS buffer size Meridian announces (the DNS flag day 2020 value).
	advertisedUDPSize = 1232
	maxTCPSize        = dns.MaxMsgSize
	// tsigReserve is the room a TSIG signature takes at most: the record's header and fixed
	// fields, a key and an algorithm name of up to 64 bytes each, and a SHA-512 MAC.
	tsigReserve = 10 + 64 + 64 + 16 + 64
)

// readEDNS reads the request's OPT record and, with useECS, its Client Subnet option, which
// then replaces the client address. It returns the rcode of a request that must be refused:
// FORMERR for a second OPT record (RFC 6891 6.1.1) or a malformed Client Subnet option,
// BADVERS for an unknown EDNS version.
func (b *builder) readEDNS(useECS bool) int {
	b.opt = b.req.IsEdns0()
	if b.opt == nil {
		return dns.RcodeSuccess
	}
	if optRecords(b.req) > 1 {
		b.opt = nil // the reply carries none: which one would it answer?
		return dns.RcodeFormatError
	}
	if b.opt.Version() != 0 {
		return dns.RcodeBadVers
	}
	if !useECS {
		return dns.RcodeSuccess
	}
	for _, o := range b.opt.Option {
		ecs, ok := o.(*dns.EDNS0_SUBNET)
		if !ok {
			continue
		}
		if b.ecs != nil {
			return dns.RcodeFormatError // RFC 7871 7.1: at most one ECS option
		}
		client, ok := ecsClient(ecs)
		if !ok || paddedOptions(b.opt) {
			return dns.RcodeFormatError
		}
		b.ecs = ecs
		if client.IsValid() {
			b.client = client
		}
	}
	return dns.RcodeSuccess
}

// optRecords counts the OPT records of m's additional section.
func optRecords(m *dns.Msg) int {
	n := 0
	for _, rr := range m.Extra {
		if rr.Header().Rrtype == dns.TypeOPT {
			n++
		}
	}
	return n
}

// paddedOptions reports whether opt, as read from the wire, carried more option data than its
// options pack to. miekg/dns reads a Client Subnet address of up to a whole address whatever
// its source prefix, and packs the octets the prefix needs; so an address with more octets
// than that (RFC 7871 6: FORMERR) shows as a wire RDLENGTH above the packed one. Every other
// option packs to the bytes it was read from. An OPT record built in memory has RDLENGTH 0.
func paddedOptions(opt *dns.OPT) bool {
	wire := int(opt.Hdr.Rdlength)
	if wire == 0 {
		return false
	}
	buf := make([]byte, optFixedLen+wire)
	hdr := opt.Hdr
	end, err := dns.PackRR(opt, buf, 0, nil, false)
	opt.Hdr = hdr // PackRR sets RDLENGTH to the packed length
	return err == nil && end-optFixedLen < wire
}

// ecsClient validates an ECS option of a query (RFC 7871 6, 7.1) and returns the client
// address it carries, or an invalid address when the option asks not to use one (prefix 0).
func ecsClient(ecs *dns.EDNS0_SUBNET) (netip.Addr, bool) {
	if ecs.SourceScope != 0 {
		return netip.Addr{}, false
	}
	var addr netip.Addr
	switch ecs.Family {
	case 0:
		return netip.Addr{}, ecs.SourceNetmask == 0
	case 1:
		ip4 := ecs.Address.To4()
		if ip4 == nil || ecs.SourceNetmask > 32 {
			return netip.Addr{}, false
		}
		addr = netip.AddrFrom4([4]byte(ip4))
	case 2:
		if len(ecs.Address) != net.IPv6len || ecs.SourceNetmask > 128 {
			return netip.Addr{}, false
		}
		addr = netip.AddrFrom16([16]byte(ecs.Address))
	default:
		return netip.Addr{}, false
	}
	prefix, err := addr.Prefix(int(ecs.SourceNetmask))
	if err != nil || prefix.Addr() != addr {
		return netip.Addr{}, false // bits set beyond the source prefix
	}
	if ecs.SourceNetmask == 0 {
		return netip.Addr{}, true
	}
	return addr, true
}

// finish adds the OPT record (with the ECS echo and its scope) and truncates a UDP answer that
// does not fit the client's buffer.
func (b *builder) finish(tcp bool) *dns.Msg {
	m := b.msg
	if b.opt != nil {
		m.Extra = append(m.Extra, b.replyOPT())
	}
	size := maxTCPSize
	if !tcp {
		// The client's buffer, but never more than Meridian advertises: larger UDP answers
		// fragment, and fragments get lost or spoofed (DNS flag day 2020).
		size = dns.MinMsgSize
		if b.opt != nil {
			size = udpLimit(b.opt.UDPSize())
		}
		size -= b.reserve
	}
	if bound, ok := sizeBound(m); ok && bound <= size {
		return m
	}
	if m.Len() > size {
		m.Compress = true
		if m.Len() > size {
			m.Truncate(size)
		}
	}
	return m
}

// finishError returns a response that carries only rcode (and the OPT record for EDNS requests).
func (b *builder) finishError(rcode int) *dns.Msg {
	m := new(dns.Msg)
	m.SetRcode(b.req, rcode)
	b.msg = m
	b.ecs = nil
	if b.opt != nil {
		m.Extra = append(m.Extra, b.replyOPT())
	}
	return m
}

// udpLimit is the size a UDP answer must fit for a client that advertises an EDNS buffer of
// size bytes: its buffer, but never less than 512 bytes nor more than Meridian advertises.
func udpLimit(size uint16) int {
	return min(max(int(size), dns.MinMsgSize), advertisedUDPSize)
}

// echoScope is the scope of the ECS option of a reply: the scope of the answer, never more than
// the query's source prefix (RFC 7871 7.2.1).
func echoScope(scope int, source uint8) uint8 {
	return uint8(min(scope, int(source)))
}

func (b *builder) replyOPT() *dns.OPT {
	o := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
	o.SetUDPSize(advertisedUDPSize)
	o.SetDo(b.opt.Do())
	if b.co {
		o.Hdr.Ttl |= ednsCO // understood: a name that does not exist is NXDOMAIN
	}
	if b.ecs != nil {
		// The answer holds for every client that shares the first scope bits of the address,
		// never more than the query gave (RFC 7871 7.2.1).
		scope := echoScope(b.scope, b.ecs.SourceNetmask)
		o.Option = []dns.EDNS0{&dns.EDNS0_SUBNET{
			Code:          dns.EDNS0SUBNET,
			Family:        b.ecs.Family,
			SourceNetmask: b.ecs.SourceNetmask,
			SourceScope:   scope,
			Address:       b.ecs.Address,
		}}
	}
	return o
}

// sizeBound returns an upper bound of m's packed size without packing it, for the record types
// of common answers; ok is false when m holds another type. It saves the query path the
// allocations of dns.Msg.Len.
func sizeBound(m *dns.Msg) (n int, ok bool) {
	const header, rrFixed = 12, 10 // message header; type, class, TTL and rdlength of a record
	n = header
	for _, q := range m.Question {
		n += len(q.Name) + 1 + 4
	}
	for _, section := range [][]dns.RR{m.Answer, m.Ns, m.Extra} {
		for _, rr := range section {
			n += len(rr.Header().Name) + 1 + rrFixed
			switch x := rr.(type) {
			case *dns.A:
				n += net.IPv4len
			case *dns.AAAA:
				n += net.IPv6len
			case *dns.CNAME:
				n += len(x.Target) + 1
			case *dns.NS:
				n += len(x.Ns) + 1
			case *dns.SOA:
				n += len(x.Ns) + 1 + len(x.Mbox) + 1 + 20
			case *dns.OPT:
				for _, o := range x.Option {
					if _, isECS := o.(*dns.EDNS0_SUBNET); !isECS {
						return 0, false
					}
					n += 4 + 4 + net.IPv6len
				}
			default:
				return 0, false
			}
		}
	}
	return n, true
}
