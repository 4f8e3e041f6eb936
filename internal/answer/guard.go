package answer

import (
	"encoding/hex"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/cookie"
	"github.com/meridian-gslb/meridian/internal/rrl"
)

// DNS cookies (RFC 7873, RFC 9018) and response rate limiting on the slow path: readCookie
// reads the query's COOKIE option, replyOPT answers it with a new server cookie, and limit
// decides, once the response is built, whether it is sent, dropped, or sent truncated.

// cookieState is what the query's COOKIE option said.
type cookieState struct {
	status cookie.Status
	client [cookie.ClientLen]byte // the client cookie, for status ClientOnly or Valid
}

// readCookie reads the COOKIE option of opt (the query's OPT record) with secrets, from the
// query's transport address at now. It reports false for a malformed option, or several
// (RFC 7873 5.2.2: FORMERR).
func (b *builder) readCookie(secrets *cookie.Secrets, now time.Time) bool {
	seen := false
	for _, o := range b.opt.Option {
		c, ok := o.(*dns.EDNS0_COOKIE)
		if !ok {
			continue
		}
		var data [cookie.ClientLen + 32]byte
		n, ok := decodeHex(data[:], c.Cookie)
		if seen || !ok {
			b.cookie.status = cookie.Malformed
			return false
		}
		seen = true
		b.cookie.status = secrets.Check(data[:n], b.source, uint32(now.Unix()))
		if b.cookie.status == cookie.Malformed {
			return false
		}
		copy(b.cookie.client[:], data[:cookie.ClientLen])
	}
	return true
}

// decodeHex decodes the hexadecimal s into dst, without allocating; false when s is not
// hexadecimal or too long.
func decodeHex(dst []byte, s string) (int, bool) {
	if len(s)%2 != 0 || len(s)/2 > len(dst) {
		return 0, false
	}
	for i := 0; i < len(s); i += 2 {
		hi, ok1 := fromHexChar(s[i])
		lo, ok2 := fromHexChar(s[i+1])
		if !ok1 || !ok2 {
			return 0, false
		}
		dst[i/2] = hi<<4 | lo
	}
	return len(s) / 2, true
}

func fromHexChar(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// cookieOption returns the COOKIE option of the reply: the client's cookie and a new server
// cookie, nil when the query sent none.
func (b *builder) cookieOption() dns.EDNS0 {
	if b.secrets == nil || (b.cookie.status != cookie.ClientOnly && b.cookie.status != cookie.Valid) {
		return nil
	}
	var data [cookie.OptionLen]byte
	out := b.secrets.Append(data[:0], b.cookie.client[:], b.source, uint32(b.now.Unix()))
	return &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: hex.EncodeToString(out)}
}

// limit applies the rate limiter of opts to m, the UDP response to the query, built by b: it
// returns m, nil for a response to drop, or the small response that slips in its place. A
// query with a valid server cookie comes from the address it claims, and is not limited.
func (b *builder) limit(l *rrl.Limiter, m *dns.Msg) *dns.Msg {
	q := rrl.Query{Client: b.source, Kind: rrl.Positive, Name: b.qname, Qtype: b.qtype}
	switch {
	case m.Rcode == dns.RcodeNameError:
		q.Kind, q.Name = rrl.NXDomain, b.zone.Origin
	case m.Rcode != dns.RcodeSuccess:
		q.Kind = rrl.Error
	case b.cut != "":
		q.Kind, q.Name = rrl.Referral, b.cut
	case len(m.Answer) == 0:
		q.Kind, q.Name = rrl.NoData, b.zone.Origin
	}
	if b.cookie.status == cookie.Valid {
		rrl.Count(q.Kind, rrl.Cookie)
		return m
	}
	switch l.Check(q, b.now) {
	case rrl.Drop:
		return nil
	case rrl.Slip:
		if b.cookie.status == cookie.ClientOnly {
			// RFC 7873 5.2.3: a server under load may answer BADCOOKIE with its cookie, which
			// the client sends back with its next query: that one is not limited.
			return b.finishError(dns.RcodeBadCookie)
		}
		return b.truncated()
	}
	return m
}

// truncated returns the slip of a limited response: TC set, no records, so that a resolver
// asks again over TCP, where the address cannot be spoofed.
func (b *builder) truncated() *dns.Msg {
	m := b.finishError(dns.RcodeSuccess)
	m.Truncated = true
	m.Authoritative = true
	return m
}
