package probe

// The http probe is a lean HTTP/1.1 client written for health checks at scale (tens of
// thousands of checks, many of them waiting on dead backends), not net/http's Transport:
//
//   - a probe runs on the caller's goroutine only: no goroutine per probe or per connection;
//   - what a request is made of is read once at load, most of it kept once for all the probers
//     of a profile (httpCheck), and the request's bytes are written for each probe into a
//     pooled buffer; the response is parsed with http.ReadResponse over a pooled 4 KiB
//     bufio.Reader taken after the first byte arrived;
//   - each prober keeps at most one idle keep-alive connection (an fd and a few hundred bytes),
//     reused by the next probe; a reused connection that turns out stale is replaced once by a
//     fresh one within the same deadline;
//   - every read and write is bounded by the probe's deadline set on the connection.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	// httpBodyLimit is how much of a body is read, matched, and drained for reuse; a
	// connection whose body is longer is closed rather than reused.
	httpBodyLimit = 64 << 10
	// httpMaxRedirects is how many redirects follow_redirects follows.
	httpMaxRedirects = 5
	// httpUserAgent is the User-Agent of every probe request, unless headers set one.
	httpUserAgent = "meridian-healthcheck"
)

// httpProbe is a compiled http check for one target. It is safe for concurrent use.
type httpProbe struct {
	dialTarget
	*httpCheck        // shared by the checks of a load that differ only in their target and uri
	uri        string // the request target of its first request

	mu     sync.Mutex
	idle   net.Conn // at most one idle keep-alive connection (goroutine probes)
	idleFD int32    // the same for probes on the poller (a descriptor); -1 for none
	closed bool
}

// httpCheck is what an http check is apart from its target and its request.
type httpCheck struct {
	redirect *httpRequestSpec // what requests after a redirect are made of; nil unless followed
	tls      *httpTLS         // nil without enable_tls
	timeout  time.Duration
	codes    *httpCodes      // expected_code
	body     *regexp.Regexp  // expected_body, nil when unset
	metric   *metricSelector // the sample that is the backend's load, nil when unset
	head     bool            // the method is HEAD: responses have no body
	// A request is the method, the probe's uri, the Host header (hostHeader, or the target's,
	// with the port unless it is defaultPort), then tail: built for each probe, since most
	// checks share all of it but the target.
	method      string
	hostHeader  string
	defaultPort uint16
	tail        []byte
}

// httpCodes are the status codes a check expects, and the pass reason of each ("http 200").
// The checks that keep the default share one.
type httpCodes struct {
	codes  []int
	passes []string
}

// httpTLS is what an http check's TLS handshakes are made of. A probe keeps these two fields
// rather than a tls.Config (about 550 bytes): a zone's checks number in the tens of thousands,
// and each handshake allocates far more than the Config it is given.
type httpTLS struct {
	serverName string // the host parameter without brackets; "" for the target's host
	skipVerify bool
}

// config returns the configuration of one handshake with the target whose host is host.
func (t *httpTLS) config(host string) *tls.Config {
	name := t.serverName
	if name == "" {
		name = host
	}
	return &tls.Config{
		ServerName:         name,
		InsecureSkipVerify: t.skipVerify, //nolint:gosec // the operator's explicit choice
		MinVersion:         tls.VersionTLS12,
		NextProtos:         httpNextProtos,
	}
}

// httpNextProtos is the ALPN of every handshake: the probes speak HTTP/1.1 only.
var httpNextProtos = []string{"http/1.1"}

// httpDefaultCodes is the expected_code default and its pass reason, shared by the checks that
// keep it.
var httpDefaultCodes = &httpCodes{codes: []int{http.StatusOK}, passes: []string{"http 200"}}

