package answer

import (
	"encoding/binary"
	"net/netip"
	"unsafe"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/cookie"
)

// Sizes and bits of the DNS wire format that the fast path reads and writes.
const (
	headerLen   = 12      // ID, flags and the four section counts
	rrFixedLen  = 10      // a record's type, class, TTL and rdlength
	optFixedLen = 1 + 10  // an OPT record: the root owner and the fixed fields
	ecsFixedLen = 4 + 4   // an ECS option: code, length, family, source and scope prefixes
	maxNameWire = 255     // the longest name, in wire form (RFC 1035 3.1)
	flagQR      = 1 << 15 // a response
	flagOpcode  = 0xf << 11
	flagAA      = 1 << 10
	flagTC      = 1 << 9
	flagRD      = 1 << 8
	flagCD      = 1 << 4
	ednsDO      = 1 << 15 // the DO bit of an OPT record's TTL
)

// fastQuery is a query as AppendFast parsed it; its slices are parts of the packet.
type fastQuery struct {
	id uint16
	// flags are the query's RD and CD bits, which the reply copies.
	flags uint16
	// question is the question section as sent (name, type, class); name its name.
	question, name []byte
	qtype          uint16
	// lower is the name in lower-case presentation form ("www.example.org."), lowerLen long;
	// lowerWire the name in lower-case wire form, len(name) long: the owner of the answer's
	// records at the query's name.
	lower     [maxNameWire]byte
	lowerLen  int
	lowerWire [maxNameWire]byte

	// edns is set when the query has an OPT record, of UDP buffer size udpSize, DO bit do.
	edns    bool
	udpSize uint16
	do      bool
	// co is the query's Compact Answers OK flag (RFC 9824), which a signed reply echoes;
	// AppendFast clears it for the others.
	co bool
	// ecs is set when the query has a Client Subnet option (with opts.UseECS): its family,
	// source prefix and address bytes, and the client address it gives (invalid for prefix 0:
	// the transport address is the client then).
	ecs       bool
	ecsFamily uint16
	ecsSource uint8
	ecsAddr   []byte
	ecsClient netip.Addr
	// cookie is the data of the query's COOKIE option, nil without one; with cookies on,
	// replyCookie is the option data of the reply (the client cookie and a new server cookie),
	// replyCookieLen long: 0 when the reply carries none. (An array, not a slice of one, so
	// that the query stays on the stack.)
	cookie         []byte
	replyCookie    [cookie.OptionLen]byte
	replyCookieLen int

	// limit is the largest response the query may get (sizeLimit).
	limit int
}

// parse reads pkt into q and reports whether it is a query AppendFast may answer (see there);
// useECS allows a Client Subnet option.
func (q *fastQuery) parse(pkt []byte, useECS bool) bool {
	if len(pkt) < headerLen {
		return false
	}
	flags := binary.BigEndian.Uint16(pkt[2:])
	if flags&(flagQR|flagOpcode|flagTC) != 0 || binary.BigEndian.Uint16(pkt[4:]) != 1 ||
		binary.BigEndian.Uint16(pkt[6:]) != 0 || binary.BigEndian.Uint16(pkt[8:]) != 0 {
		return false
	}
	additional := binary.BigEndian.Uint16(pkt[10:])
	if additional > 1 {
		return false
	}
	q.id, q.flags = binary.BigEndian.Uint16(pkt), flags&(flagRD|flagCD)
	end, ok := q.parseName(pkt, headerLen)
	if !ok || end+4 > len(pkt) {
		return false
	}
	q.name = pkt[headerLen:end]
	q.qtype = binary.BigEndian.Uint16(pkt[end:])
	if !fastType(q.qtype) || binary.BigEndian.Uint16(pkt[end+2:]) != dns.ClassINET {
		return false
	}
	q.question = pkt[headerLen : end+4]
	rest := pkt[end+4:]
	if additional == 0 {
		return len(rest) == 0
	}
	return q.parseOPT(rest, useECS)
}

// fastType reports whether the fast path may answer a query of type t: any data type but DS
// (which CoreDNS's server routes to the closest parent zone it serves, perhaps another server
// block's) and the types it leaves to the slow path's particular handling: ANY (RFC 8482), the
// transfers (REFUSED, or the transfer plugin before gslb), OPT, and the meta types (128-255).
func fastType(t uint16) bool {
	switch {
	case t == 0, t == dns.TypeDS, t == dns.TypeOPT, t >= 128 && t <= 255:
		return false
	}
	return true
}

