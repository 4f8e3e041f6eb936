package answer

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"strings"
	"unsafe"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/published"
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

// AppendFast answers pkt, a UDP query from the transport address src, straight from the wire:
// when it handles the query, it appends the response to dst and returns it and true; otherwise
// it returns dst unchanged and false, having done nothing (no counting, no rotation), and the
// query must take the normal path (Respond, through CoreDNS), which stays the reference.
//
// The response is byte for byte what Respond puts on the wire for the same query and client
// (Query.Source src.Unmap()): the packed dns.Msg, uncompressed as CoreDNS writes answers that
// fit, the question echoed as sent, the reply OPT record of replyOPT.
// With opts.Count it counts the answer as Respond does, and it marks the record queried.
//
// It handles only the common address query: a QUERY with one question (QR, TC clear, no answer
// or authority records), class IN, type A or AAAA, of a plain name (letters, digits, hyphens
// and underscores, uncompressed) that is exactly a GSLB record's of a served zone (not through
// a wildcard, not at or below a delegation, not a site's published name), with no trailing
// bytes and at most one additional record: an OPT record of EDNS version 0 with no option or,
// with opts.UseECS, one valid Client Subnet option. The record must have no host-name backend,
// and its selection must answer with addresses (backends or fail-specific fallback IPs), not
// with fail-closed, a fallback CNAME or NODATA, in a response that fits the client's UDP size
// (512 bytes without EDNS, else its buffer but at most 1232).
//
// src is the client's transport address, unmapped here as gslb.ClientOf does for Respond (so
// that a dual-stack socket's IPv4-mapped addresses select as IPv4 ones); sources are the GeoIP
// sources of the engine (nil when none). dst must not overlap pkt. AppendFast takes no lock.
// It allocates nothing when dst has room for the response (at most 1232 bytes), except where
// Respond's selection does too: more than 16 backends chosen, and a GeoIP database record
// decoded for the first time (the sources cache it).
func AppendFast(dst []byte, snap *catalog.Snapshot, opts Options, pkt []byte, src netip.Addr, sources *geo.Sources) ([]byte, bool) {
	var q fastQuery
	if snap == nil || !q.parse(pkt, opts.UseECS) {
		return dst, false
	}
	src = src.Unmap()
	qname := q.lowerName()
	zone := snap.Zone(qname)
	if zone == nil || mayBePublished(qname) || q.do && (opts.PluginSigns || zone.Signer() != nil) {
		return dst, false // a DO query of a signed zone is signed in the slow path
	}
	found := zone.Find(qname)
	rec := found.Record
	if found.Cut == nil && rec == nil && found.Static != nil {
		return q.appendStatic(dst, found.Addresses)
	}
	if found.Cut != nil || found.Wildcard || rec == nil || rec.Name() != qname || hasHostBackend(rec) {
		return dst, false
	}
	f, _ := catalog.FamilyOf(q.qtype)
	// What pick reads only: the builder's other fields point into q, and must not leak with it.
	r := builder{rec: rec, client: src, geo: sources, count: opts.Count}
	if q.ecsClient.IsValid() {
		r.client = q.ecsClient
	}
	limit := q.limit()
	// A rotating mode must not turn for a query that is not answered here: answer only when
	// the most records its selection may give (each backend, or each fallback IP) fit.
	base, perRR := q.replyLen(), len(q.name)+rrFixedLen+rdataLen(f)
	if rotates(rec.Config) && base+perRR*max(len(rec.Backends), len(rec.FallbackIPs(f))) > limit {
		return dst, false
	}
	var buf [maxInlinePicks]*catalog.Backend
	sel, took := r.timedPick(f, buf[:0])
	n := len(sel.fixed) + len(sel.backends)
	if sel.closed || n == 0 || base+n*perRR > limit || !addressesOf(sel, f) {
		return dst, false
	}

	rec.MarkQueried()
	if r.count {
		rec.CountAnswer(false, took)
	}
	dst = slices.Grow(dst, base+n*perRR)
	dst = q.appendHeader(dst, n)
	for _, rr := range sel.fixed {
		dst = appendAddress(dst, q.name, sel.ttl, rr)
	}
	for _, be := range sel.backends {
		r.selected(be)
		dst = appendBackendAddress(dst, q.name, sel.ttl, be.Config.IP)
	}
	if q.edns {
		dst = q.appendOPT(dst, sel.scope)
	}
	return dst, true
}

// limit is the largest reply the query may get over UDP: 512 bytes without EDNS, else the
// client's size within [512, 1232] (udpLimit, as finish cuts the slow path's).
func (q *fastQuery) limit() int {
	if q.edns {
		return udpLimit(q.udpSize)
	}
	return dns.MinMsgSize
}

