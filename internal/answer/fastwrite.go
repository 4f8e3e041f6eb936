package answer

import (
	"encoding/binary"
	"net/netip"
	"strings"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
)

// The fast path writes a response in two steps: it adds up the sizes of its parts (a
// fastReply's counts and length), so that a response that does not fit the client's limit is
// left to the slow path before anything happened; then it writes the header, the question as
// sent, the sections and the OPT record.

// fastReply is the shape of a response: its rcode, whether it is authoritative, the records of
// each section (the OPT record aside) and their size.
type fastReply struct {
	rcode      int
	notAuth    bool
	an, ns, ar int
	size       int
}

// base starts the reply to q with rcode: header, question and OPT record.
func (q *fastQuery) base(rcode int) fastReply {
	return fastReply{rcode: rcode, size: q.replyLen()}
}

// addAnswer, addAuthority and addAdditional count n records of size bytes in their sections.
func (r *fastReply) addAnswer(n, size int)     { r.an += n; r.size += size }
func (r *fastReply) addAuthority(n, size int)  { r.ns += n; r.size += size }
func (r *fastReply) addAdditional(n, size int) { r.ar += n; r.size += size }

// replyLen is the size of the reply without its records: header, question and OPT.
func (q *fastQuery) replyLen() int {
	n := headerLen + len(q.question)
	if q.edns {
		n += optFixedLen
	}
	if q.ecs {
		n += ecsFixedLen + len(q.ecsAddr)
	}
	if q.replyCookieLen > 0 {
		n += 4 + q.replyCookieLen
	}
	return n
}

// appendHeader appends the reply's header, as r counts its sections, and its question.
func (q *fastQuery) appendHeader(dst []byte, r *fastReply) []byte {
	additional := r.ar
	if q.edns {
		additional++
	}
	flags := flagQR | flagAA | q.flags | uint16(r.rcode&0xf)
	if r.notAuth {
		flags &^= flagAA
	}
	dst = binary.BigEndian.AppendUint16(dst, q.id)
	dst = binary.BigEndian.AppendUint16(dst, flags)
	dst = binary.BigEndian.AppendUint16(dst, 1)
	dst = binary.BigEndian.AppendUint16(dst, uint16(r.an))
	dst = binary.BigEndian.AppendUint16(dst, uint16(r.ns))
	dst = binary.BigEndian.AppendUint16(dst, uint16(additional))
	return append(dst, q.question...)
}

// finish appends the reply's OPT record, if the query had one, with the ECS scope.
func (q *fastQuery) finish(dst []byte, scope int) []byte {
	if q.edns {
		dst = q.appendOPT(dst, scope, 0, true)
	}
	return dst
}

// appendOPT appends the reply's OPT record as replyOPT builds it: Meridian's buffer size, the
// upper bits of an extended rcode, the query's DO bit, its Client Subnet option echoed with
// the answer's scope (with ecs: finishError's replies have none), and the reply's cookie.
func (q *fastQuery) appendOPT(dst []byte, scope, rcode int, ecs bool) []byte {
	ttl := uint32(rcode>>4) << 24
	if q.do {
		ttl |= ednsDO
	}
	if q.co {
		ttl |= ednsCO
	}
	dst = append(dst, 0) // the root
	dst = binary.BigEndian.AppendUint16(dst, dns.TypeOPT)
	dst = binary.BigEndian.AppendUint16(dst, advertisedUDPSize)
	dst = binary.BigEndian.AppendUint32(dst, ttl)
	ecs = ecs && q.ecs
	rdlength := 0
	if ecs {
		rdlength += ecsFixedLen + len(q.ecsAddr)
	}
	if q.replyCookieLen > 0 {
		rdlength += 4 + q.replyCookieLen
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(rdlength))
	if ecs {
		dst = binary.BigEndian.AppendUint16(dst, dns.EDNS0SUBNET)
		dst = binary.BigEndian.AppendUint16(dst, uint16(ecsFixedLen-4+len(q.ecsAddr)))
		dst = binary.BigEndian.AppendUint16(dst, q.ecsFamily)
		dst = append(dst, q.ecsSource, echoScope(scope, q.ecsSource))
		dst = append(dst, q.ecsAddr...)
	}
	if q.replyCookieLen > 0 {
		dst = binary.BigEndian.AppendUint16(dst, dns.EDNS0COOKIE)
		dst = binary.BigEndian.AppendUint16(dst, uint16(q.replyCookieLen))
		dst = append(dst, q.replyCookie[:q.replyCookieLen]...)
	}
	return dst
}

