package probe

// Helpers shared by the connection-oriented probes (http, tcp): deadlines, short failure
// reasons, and pooled read buffers that a probe takes only once its peer has started to answer.
//
// Memory model: the scheduler runs each in-flight probe on its own goroutine, and in the worst
// case (backends that accept and never answer) thousands of probes wait at once. A waiting
// probe therefore holds only its connection and a one-byte read; the 4 KiB buffers come from
// pools after the first byte of the answer arrived and go back before Probe returns.

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// connReadSize is the size of the pooled read buffers (bufio readers and tcp expect buffers).
const connReadSize = 4 << 10

// connDeadline returns the absolute deadline of a probe starting now, the earlier of ctx's
// deadline and now+timeout, and the budget that a timeout reason names: the check's timeout,
// or the context's remaining time (to the millisecond) when the context is noticeably shorter.
func connDeadline(ctx context.Context, timeout time.Duration) (time.Time, time.Duration) {
	now := time.Now()
	deadline := now.Add(timeout)
	budget := timeout
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
		budget = namedBudget(d.Sub(now), timeout)
	}
	return deadline, budget
}

// namedBudget is the time a timeout reason names for a probe that had rest left of a check's
// timeout: the timeout itself, unless rest is noticeably shorter (a retry, or a context with
// an earlier deadline), then rest to the millisecond. The scheduler sets the deadline to the
// timeout just before calling Probe; the time spent in between (2% of the timeout, at least
// 25 ms: a loaded machine, or the race detector, can take milliseconds) is tolerated, so that
// the reason names the timeout. A timeout of 0 (none) names rest.
func namedBudget(rest, timeout time.Duration) time.Duration {
	if timeout > 0 && rest >= timeout-max(timeout/50, 25*time.Millisecond) {
		return timeout
	}
	return max(rest.Round(time.Millisecond), time.Millisecond)
}

// dialTarget is where a connection-oriented probe connects: the target's address and port,
// or, for a target named by a host name, host:port. A probe of an address keeps no string
// (tens of thousands of probers would each keep one): dial makes it when a goroutine dials.
type dialTarget struct {
	ap netip.AddrPort // the target's address for the poller; invalid for host names
	// host is host:port when the target is a host name, or its address is spelled otherwise
	// than ap's String; nil otherwise.
	host *string
}

// newDialTarget returns the dialTarget of port on t.
func newDialTarget(t Target, port int) dialTarget {
	d := dialTarget{ap: netip.AddrPortFrom(t.IP, uint16(port))}
	if hp := t.HostPort(port); !d.ap.Addr().IsValid() || hp != d.ap.String() {
		d.host = &hp
	}
	return d
}

// hostPort returns the host:port a goroutine dials.
func (d dialTarget) hostPort() string {
	if d.host != nil {
		return *d.host
	}
	return d.ap.String()
}

// connDialer returns the dialer of a probe, built per probe rather than kept by thousands of
// probers: bounded by timeout even when the context has no
// deadline, and without TCP keep-alive (probe connections are short, or reused at the check's
// interval, which is shorter than keep-alive's idle time), which saves four setsockopt calls
// per connection. Its sockets leave from the probe's probe_source, if any (see source.go).
func connDialer(timeout time.Duration) net.Dialer {
	return net.Dialer{Timeout: timeout, KeepAlive: -1, ControlContext: bindSource}
}

// connTimeoutReason is the reason of a probe that ran out of time.
func connTimeoutReason(budget time.Duration) string {
	if last := lastTimeoutReason.Load(); last != nil && last.budget == budget {
		return last.reason
	}
	r := &timeoutReason{budget, "timeout after " + budget.String()}
	lastTimeoutReason.Store(r)
	return r.reason
}

// timeoutReason is a budget and its timeout reason. Most probes time out after the same few
// budgets: the last one made is kept, so that thousands of silent backends a second share one
// string (each backend keeps its last reason) instead of building it each time.
type timeoutReason struct {
	budget time.Duration
	reason string
}

var lastTimeoutReason atomic.Pointer[timeoutReason]