// appendStatic appends the static addresses a of the query's type (a name's A or AAAA RRset,
// which staticAnswer gives the slow path) as the slow path answers them: every record, with
// its own TTL, and the reply OPT with scope 0. It reports false for any other type, for none
// (NODATA, or a CNAME: the slow path answers), and for an answer that does not fit the
// client's buffer.
func (q *fastQuery) appendStatic(dst []byte, a *catalog.StaticAddresses) ([]byte, bool) {
	f, ok := catalog.FamilyOf(q.qtype)
	if !ok {
		return dst, false
	}
	wire, n := a.Records(f)
	if n == 0 || q.replyLen()+n*(len(q.name)+rrFixedLen+rdataLen(f)) > q.limit() {
		return dst, false
	}
	dst = q.appendHeader(dst, n)
	for size := 4 + rdataLen(f); len(wire) >= size; wire = wire[size:] {
		dst = appendAddressRecord(dst, q.name, binary.BigEndian.Uint32(wire), q.qtype, wire[4:size])
	}
	if q.edns {
		dst = q.appendOPT(dst, 0)
	}
	return dst, true
}

// fastQuery is a query as AppendFast parsed it; its slices are parts of the packet.
type fastQuery struct {
	id uint16
	// flags are the query's RD and CD bits, which the reply copies.
	flags uint16
	// question is the question section as sent (name, type, class); name its name.
	question, name []byte
	qtype          uint16
	// lower is the name in lower-case presentation form ("www.example.org."), lowerLen long.
	lower    [maxNameWire]byte
	lowerLen int

	// edns is set when the query has an OPT record, of UDP buffer size udpSize, DO bit do.
	edns    bool
	udpSize uint16
	do      bool
	// ecs is set when the query has a Client Subnet option (with opts.UseECS): its family,
	// source prefix and address bytes, and the client address it gives (invalid for prefix 0:
	// the transport address is the client then).
	ecs       bool
	ecsFamily uint16
	ecsSource uint8
	ecsAddr   []byte
	ecsClient netip.Addr
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
	if (q.qtype != dns.TypeA && q.qtype != dns.TypeAAAA) || binary.BigEndian.Uint16(pkt[end+2:]) != dns.ClassINET {
		return false
	}
	q.question = pkt[headerLen : end+4]
	rest := pkt[end+4:]
	if additional == 0 {
		return len(rest) == 0
	}
	return q.parseOPT(rest, useECS)
}

// parseName reads the uncompressed name at off of pkt into q.lower and returns the offset after
// it. It accepts plain names only: labels of letters, digits, hyphens and underscores, which
// read and write the same in presentation form.
func (q *fastQuery) parseName(pkt []byte, off int) (int, bool) {
	n := 0
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
		for _, b := range pkt[off : off+c] {
			switch {
			case 'A' <= b && b <= 'Z':
				b += 'a' - 'A'
			case 'a' <= b && b <= 'z', '0' <= b && b <= '9', b == '-', b == '_':
			default:
				return 0, false
			}
			q.lower[n] = b
			n++
		}
		q.lower[n] = '.'
		n++
		off += c
	}
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