// parseName reads the uncompressed name at off of pkt into q.lower and q.lowerWire and returns
// the offset after it. It accepts plain names only: labels of letters, digits, hyphens and
// underscores, which read and write the same in presentation form.
func (q *fastQuery) parseName(pkt []byte, off int) (int, bool) {
	n, w := 0, 0
	for {
		if off >= len(pkt) {
			return 0, false
		}
		c := int(pkt[off])
		off++
		if c == 0 {
			break
		}
		// A label of at most 63 bytes (the top bits are pointers and extended labels), and a
		// name of at most 255 bytes with its final root label.
		if c > 63 || off+c > len(pkt) || n+c+1 > maxNameWire-1 {
			return 0, false
		}
		q.lowerWire[w] = byte(c)
		w++
		for _, b := range pkt[off : off+c] {
			switch {
			case 'A' <= b && b <= 'Z':
				b += 'a' - 'A'
			case 'a' <= b && b <= 'z', '0' <= b && b <= '9', b == '-', b == '_':
			default:
				return 0, false
			}
			q.lower[n] = b
			q.lowerWire[w] = b
			n++
			w++
		}
		q.lower[n] = '.'
		n++
		off += c
	}
	q.lowerWire[w] = 0
	if n == 0 {
		q.lower[0] = '.'
		n = 1
	}
	q.lowerLen = n
	return off, true
}

// lowerName returns the query's name in lower-case presentation form. The string is q.lower's
// memory, without a copy: it must not outlive q.
func (q *fastQuery) lowerName() string {
	return unsafe.String(&q.lower[0], q.lowerLen)
}

// owner returns the query's name in lower-case wire form: the owner of the records at it.
func (q *fastQuery) owner() []byte { return q.lowerWire[:len(q.name)] }

// parseOPT reads rr, the last record of the query, which must be an OPT record (RFC 6891 6.1.2)
// of EDNS version 0, with no option but one COOKIE option and, with useECS, one Client Subnet
// option.
func (q *fastQuery) parseOPT(rr []byte, useECS bool) bool {
	if len(rr) < optFixedLen || rr[0] != 0 || binary.BigEndian.Uint16(rr[1:]) != dns.TypeOPT {
		return false
	}
	ttl := binary.BigEndian.Uint32(rr[5:])
	if version := ttl >> 16 & 0xff; version != 0 {
		return false // BADVERS
	}
	q.edns, q.udpSize, q.do = true, binary.BigEndian.Uint16(rr[3:]), ttl&ednsDO != 0
	q.co = q.do && ttl&ednsCO != 0
	rdata := rr[optFixedLen:]
	if int(binary.BigEndian.Uint16(rr[9:])) != len(rdata) {
		return false
	}
	for len(rdata) > 0 {
		if len(rdata) < 4 {
			return false
		}
		code, n := binary.BigEndian.Uint16(rdata), int(binary.BigEndian.Uint16(rdata[2:]))
		if 4+n > len(rdata) {
			return false
		}
		data := rdata[4 : 4+n]
		rdata = rdata[4+n:]
		switch {
		case code == dns.EDNS0COOKIE && q.cookie == nil && n >= cookie.ClientLen:
			q.cookie = data // a malformed one, or two, are the slow path's FORMERR
		case code == dns.EDNS0SUBNET && useECS && !q.ecs:
			if !q.parseECS(data) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// parseECS reads the data of a Client Subnet option and validates it as Respond does (ecsClient):
// the address must have exactly the bytes its source prefix needs (RFC 7871 6), without bits
// set beyond the prefix.
func (q *fastQuery) parseECS(data []byte) bool {
	if len(data) < 4 {
		return false
	}
	family, source, addr := binary.BigEndian.Uint16(data), data[2], data[4:]
	if len(addr) != (int(source)+7)/8 {
		return false
	}
	var ip [16]byte
	copy(ip[:], addr)
	ecs := dns.EDNS0_SUBNET{Family: family, SourceNetmask: source, SourceScope: data[3]}
	switch family {
	case 1:
		ecs.Address = ip[:4]
	case 2:
		ecs.Address = ip[:]
	}
	client, ok := ecsClient(&ecs)
	if !ok {
		return false
	}
	q.ecs, q.ecsFamily, q.ecsSource, q.ecsAddr, q.ecsClient = true, family, source, addr, client
	return true
}

// sizeLimit is the largest response the query may get: over UDP 512 bytes without EDNS, else
// the client's size within [512, 1232] (udpLimit, as finish cuts the slow path's); over TCP
// maxFastTCP.
func (q *fastQuery) sizeLimit(tcp bool) int {
	switch {
	case tcp:
		return maxFastTCP
	case q.edns:
		return udpLimit(q.udpSize)
	}
	return dns.MinMsgSize
}

// maxFastTCP is the largest response the fast path writes over TCP: larger ones (which the
// slow path sends whole, uncompressed) take the slow path.
const maxFastTCP = 4096