// newHTTPProbe compiles an http check: port, uri, method, host, headers, expected_code,
// expected_body, metric, enable_tls, skip_tls_verify, follow_redirects. As in CoreDNS-GSLB, enable_tls
// defaults to true and the port to 443; the backend's port replaces 443, and enable_tls: false
// without a port means 80.
func newHTTPProbe(p *params, t Target, timeout time.Duration) (Prober, error) {
	useTLS := p.Bool("enable_tls", true)
	defPort, scheme := 80, "http"
	if useTLS {
		defPort, scheme = 443, "https"
	}
	port := p.Port(t, defPort)
	hp := &httpProbe{dialTarget: newDialTarget(t, port), idleFD: -1}
	check := &httpCheck{timeout: timeout, codes: httpDefaultCodes, defaultPort: uint16(defPort)}
	rs := &httpRequestSpec{scheme: scheme, method: p.String("method", http.MethodGet), uri: p.String("uri", "/")}
	if !httpIsToken(rs.method) {
		p.Errorf("method", "must be an HTTP method such as GET or HEAD, not %q", rs.method)
	}
	check.head = rs.method == http.MethodHead
	if !strings.HasPrefix(rs.uri, "/") || !httpIsPrintable(rs.uri) || strings.ContainsRune(rs.uri, ' ') {
		p.Errorf("uri", `must be a path such as "/health" without spaces, not %q`, rs.uri)
	}
	switch codes := p.Ints("expected_code", httpDefaultCodes.codes, 100, 599); {
	case len(codes) == 0:
		p.Errorf("expected_code", "must list at least one status code")
	case !slices.Equal(codes, httpDefaultCodes.codes):
		check.codes = &httpCodes{codes: codes}
		for _, c := range codes {
			check.codes.passes = append(check.codes.passes, "http "+strconv.Itoa(c))
		}
	}
	check.body = p.Regexp("expected_body")
	sel := p.String("metric", "")
	if sel != "" {
		var err error
		if check.metric, err = parseMetricSelector(sel); err != nil {
			p.Errorf("metric", "must name a sample such as http_inflight or http_inflight{pool=\"a\"}: %v", err)
		}
	}

	hostParam := p.String("host", "")
	rs.host = hostParam
	if rs.host == "" {
		rs.host = t.Host
		if strings.Contains(rs.host, ":") {
			rs.host = "[" + rs.host + "]"
		}
		if port != defPort {
			rs.host += ":" + strconv.Itoa(port)
		}
	} else if !httpIsPrintable(hostParam) || strings.ContainsRune(hostParam, ' ') {
		p.Errorf("host", "must be a host name, not %q", hostParam)
	}

	for name, value := range p.StringMap("headers") {
		switch {
		case !httpIsToken(name):
			p.Errorf("headers", "%q is not a valid header name", name)
		case strings.EqualFold(name, "Host"):
			p.Errorf("headers", "set the Host header with the host parameter")
		case !httpIsPrintable(value):
			p.Errorf("headers", "the value of %s must be one line of text", name)
		default:
			rs.headers = append(rs.headers, [2]string{name, value})
		}
	}
	slices.SortFunc(rs.headers, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	if p.Bool("follow_redirects", false) {
		check.redirect = rs
	}

	skipVerify := p.Bool("skip_tls_verify", false)
	if skipVerify && !useTLS {
		p.Errorf("skip_tls_verify", "only applies with enable_tls: true")
	}
	if useTLS {
		// ServerName is the host parameter or the target's host. For an IP literal Go sends no
		// SNI and verifies the certificate's IP addresses instead.
		name := hostParam
		if h, _, err := net.SplitHostPort(name); err == nil {
			name = h
		}
		check.tls = &httpTLS{serverName: strings.Trim(name, "[]"), skipVerify: skipVerify}
	}
	hp.uri, check.method, check.hostHeader, check.tail = rs.uri, rs.method, hostParam, rs.tail()
	hp.httpCheck = check
	if check.redirect == nil { // (the requests of redirects are the check's own)
		hp.httpCheck = share(p, check.appendKey(p.key[:0], sel), func() *httpCheck { return check })
	}
	return hp, nil
}

// Probe sends the request and judges the status code and, when expected_body is set, the
// first 64 KiB of the body. With follow_redirects, up to 5 redirects to the same scheme and
// host are followed (on the same kept-alive connection when the server allows it); a redirect
// elsewhere, or one too many, is judged as the final response.
func (hp *httpProbe) Probe(ctx context.Context) Result {
	deadline, budget := connDeadline(ctx, hp.timeout)
	if ctx.Err() != nil {
		return Result{Reason: connTimeoutReason(budget)}
	}
	buf := httpRequests.Get().(*[]byte)
	*buf = hp.appendRequest((*buf)[:0])
	defer httpRequests.Put(buf)
	req, readReq := *buf, httpReadRequest(hp.head)
	var cur *url.URL // the current URL once a redirect was followed
	var method string
	for hop := 0; ; hop++ {
		out := hp.exchange(ctx, deadline, budget, req, readReq)
		if out.fail != "" {
			return Result{Reason: out.fail}
		}
		if rs := hp.redirect; rs != nil && out.location != "" && hop < httpMaxRedirects {
			if cur == nil {
				cur = &url.URL{Scheme: rs.scheme, Host: rs.host}
				cur, _ = cur.Parse(rs.uri)
				method = rs.method
			}
			if next, ok := hp.sameHost(cur, out.location); ok {
				if out.code <= http.StatusSeeOther && method != http.MethodHead {
					method = http.MethodGet
				}
				cur = next
				req = rs.build(method, next.RequestURI())
				readReq = httpReadRequest(method == http.MethodHead)
				continue
			}
		}
		return hp.judge(out)
	}
}

// httpHeadRequest and httpGetRequest tell http.ReadResponse whether a response has a body
// (only the method is read; never modified).
var (
	httpHeadRequest = &http.Request{Method: http.MethodHead}
	httpGetRequest  = &http.Request{Method: http.MethodGet}
)

// httpReadRequest returns the request ReadResponse needs for a method: the body rules depend
// only on whether it is HEAD.
func httpReadRequest(head bool) *http.Request {
	if head {
		return httpHeadRequest
	}
	return httpGetRequest
}

// judge turns a final response into a result. With a metric, the result carries the load
// the body gave, whatever the status; one the body does not give is unknown, and a check that
// passes says why in its reason.
func (hp *httpProbe) judge(out httpOutcome) Result {
	var res Result
	i := slices.Index(hp.codes.codes, out.code)
	switch {
	case i < 0:
		res = Fail("http %d", out.code)
	case hp.body != nil && !out.bodyOK:
		res = Fail("http %d, body does not match %q", out.code, hp.body.String())
	default:
		res = Pass(hp.codes.passes[i])
	}
	if hp.metric != nil {
		res.HasLoad, res.Load = true, out.load
		if res.OK && out.loadNote != "" {
			res.Reason += ", " + out.loadNote
		}
	}
	return res
}

// keepsBody reports whether the probe reads the body rather than discarding it.
func (hp *httpProbe) keepsBody() bool { return hp.body != nil || hp.metric != nil }

// inspect matches the body b read (complete: all of it) against expected_body, and reads the
// metric's load from it, into out. A body cut at the limit loses its last, partial line.
func (hp *httpProbe) inspect(b []byte, complete bool, out *httpOutcome) {
	out.bodyOK = hp.body != nil && hp.body.Match(b)
	if hp.metric == nil {
		return
	}
	if !complete {
		if nl := bytes.LastIndexByte(b, '\n'); nl >= 0 {
			b = b[:nl+1]
		}
	}
	v, err := hp.metric.find(b)
	if err != nil {
		out.load, out.loadNote = math.NaN(), "metric "+hp.metric.String()+": "+err.Error()
		return
	}
	out.load, out.loadNote = checkLoad(v)
	if out.loadNote != "" {
		out.loadNote = "metric " + hp.metric.String() + ": " + out.loadNote
	}
}

// sameHost resolves a Location against cur, and accepts it only on the same scheme and host.
func (hp *httpProbe) sameHost(cur *url.URL, location string) (*url.URL, bool) {
	next, err := cur.Parse(location)
	if err != nil || next.Scheme != cur.Scheme || !strings.EqualFold(next.Host, cur.Host) {
		return nil, false
	}
	return next, true
}

// httpOutcome is what one request/response exchange saw.
type httpOutcome struct {
	code     int
	bodyOK   bool    // expected_body matched (meaningless without it)
	load     float64 // the metric's value, NaN when the body does not give it (without a metric, meaningless)
	loadNote string  // why the load is unknown
	location string  // the Location of a 3xx, when following redirects
	fail     string  // a transport failure's reason; the other fields are unset
}

// exchange sends req and reads the response on the idle connection or a new one. A reused
// connection that fails before any byte of the answer (a keep-alive the server closed) is
// replaced once by a fresh connection.
func (hp *httpProbe) exchange(ctx context.Context, deadline time.Time, budget time.Duration, req []byte, readReq *http.Request) httpOutcome {
	for attempt := 0; ; attempt++ {
		var conn net.Conn
		if attempt == 0 {
			conn = hp.takeIdle()
		}
		reused := conn != nil
		if !reused {
			var fail string
			if conn, fail = hp.dial(ctx, deadline, budget); fail != "" {
				return httpOutcome{fail: fail}
			}
		}
		if err := conn.SetDeadline(deadline); err != nil {
			conn.Close()
			return httpOutcome{fail: connReason(ctx, err, budget)}
		}
		_, err := conn.Write(req)
		var first byte
		if err == nil {
			first, err = connReadFirst(conn)
		}
		if err != nil {
			conn.Close()
			if reused && !connIsTimeout(ctx, err) {
				continue // stale keep-alive: once more on a fresh connection
			}
			if errors.Is(err, io.EOF) {
				return httpOutcome{fail: "connection closed before response"}
			}
			return httpOutcome{fail: connReason(ctx, err, budget)}
		}
		out, keep := hp.readResponse(ctx, conn, first, budget, readReq)
		if keep {
			hp.putIdle(conn)
		} else {
			conn.Close()
		}
		return out
	}
}

// readResponse parses the response whose first byte was read, and reads its body. keep says
// whether conn may serve the next request.
func (hp *httpProbe) readResponse(ctx context.Context, conn net.Conn, first byte, budget time.Duration, readReq *http.Request) (out httpOutcome, keep bool) {
	rd := getConnReader(conn, first)
	defer putConnReader(rd)
	resp, err := http.ReadResponse(rd.br, readReq)
	if err != nil {
		if connIsTimeout(ctx, err) || errors.Is(err, io.ErrUnexpectedEOF) {
			return httpOutcome{fail: connReason(ctx, err, budget)}, false
		}
		var op *net.OpError
		if errors.As(err, &op) {
			return httpOutcome{fail: connReason(ctx, err, budget)}, false
		}
		return httpOutcome{fail: "http: malformed response"}, false
	}
	out.code = resp.StatusCode
	if hp.redirect != nil && resp.StatusCode >= 300 && resp.StatusCode < 400 {
		out.location = resp.Header.Get("Location")
	}
	complete, err := hp.readBody(resp.Body, &out)
	if err != nil {
		return httpOutcome{fail: connReason(ctx, err, budget)}, false
	}
	return out, complete && !resp.Close && rd.drained()
}

// readBody reads up to httpBodyLimit bytes of body into a pooled buffer and inspects them
// into out when the check reads the body (otherwise the buffer is reused chunk by chunk).
// complete says whether the body ended within the limit.
func (hp *httpProbe) readBody(body io.Reader, out *httpOutcome) (complete bool, err error) {
	bp := connBufPool.Get().(*[]byte)
	defer connBufPool.Put(bp)
	b := (*bp)[:0]
	for total := 0; total < httpBodyLimit; {
		if len(b) == cap(b) {
			if !hp.keepsBody() {
				b = b[:0] // nothing to match: discard what was read
			} else {
				b = slices.Grow(b, min(cap(b), httpBodyLimit-len(b)))
			}
		}
		n, rerr := body.Read(b[len(b):min(cap(b), len(b)+httpBodyLimit-total)])
		b, total = b[:len(b)+n], total+n
		if rerr == io.EOF {
			complete = true
			break
		}
		if rerr != nil {
			*bp = b[:0]
			return false, rerr
		}
	}
	*bp = b[:0]
	if !complete {
		// Exactly at the limit: the body is complete only if nothing follows.
		var one [1]byte
		n, rerr := io.ReadFull(body, one[:])
		complete = n == 0 && rerr == io.EOF
	}
	if hp.keepsBody() {
		hp.inspect(b, complete, out)
	}
	return complete, nil
}

// dial opens a connection to the target, with the TLS handshake when enabled.
func (hp *httpProbe) dial(ctx context.Context, deadline time.Time, budget time.Duration) (net.Conn, string) {
	dialer := connDialer(hp.timeout)
	conn, err := dialer.DialContext(ctx, "tcp", hp.hostPort())
	if err != nil {
		return nil, connReason(ctx, err, budget)
	}
	if hp.tls == nil {
		return conn, ""
	}
	if err := conn.SetDeadline(deadline); err != nil {
		conn.Close()
		return nil, connReason(ctx, err, budget)
	}
	tc := tls.Client(conn, hp.tls.config(hp.tlsHost()))
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, tlsReason(ctx, err, budget)
	}
	return tc, ""
}