// sectionLen is the size of s in the reply to q.
func (q *fastQuery) sectionLen(s catalog.Section) int { return s.Len(len(q.name)) }

// appendSection appends the records of s, those at the query's name under its lower-case name.
func (q *fastQuery) appendSection(dst []byte, s catalog.Section) []byte {
	if !s.AtQuery {
		return append(dst, s.Wire...)
	}
	owner := q.owner()
	for w := s.Wire; len(w) >= rrFixedLen; {
		n := rrFixedLen + int(binary.BigEndian.Uint16(w[8:]))
		dst = append(dst, owner...)
		dst = append(dst, w[:n]...)
		w = w[n:]
	}
	return dst
}

// appendRRHeader appends a record's owner, type, class IN, TTL and RDLENGTH.
func appendRRHeader(dst, owner []byte, rrtype uint16, ttl uint32, rdlength int) []byte {
	dst = append(dst, owner...)
	dst = binary.BigEndian.AppendUint16(dst, rrtype)
	dst = binary.BigEndian.AppendUint16(dst, dns.ClassINET)
	dst = binary.BigEndian.AppendUint32(dst, ttl)
	return binary.BigEndian.AppendUint16(dst, uint16(rdlength))
}

// appendAddressRecord appends an address record of class IN: owner, rrtype, ttl and the
// address's bytes ip.
func appendAddressRecord(dst, owner []byte, ttl uint32, rrtype uint16, ip []byte) []byte {
	dst = appendRRHeader(dst, owner, rrtype, ttl, len(ip))
	return append(dst, ip...)
}

// appendBackendAddress appends the address record of a backend at ip (an A record for an
// IPv4 address, AAAA otherwise) for owner with ttl.
func appendBackendAddress(dst, owner []byte, ttl uint32, ip netip.Addr) []byte {
	if ip.Is4() {
		a := ip.As4()
		return appendAddressRecord(dst, owner, ttl, dns.TypeA, a[:])
	}
	a := ip.As16()
	return appendAddressRecord(dst, owner, ttl, dns.TypeAAAA, a[:])
}

// addressLen is the size of an address record of family f for owner.
func addressLen(owner []byte, f catalog.Family) int { return len(owner) + rrFixedLen + rdataLen(f) }

// rdataLen is the size of an address of family f.
func rdataLen(f catalog.Family) int {
	if f == catalog.IPv4 {
		return 4
	}
	return 16
}

// nameLen returns the size of name (fully qualified, in presentation form) in wire form, and
// false for a name that miekg/dns may pack otherwise than its labels as written (escapes) or
// that is not fully qualified.
func nameLen(name string) (int, bool) {
	if name == "." {
		return 1, true
	}
	if !strings.HasSuffix(name, ".") || strings.ContainsRune(name, '\\') || len(name)+1 > maxNameWire {
		return 0, false
	}
	label := 0
	for i := range len(name) {
		if name[i] != '.' {
			label++
			continue
		}
		if label == 0 || label > 63 {
			return 0, false
		}
		label = 0
	}
	return len(name) + 1, true
}

// appendName appends name, one that nameLen accepts, in wire form, uncompressed.
func appendName(dst []byte, name string) []byte {
	for name != "." && name != "" {
		label, rest, _ := strings.Cut(name, ".")
		dst = append(dst, byte(len(label)))
		dst = append(dst, label...)
		name = rest
	}
	return append(dst, 0)
}
