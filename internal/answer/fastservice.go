package answer

import (
	"encoding/binary"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
)

// A GSLB record's SRV, HTTPS and SVCB answers in the fast path, as builder.srv and builder.svcb
// make them from the backends chosen in both families (builder.chosen).

// fastChosen are the backends a record's selection chooses in both families, IPv4 first,
// each once, and the answer's ECS scope.
type fastChosen struct {
	backends []*catalog.Backend
	scope    int
}

// chosen runs r's selection in both families as builder.chosen does, into buf.
func chosen(r *chooser, buf []*catalog.Backend) fastChosen {
	var c fastChosen
	c.backends = buf[:0]
	for f := catalog.IPv4; f <= catalog.IPv6; f++ {
		var picks [maxInlinePicks]*catalog.Backend
		sel := r.pick(f, picks[:0])
		c.scope = max(c.scope, sel.scope)
		for _, be := range sel.backends {
			if !slicesContains(c.backends, be) {
				c.backends = append(c.backends, be)
			}
		}
	}
	return c
}

// slicesContains reports whether backends holds be.
func slicesContains(backends []*catalog.Backend, be *catalog.Backend) bool {
	for _, b := range backends {
		if b == be {
			return true
		}
	}
	return false
}

// srvRecordLen is the size of the SRV record of be at owner and of its additional address
// record (none for a host name); false for a backend without a port, which answers none, or
// with a target the fast path does not write.
func srvRecordLen(be *catalog.Backend, owner []byte) (srv, extra int, ok bool) {
	c := be.Config
	if c.Port == 0 {
		return 0, 0, false
	}
	if c.IsHost() {
		n, ok := nameLen(c.Address)
		return len(owner) + rrFixedLen + 6 + n, 0, ok
	}
	f := catalog.IPv6
	if c.IP.Is4() {
		f = catalog.IPv4
	}
	return len(owner) + rrFixedLen + 6 + len(owner), addressLen(owner, f), true
}

// srv answers SRV at rec (builder.srv): a record per chosen backend with a port, whose target
// is its host name, or the record's name with its address in the additional section; NODATA
// when there is none.
func (a *fastAnswer) srv(dst []byte, rec *catalog.Record) ([]byte, bool) {
	q := &a.q
	owner := q.owner()
	if rotates(rec.Config) {
		most := 0
		for _, be := range rec.Backends {
			srv, extra, _ := srvRecordLen(be, owner)
			most += srv + extra
		}
		if q.base(0).size+most > q.limit {
			return dst, false
		}
	}
	r := a.picker(rec)
	var buf [2 * maxInlinePicks]*catalog.Backend
	c := chosen(&r, buf[:0])
	reply := q.base(dns.RcodeSuccess)
	for _, be := range c.backends {
		srv, extra, ok := srvRecordLen(be, owner)
		if !ok && be.Config.Port != 0 {
			return dst, false
		}
		if ok {
			reply.addAnswer(1, srv)
			if extra > 0 {
				reply.addAdditional(1, extra)
			}
		}
	}
	if reply.an == 0 {
		return a.negative(dst, dns.RcodeSuccess, c.scope, rec)
	}
	if reply.size > q.limit {
		return dst, false
	}
	rec.MarkQueried()
	ttl := rec.Config.TTL
	dst = q.appendHeader(dst, &reply)
	for _, be := range c.backends {
		bc := be.Config
		if bc.Port == 0 {
			continue
		}
		n, _ := nameLen(bc.Address)
		if !bc.IsHost() {
			n = len(owner)
		}
		dst = appendRRHeader(dst, owner, dns.TypeSRV, ttl, 6+n)
		dst = binary.BigEndian.AppendUint16(dst, uint16(min(max(bc.Priority, 0), 65535)))
		dst = binary.BigEndian.AppendUint16(dst, uint16(min(max(bc.Weight, 1), 65535)))
		dst = binary.BigEndian.AppendUint16(dst, bc.Port)
		if bc.IsHost() {
			dst = appendName(dst, bc.Address)
		} else {
			dst = append(dst, owner...)
		}
	}
	for _, be := range c.backends {
		if be.Config.Port != 0 && !be.Config.IsHost() {
			dst = appendBackendAddress(dst, owner, ttl, be.Config.IP)
		}
	}
	return q.finish(dst, c.scope), true
}

// The SvcParamKeys of the service records the fast path writes (RFC 9460 14.3.2), in the
// order miekg/dns packs them.
const (
	svcbALPN     = 1
	svcbPort     = 3
	svcbIPv4Hint = 4
	svcbIPv6Hint = 6
)

// svcbShape is the service record builder.svcb makes from the chosen backends: in alias mode
// the target; in service mode its parameters' sizes.
type svcbShape struct {
	alias      string
	rdlength   int
	alpn, port bool
	v4, v6     int
}