// tlsHost returns the host of hp's target, the server name of its handshakes when the check
// names none.
func (hp *httpProbe) tlsHost() string {
	host, _, err := net.SplitHostPort(hp.hostPort())
	if err != nil {
		return ""
	}
	return host
}

// tlsReason is the short reason of a failed TLS handshake: "tls: certificate signed by unknown
// authority", "tls: certificate is not valid for example.com", "timeout after 5s".
func tlsReason(ctx context.Context, err error, budget time.Duration) string {
	if connIsTimeout(ctx, err) {
		return connTimeoutReason(budget)
	}
	var (
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		invalid   x509.CertificateInvalidError
		record    tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &unknownCA):
		return "tls: certificate signed by unknown authority"
	case errors.As(err, &hostErr):
		return "tls: certificate is not valid for " + hostErr.Host
	case errors.As(err, &invalid):
		if invalid.Reason == x509.Expired {
			return "tls: certificate expired or not yet valid"
		}
		return "tls: " + strings.TrimPrefix(invalid.Error(), "x509: ")
	case errors.As(err, &record):
		return "tls: not a TLS server"
	case errors.Is(err, io.EOF):
		return "tls: connection closed during handshake"
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return "tls: " + connCause(op.Err)
	}
	return "tls: " + strings.TrimPrefix(strings.TrimPrefix(err.Error(), "tls: "), "x509: ")
}

