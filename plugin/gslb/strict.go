package gslb

import (
	"encoding/binary"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/miekg/dns"
)

// Two malformed queries never reach a plugin: CoreDNS's server answers a query whose header
// counts a question that the packet does not carry with SERVFAIL, and one whose question ends
// after its name (no type, no class: miekg/dns reads both as 0) with REFUSED. BIND, Knot and
// NSD answer both FORMERR, which is what they are (RFC 1035 4.1.1). strictReplies corrects
// those replies on their way out of the UDP servers of a gslb block, on the packed bytes:
// only replies that nothing but these queries produce change.
//
// CoreDNS has no such hook for TCP, whose replies to these stay as its server writes them.

// hookStrictReplies installs strictReplies on the UDP servers of cfg, after any decorator
// already there.
func hookStrictReplies(cfg *dnsserver.Config) {
	prev := cfg.UDPDecorateWriterFunc
	cfg.UDPDecorateWriterFunc = func(s *dnsserver.Server) dns.DecorateWriter {
		var before dns.DecorateWriter
		if prev != nil {
			before = prev(s)
		}
		return func(w dns.Writer) dns.Writer {
			if before != nil {
				w = before(w)
			}
			return strictReplies(w)
		}
	}
}

// strictReplies wraps w so that the replies to malformed queries that CoreDNS's server answers
// itself say FORMERR (see fixRcode).
func strictReplies(w dns.Writer) dns.Writer { return strictWriter{w} }

// strictWriter is the dns.Writer of strictReplies.
type strictWriter struct{ dns.Writer }

// Write implements dns.Writer.
func (w strictWriter) Write(reply []byte) (int, error) {
	fixRcode(reply)
	return w.Writer.Write(reply)
}

// fixRcode turns into FORMERR, in place, a reply that only a malformed query gets from
// CoreDNS's server: SERVFAIL without a question (the query had none, whatever its header
// said), or REFUSED to a question of type 0 and class 0 (one cut after its name; neither
// value is a type or class anyone may ask for, RFC 6895 3.1 and 3.2).
func fixRcode(reply []byte) {
	if len(reply) < 12 {
		return
	}
	rcode := reply[3] & 0x0f
	questions := binary.BigEndian.Uint16(reply[4:])
	switch {
	case rcode == dns.RcodeServerFailure && questions == 0:
	case rcode == dns.RcodeRefused && questions == 1 && typeClassZero(reply):
	default:
		return
	}
	reply[3] = reply[3]&0xf0 | dns.RcodeFormatError
}

// typeClassZero reports whether the question of reply, an uncompressed name at offset 12, is
// of type 0 and class 0.
func typeClassZero(reply []byte) bool {
	off := 12
	for off < len(reply) && reply[off] != 0 {
		if reply[off] > 63 {
			return false // a pointer or an extended label: not how CoreDNS writes a question
		}
		off += 1 + int(reply[off])
	}
	off++ // the root label
	return off+4 <= len(reply) && binary.BigEndian.Uint32(reply[off:]) == 0
}