// connIsTimeout reports whether err (or ctx) means the probe ran out of time. A cancelled
// context counts as a timeout too: the probe did not get to finish.
func connIsTimeout(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return true
	}
	if err == nil {
		return false
	}
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// connReason turns a dial, read or write error into a short reason: "timeout after 5s",
// "connect: connection refused", "read: connection reset by peer", "resolve: no such host",
// "connection closed".
func connReason(ctx context.Context, err error, budget time.Duration) string {
	if connIsTimeout(ctx, err) {
		return connTimeoutReason(budget)
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		if dnsErr.IsNotFound {
			return "resolve: no such host"
		}
		return "resolve: " + dnsErr.Err
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return connClosed
	}
	var op *net.OpError
	if errors.As(err, &op) {
		phase := op.Op
		if phase == "dial" {
			phase = "connect"
		}
		var errno syscall.Errno
		if errors.As(op.Err, &errno) {
			return errnoReason(phase, errno)
		}
		return phase + ": " + connCause(op.Err)
	}
	return connCause(err)
}

// connClosed is the reason of a probe whose peer closed the connection before the end.
const connClosed = "connection closed"

// errnoReason returns the reason "op: " and err's text, shared for the errors probes meet
// most (errnoReasons) rather than made each time: a backend keeps its last reason, and a zone
// of refused backends fails thousands of probes a second.
func errnoReason(op string, err error) string {
	if errno, ok := err.(syscall.Errno); ok {
		if r, ok := errnoReasons[errnoOp{op, errno}]; ok {
			return r
		}
	}
	return op + ": " + err.Error()
}

// errnoOp is an operation of a probe and the error number it failed with.
type errnoOp struct {
	op    string
	errno syscall.Errno
}

// errnoReasons are the reasons errnoReason shares, made once.
var errnoReasons = func() map[errnoOp]string {
	m := make(map[errnoOp]string)
	for _, op := range []string{"connect", "read", "write"} {
		for _, errno := range []syscall.Errno{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED,
			syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ETIMEDOUT, syscall.EPIPE, syscall.EADDRNOTAVAIL} {
			m[errnoOp{op, errno}] = op + ": " + errno.Error()
		}
	}
	return m
}()

// connCause is the innermost meaningful text of err: the errno's message when there is one
// ("connection refused"), else the error's own text.
func connCause(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return connClosed
	}
	return err.Error()
}

// connReadFirst waits for the first byte of the peer's answer with a one-byte read, so that a
// probe holds no read buffer while the peer is silent (the common case in an outage).
func connReadFirst(c net.Conn) (byte, error) {
	var b [1]byte
	for {
		n, err := c.Read(b[:])
		if n == 1 {
			return b[0], nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// connReader is a pooled bufio.Reader over a connection whose first byte was already read.
type connReader struct {
	br  *bufio.Reader
	src prefixedConn
}

// prefixedConn reads one byte already taken from a connection, then the connection.
type prefixedConn struct {
	first    byte
	hasFirst bool
	c        io.Reader
}

// Read implements io.Reader.
func (p *prefixedConn) Read(b []byte) (int, error) {
	if p.hasFirst {
		if len(b) == 0 {
			return 0, nil
		}
		b[0] = p.first
		p.hasFirst = false
		return 1, nil
	}
	return p.c.Read(b)
}

// connReaderPool holds *connReader with 4 KiB buffers.
var connReaderPool = sync.Pool{New: func() any {
	r := new(connReader)
	r.br = bufio.NewReaderSize(&r.src, connReadSize)
	return r
}}

// getConnReader returns a pooled reader that yields first and then reads c.
func getConnReader(c io.Reader, first byte) *connReader {
	r := connReaderPool.Get().(*connReader)
	r.src = prefixedConn{first: first, hasFirst: true, c: c}
	r.br.Reset(&r.src)
	return r
}

// drained reports whether nothing read from the connection is left unconsumed.
func (r *connReader) drained() bool {
	return !r.src.hasFirst && r.br.Buffered() == 0
}

// putConnReader returns r to the pool, dropping its reference to the connection.
func putConnReader(r *connReader) {
	r.src = prefixedConn{}
	r.br.Reset(&r.src)
	connReaderPool.Put(r)
}

// connBufPool holds *[]byte of connReadSize bytes (tcp expect) that grow up to the http body
// limit when a body is kept for matching.
var connBufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, connReadSize)
	return &b
}}