// takeIdle returns the idle connection, if any, leaving none.
func (hp *httpProbe) takeIdle() net.Conn {
	hp.mu.Lock()
	c := hp.idle
	hp.idle = nil
	hp.mu.Unlock()
	return c
}

// putIdle keeps c for the next probe, or closes it when one is kept already.
func (hp *httpProbe) putIdle(c net.Conn) {
	hp.mu.Lock()
	if hp.idle == nil && !hp.closed {
		hp.idle, c = c, nil
	}
	hp.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// Close closes the idle connection; probes after Close keep no connection. The scheduler
// calls it (through io.Closer) when the check is removed.
func (hp *httpProbe) Close() error {
	hp.mu.Lock()
	c, fd := hp.idle, int(hp.idleFD)
	hp.idle, hp.idleFD, hp.closed = nil, -1, true
	hp.mu.Unlock()
	if fd >= 0 {
		closeFD(fd)
	}
	if c != nil {
		return c.Close()
	}
	return nil
}

// httpIsToken reports whether s is a non-empty HTTP token (a method or header name).
func httpIsToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// httpIsPrintable reports whether s has no control characters (so no CR or LF).
func httpIsPrintable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' && s[i] != '\t' || s[i] == 0x7f {
			return false
		}
	}
	return true
}
