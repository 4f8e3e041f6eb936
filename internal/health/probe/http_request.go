package probe

// The requests of the http probe: what a check's requests are made of, kept once for the
// checks of a profile (httpCheck), and the bytes of each probe's request, written into a pooled
// buffer.

import (
	"bytes"
	"encoding/binary"
	"strings"
	"sync"
)

// httpRequestSpec is what an http check's requests are made of. A probe keeps it only when it
// follows redirects; the others need just their check's method, Host and tail and their own
// uri (at 30,000 checks, the difference is megabytes).
type httpRequestSpec struct {
	scheme  string      // "http" or "https"
	host    string      // Host header value
	method  string      // request method
	uri     string      // request target
	headers [][2]string // extra headers, sorted by name
}

// appendRequest appends the first request of a probe of hp to b.
func (hp *httpProbe) appendRequest(b []byte) []byte {
	b = appendRequestLine(b, hp.method, hp.uri)
	if hp.hostHeader != "" {
		b = append(b, hp.hostHeader...)
	} else {
		start := len(b)
		if hp.dialTarget.host != nil {
			b = append(b, *hp.dialTarget.host...)
		} else {
			b = hp.ap.AppendTo(b)
		}
		if hp.ap.Port() == hp.defaultPort { // host:port without the port
			b = b[:start+bytes.LastIndexByte(b[start:], ':')]
		}
	}
	b = append(b, "\r\n"...)
	return append(b, hp.tail...)
}

// httpRequests are the buffers of requests being written.
var httpRequests = sync.Pool{New: func() any { return new([]byte) }}

// appendKey appends to b what tells c from the other checks of a load without redirects:
// the key of share, with sel, the metric parameter.
func (c *httpCheck) appendKey(b []byte, sel string) []byte {
	b = binary.LittleEndian.AppendUint64(append(b, "http"...), uint64(c.timeout))
	b = binary.AppendUvarint(b, uint64(len(c.codes.codes)))
	for _, code := range c.codes.codes {
		b = binary.AppendUvarint(b, uint64(code))
	}
	pattern := ""
	if c.body != nil {
		pattern = c.body.String()
	}
	b = append(binary.AppendUvarint(b, uint64(len(pattern))), pattern...)
	b = append(binary.AppendUvarint(b, uint64(len(sel))), sel...)
	for _, part := range []string{c.method, c.hostHeader, string(c.tail)} {
		b = append(binary.AppendUvarint(b, uint64(len(part))), part...)
	}
	b = binary.LittleEndian.AppendUint16(b, c.defaultPort)
	flags := byte(0)
	if c.head {
		flags |= 1
	}
	if c.tls != nil {
		flags |= 2
		if c.tls.skipVerify {
			flags |= 4
		}
		b = append(binary.AppendUvarint(b, uint64(len(c.tls.serverName))), c.tls.serverName...)
	}
	return append(b, flags)
}

// build returns the request bytes for method and uri with the check's host and headers.
func (rs *httpRequestSpec) build(method, uri string) []byte {
	b := appendRequestLine(nil, method, uri)
	b = append(b, rs.host...)
	b = append(b, "\r\n"...)
	return append(b, rs.tail()...)
}

// appendRequestLine appends the request line of method and uri to b, and the start of the
// Host header.
func appendRequestLine(b []byte, method, uri string) []byte {
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, uri...)
	return append(b, " HTTP/1.1\r\nHost: "...)
}

// tail returns the lines of the check's requests after Host, and the blank line that ends them.
func (rs *httpRequestSpec) tail() []byte {
	const userAgent = "User-Agent: " + httpUserAgent + "\r\n"
	// Sized exactly: it is kept.
	n := len("Connection: keep-alive\r\n\r\n")
	ua := true
	for _, h := range rs.headers {
		n += len(h[0]) + len(h[1]) + 4
		if strings.EqualFold(h[0], "User-Agent") {
			ua = false
		}
	}
	if ua {
		n += len(userAgent)
	}
	b := make([]byte, 0, n)
	if ua {
		b = append(b, userAgent...)
	}
	b = append(b, "Connection: keep-alive\r\n"...)
	for _, h := range rs.headers {
		b = append(b, h[0]...)
		b = append(b, ": "...)
		b = append(b, h[1]...)
		b = append(b, "\r\n"...)
	}
	return append(b, "\r\n"...)
}