// svcbOf returns the shape of the service record for picked (not empty) of rec; false for one
// that miekg/dns would not pack as the fast path writes it.
func svcbOf(rec *catalog.Record, picked []*catalog.Backend) (svcbShape, bool) {
	var s svcbShape
	first := picked[0].Config
	if first.IsHost() {
		n, ok := nameLen(first.Address)
		s.alias, s.rdlength = first.Address, 2+n
		return s, ok
	}
	s.rdlength = 2 + 1 // priority, the root
	if alpn := rec.Config.Settings().ALPN; len(alpn) > 0 {
		s.alpn, s.rdlength = true, s.rdlength+4
		for _, id := range alpn {
			if id == "" || len(id) > 255 {
				return s, false
			}
			s.rdlength += 1 + len(id)
		}
	}
	if first.Port != 0 {
		s.port, s.rdlength = true, s.rdlength+4+2
	}
	for _, be := range picked {
		switch ip := be.Config.IP; {
		case !ip.IsValid():
		case ip.Is4():
			s.v4++
		case ip.Is4In6():
			return s, false // miekg/dns refuses an IPv4 address among the IPv6 hints
		default:
			s.v6++
		}
	}
	if s.v4 > 0 {
		s.rdlength += 4 + 4*s.v4
	}
	if s.v6 > 0 {
		s.rdlength += 4 + 16*s.v6
	}
	return s, s.rdlength <= 0xffff
}

// svcb answers HTTPS and SVCB at rec (builder.svcb): one service record, in alias mode to a
// host-name backend chosen first, else in service mode with the chosen addresses as hints;
// NODATA when nothing is chosen.
func (a *fastAnswer) svcb(dst []byte, rec *catalog.Record) ([]byte, bool) {
	q := &a.q
	owner := q.owner()
	if rotates(rec.Config) {
		// The largest record: every backend an address hint, and the parameters.
		most := len(owner) + rrFixedLen + 3 + 4 + 2 + 8 + 16*len(rec.Backends)
		for _, id := range rec.Config.Settings().ALPN {
			most += 5 + len(id)
		}
		for _, be := range rec.Backends {
			if n, _ := nameLen(be.Config.Address); be.Config.IsHost() {
				most = max(most, len(owner)+rrFixedLen+2+n)
			}
		}
		if q.base(0).size+most > q.limit {
			return dst, false
		}
	}
	r := a.picker(rec)
	var buf [2 * maxInlinePicks]*catalog.Backend
	c := chosen(&r, buf[:0])
	if len(c.backends) == 0 {
		return a.negative(dst, dns.RcodeSuccess, c.scope, rec)
	}
	s, ok := svcbOf(rec, c.backends)
	reply := q.base(dns.RcodeSuccess)
	reply.addAnswer(1, len(owner)+rrFixedLen+s.rdlength)
	if !ok || reply.size > q.limit {
		return dst, false
	}
	rec.MarkQueried()
	dst = q.appendHeader(dst, &reply)
	dst = appendRRHeader(dst, owner, q.qtype, rec.Config.TTL, s.rdlength)
	if s.alias != "" {
		dst = binary.BigEndian.AppendUint16(dst, 0)
		dst = appendName(dst, s.alias)
		return q.finish(dst, c.scope), true
	}
	dst = binary.BigEndian.AppendUint16(dst, 1)
	dst = append(dst, 0) // the target: the owner itself
	if s.alpn {
		alpn := rec.Config.Settings().ALPN
		n := 0
		for _, id := range alpn {
			n += 1 + len(id)
		}
		dst = appendParam(dst, svcbALPN, n)
		for _, id := range alpn {
			dst = append(dst, byte(len(id)))
			dst = append(dst, id...)
		}
	}
	if s.port {
		dst = appendParam(dst, svcbPort, 2)
		dst = binary.BigEndian.AppendUint16(dst, c.backends[0].Config.Port)
	}
	if s.v4 > 0 {
		dst = appendParam(dst, svcbIPv4Hint, 4*s.v4)
		for _, be := range c.backends {
			if ip := be.Config.IP; ip.IsValid() && ip.Is4() {
				a4 := ip.As4()
				dst = append(dst, a4[:]...)
			}
		}
	}
	if s.v6 > 0 {
		dst = appendParam(dst, svcbIPv6Hint, 16*s.v6)
		for _, be := range c.backends {
			if ip := be.Config.IP; ip.IsValid() && !ip.Is4() {
				a16 := ip.As16()
				dst = append(dst, a16[:]...)
			}
		}
	}
	return q.finish(dst, c.scope), true
}

// appendParam appends a SvcParam's key and length.
func appendParam(dst []byte, key uint16, length int) []byte {
	dst = binary.BigEndian.AppendUint16(dst, key)
	return binary.BigEndian.AppendUint16(dst, uint16(length))
}
