package probe

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// httpAsyncLimit is the most an http probe on the poller reads: headers and the 64 KiB of body
// that Probe reads too.
const httpAsyncLimit = httpBodyLimit + 16<<10

// startAsync runs the probe on the poller instead of a goroutine: plain HTTP to an address,
// without redirects. TLS, redirects and host names need blocking I/O and decline.
func (hp *httpProbe) startAsync(p *Poller, sources []netip.Addr, deadline time.Time, done func(Result)) bool {
	if hp.tls != nil || hp.redirect != nil || !hp.ap.Addr().IsValid() {
		return false
	}
	x := httpExchanges.Get().(*httpExchange)
	x.hp, x.req = hp, hp.appendRequest(x.req[:0])
	p.start(hp.ap, hp.takeIdleFD(), sources, x.req, httpAsyncLimit, deadline, hp.timeout, x, done)
	return true
}

// takeIdleFD returns the kept-alive connection of the poller, if it is still open, or -1.
func (hp *httpProbe) takeIdleFD() int {
	hp.mu.Lock()
	fd := int(hp.idleFD)
	hp.idleFD = -1
	hp.mu.Unlock()
	if fd >= 0 && !alive(fd) {
		closeFD(fd) // the server closed it while idle
		fd = -1
	}
	return fd
}

// putIdleFD keeps fd for the next probe, or closes it when one is kept already.
func (hp *httpProbe) putIdleFD(fd int) {
	hp.mu.Lock()
	if hp.idleFD < 0 && !hp.closed {
		hp.idleFD, fd = int32(fd), -1
	}
	hp.mu.Unlock()
	if fd >= 0 {
		closeFD(fd)
	}
}

// httpExchange judges an http probe on the poller from the bytes received so far, and holds
// its request until it ended. Exchanges are reused (httpExchanges), and with them their
// requests' buffers: thousands of probes a second would otherwise each allocate both.
type httpExchange struct {
	hp  *httpProbe
	req []byte
}

// httpExchanges are the exchanges not in use.
var httpExchanges = sync.Pool{New: func() any { return new(httpExchange) }}

func (x *httpExchange) written() (Result, bool) { return Result{}, false }

// expired reports the timeout: an incomplete response is no verdict.
func (x *httpExchange) expired(_ []byte, timeout string) Result { return Result{Reason: timeout} }

// ended keeps the connection for the next probe when the response left it reusable, and gives
// x back to httpExchanges: the poller calls nothing of it after.
func (x *httpExchange) ended(keptFD int) {
	if keptFD >= 0 {
		x.hp.putIdleFD(keptFD)
	}
	x.hp = nil
	httpExchanges.Put(x)
}

// received parses the response once its headers are in, and judges it once its body is
// complete: by Content-Length, by chunked encoding, or by the end of the connection.
func (x *httpExchange) received(in []byte, eof bool) (Result, bool, bool) {
	headerEnd := bytes.Index(in, []byte("\r\n\r\n"))
	if headerEnd < 0 {
		if eof {
			if len(in) == 0 {
				return Fail("connection closed before response"), true, false
			}
			return Fail("http: malformed response"), true, false
		}
		return Result{}, false, false
	}
	rest := bytes.NewReader(in)
	br := bufio.NewReaderSize(rest, 512)
	resp, err := http.ReadResponse(br, httpReadRequest(x.hp.head))
	if err != nil {
		return Fail("http: malformed response"), true, false
	}
	delimited := resp.ContentLength >= 0 || len(resp.TransferEncoding) > 0 || resp.Body == http.NoBody
	if !delimited && !eof {
		return Result{}, false, false // the body ends with the connection
	}
	out := httpOutcome{code: resp.StatusCode}
	err = x.readBody(resp.Body, &out)
	judged := x.hp.judge(out)
	switch {
	case err == nil:
		keep := delimited && !resp.Close && br.Buffered() == 0 && rest.Len() == 0
		return judged, true, keep
	case errors.Is(err, errBodyLimit) || len(in) > httpAsyncLimit:
		return judged, true, false // judged on the first 64 KiB, as Probe does; not reused
	case errors.Is(err, io.ErrUnexpectedEOF) && !eof:
		return Result{}, false, false // more of the body is on its way
	default:
		return Result{Reason: connClosed}, true, false
	}
}

// errBodyLimit reports a body longer than the probe reads.
var errBodyLimit = errors.New("body longer than the limit")

// readBody reads the body (up to httpBodyLimit) and inspects it into out when the check reads
// the body (expected_body, metric).
func (x *httpExchange) readBody(body io.Reader, out *httpOutcome) error {
	limited := io.LimitReader(body, httpBodyLimit+1)
	if !x.hp.keepsBody() {
		n, err := io.Copy(io.Discard, limited)
		if err == nil && n > httpBodyLimit {
			err = errBodyLimit
		}
		return err
	}
	var b bytes.Buffer
	n, err := io.Copy(&b, limited)
	if err == nil && n > httpBodyLimit {
		err = errBodyLimit
	}
	x.hp.inspect(b.Bytes()[:min(b.Len(), httpBodyLimit)], err == nil, out)
	return err
}
