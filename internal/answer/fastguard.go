package answer

import (
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/cookie"
	"github.com/meridian-gslb/meridian/internal/rrl"
)

// DNS cookies and response rate limiting in the fast path, as guard.go applies them to the
// slow path's responses: the same statuses, the same accounts, the same replies byte for byte.

// readCookie checks the query's COOKIE option (q.cookie, not nil) with the secrets of jar for
// the client src at now, and sets the reply's cookie. Without cookies (jar nil) or without the
// option, AppendFast does not call it: the option is ignored, the status cookie.None.
func (q *fastQuery) readCookie(jar *cookie.Jar, src netip.Addr, now time.Time) cookie.Status {
	secrets := jar.Secrets()
	st := secrets.Check(q.cookie, src, uint32(now.Unix()))
	if st == cookie.ClientOnly || st == cookie.Valid {
		q.replyCookieLen = len(secrets.Append(q.replyCookie[:0], q.cookie[:cookie.ClientLen], src, uint32(now.Unix())))
	}
	return st
}

// limit applies the rate limiter l to the UDP response that starts at start of dst, the answer
// to the query for qname from src at now, whose cookie had status st: it returns dst as it is,
// cut back to start (the response is dropped), or with the slip in place of the response.
func (a *fastAnswer) limit(dst []byte, start int, l *rrl.Limiter, st cookie.Status, qname string, src netip.Addr, now time.Time) []byte {
	resp := dst[start:]
	q := rrl.Query{Client: src, Kind: rrl.Positive, Name: qname, Qtype: a.q.qtype}
	switch rcode := int(resp[3] & 0xf); {
	case rcode == dns.RcodeNameError:
		q.Kind, q.Name = rrl.NXDomain, a.zone.Origin
	case rcode != dns.RcodeSuccess:
		q.Kind = rrl.Error
	case a.cut != "":
		q.Kind, q.Name = rrl.Referral, a.cut
	case binary.BigEndian.Uint16(resp[6:]) == 0:
		q.Kind, q.Name = rrl.NoData, a.zone.Origin
	}
	if st == cookie.Valid {
		rrl.Count(q.Kind, rrl.Cookie)
		return dst
	}
	switch l.Check(q, now) {
	case rrl.Drop:
		return dst[:start]
	case rrl.Slip:
		if st == cookie.ClientOnly {
			return a.q.errorReply(dst[:start], dns.RcodeBadCookie, false)
		}
		return a.q.errorReply(dst[:start], dns.RcodeSuccess, true)
	}
	return dst
}

// errorReply appends the reply that carries only rcode, as builder.finishError makes it: not
// authoritative, the question, the OPT record without ECS but with the reply's cookie; or, with
// truncated, the slip of a limited response (builder.truncated): NOERROR, TC and AA set.
func (q *fastQuery) errorReply(dst []byte, rcode int, truncated bool) []byte {
	start := len(dst)
	r := fastReply{rcode: rcode, notAuth: !truncated}
	dst = q.appendHeader(dst, &r)
	if truncated {
		dst[start+2] |= flagTC >> 8 // the flags' upper byte (appendHeader stays small enough to inline)
	}
	if q.edns {
		dst = q.appendOPT(dst, 0, rcode, false)
	}
	return dst
}