// parseOPT reads rr, the last record of the query, which must be an OPT record (RFC 6891 6.1.2)
// of EDNS version 0, with no option or, with useECS, one Client Subnet option.
func (q *fastQuery) parseOPT(rr []byte, useECS bool) bool {
	if len(rr) < optFixedLen || rr[0] != 0 || binary.BigEndian.Uint16(rr[1:]) != dns.TypeOPT {
		return false
	}
	ttl := binary.BigEndian.Uint32(rr[5:])
	if version := ttl >> 16 & 0xff; version != 0 {
		return false // BADVERS
	}
	q.edns, q.udpSize, q.do = true, binary.BigEndian.Uint16(rr[3:]), ttl&ednsDO != 0
	rdata := rr[optFixedLen:]
	if int(binary.BigEndian.Uint16(rr[9:])) != len(rdata) {
		return false
	}
	if len(rdata) == 0 {
		return true
	}
	if !useECS || len(rdata) < 4 || binary.BigEndian.Uint16(rdata) != dns.EDNS0SUBNET ||
		int(binary.BigEndian.Uint16(rdata[2:])) != len(rdata)-4 {
		return false
	}
	return q.parseECS(rdata[4:])
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

// replyLen is the size of the reply without its answer records: header, question and OPT.
func (q *fastQuery) replyLen() int {
	n := headerLen + len(q.question)
	if q.edns {
		n += optFixedLen
	}
	if q.ecs {
		n += ecsFixedLen + len(q.ecsAddr)
	}
	return n
}

// appendHeader appends the reply's header, for answers address records, and its question.
func (q *fastQuery) appendHeader(dst []byte, answers int) []byte {
	additional := 0
	if q.edns {
		additional = 1
	}
	dst = binary.BigEndian.AppendUint16(dst, q.id)
	dst = binary.BigEndian.AppendUint16(dst, flagQR|flagAA|q.flags)
	dst = binary.BigEndian.AppendUint16(dst, 1)
	dst = binary.BigEndian.AppendUint16(dst, uint16(answers))
	dst = binary.BigEndian.AppendUint16(dst, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(additional))
	return append(dst, q.question...)
}

// appendOPT appends the reply's OPT record as replyOPT builds it: Meridian's buffer size, the
// query's DO bit, and its Client Subnet option echoed with the answer's scope.
func (q *fastQuery) appendOPT(dst []byte, scope int) []byte {
	var ttl uint32
	if q.do {
		ttl = ednsDO
	}
	dst = append(dst, 0) // the root
	dst = binary.BigEndian.AppendUint16(dst, dns.TypeOPT)
	dst = binary.BigEndian.AppendUint16(dst, advertisedUDPSize)
	dst = binary.BigEndian.AppendUint32(dst, ttl)
	if !q.ecs {
		return binary.BigEndian.AppendUint16(dst, 0)
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(ecsFixedLen+len(q.ecsAddr)))
	dst = binary.BigEndian.AppendUint16(dst, dns.EDNS0SUBNET)
	dst = binary.BigEndian.AppendUint16(dst, uint16(ecsFixedLen-4+len(q.ecsAddr)))
	dst = binary.BigEndian.AppendUint16(dst, q.ecsFamily)
	dst = append(dst, q.ecsSource, echoScope(scope, q.ecsSource))
	return append(dst, q.ecsAddr...)
}

// appendAddress appends rr, an A or AAAA record (see addressesOf), named name (the query's,
// in wire form, lower-cased here as the record's name is) with the TTL ttl.
func appendAddress(dst, name []byte, ttl uint32, rr dns.RR) []byte {
	return appendAddressRecord(dst, name, ttl, rr.Header().Rrtype, catalog.AddressOf(rr))
}

// appendBackendAddress appends the address record of a backend at ip (an A record for an
// IPv4 address, AAAA otherwise) for name with ttl, as appendAddress does.
func appendBackendAddress(dst, name []byte, ttl uint32, ip netip.Addr) []byte {
	if ip.Is4() {
		a := ip.As4()
		return appendAddressRecord(dst, name, ttl, dns.TypeA, a[:])
	}
	a := ip.As16()
	return appendAddressRecord(dst, name, ttl, dns.TypeAAAA, a[:])
}

// appendAddressRecord appends an address record of class IN: name (lowercased), rrtype, ttl
// and the address's bytes ip.
func appendAddressRecord(dst, name []byte, ttl uint32, rrtype uint16, ip []byte) []byte {
	start := len(dst)
	dst = append(dst, name...)
	for i, c := range dst[start:] {
		// Length bytes are at most 63, below 'A'.
		if 'A' <= c && c <= 'Z' {
			dst[start+i] = c + 'a' - 'A'
		}
	}
	dst = binary.BigEndian.AppendUint16(dst, rrtype)
	dst = binary.BigEndian.AppendUint16(dst, dns.ClassINET)
	dst = binary.BigEndian.AppendUint32(dst, ttl)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(ip)))
	return append(dst, ip...)
}

// addressesOf reports whether every record of sel is an address record of family f as
// appendAddress writes it: fixed records are fallback IPs (not a fallback CNAME), backends
// have addresses.
func addressesOf(sel selection, f catalog.Family) bool {
	for _, rr := range sel.fixed {
		if !isAddress(rr, f) {
			return false
		}
	}
	for _, be := range sel.backends {
		if !be.IsAddressOf(f) {
			return false
		}
	}
	return true
}

// isAddress reports whether rr is an A (IPv4) or AAAA (IPv6) record whose address has the
// size rdataLen(f).
func isAddress(rr dns.RR, f catalog.Family) bool {
	switch x := rr.(type) {
	case *dns.A:
		return f == catalog.IPv4 && x.A.To4() != nil
	case *dns.AAAA:
		return f == catalog.IPv6 && len(x.AAAA) == rdataLen(f)
	}
	return false
}

// rdataLen is the size of an address of family f.
func rdataLen(f catalog.Family) int {
	if f == catalog.IPv4 {
		return 4
	}
	return 16
}

// hasHostBackend reports whether one of rec's backends is a host name, which answers CNAME.
func hasHostBackend(rec *catalog.Record) bool {
	for _, be := range rec.Backends {
		if be.Config.IsHost() {
			return true
		}
	}
	return false
}

// rotates reports whether the record's selection turns a rotation on every query (roundrobin,
// or a chain with a roundrobin step).
func rotates(rc *config.Record) bool {
	return rc.Mode == config.ModeRoundRobin || rc.Mode == config.ModeChain && slices.Contains(rc.Steering().Chain, config.StepRoundRobin)
}

// mayBePublished reports whether qname may be a name a site publishes for its peers (see
// builder.published), which Respond answers.
func mayBePublished(qname string) bool {
	return strings.HasPrefix(qname, published.LocalTargetsPrefix) || strings.HasPrefix(qname, published.LocalRTTPrefix) ||
		strings.HasPrefix(qname, published.HeartbeatPrefix)
}
