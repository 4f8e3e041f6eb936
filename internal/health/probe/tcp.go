package probe

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"regexp"
	"time"
	"unsafe"
)

// tcpExpectLimit is how much of the peer's answer the tcp probe reads looking for expect.
const tcpExpectLimit = connReadSize

// tcpProbe is a compiled tcp check: connect, optionally write send, optionally read until
// expect matches, then close. Connections are not reused. It is safe for concurrent use.
type tcpProbe struct {
	dialTarget
	*tcpCheck // shared by the checks of a load that differ only in their target
}

// tcpCheck is what a tcp check is apart from its target.
type tcpCheck struct {
	send string // written after connecting; "" for none

	expect  *regexp.Regexp // matched on the answer; nil for none
	timeout time.Duration
}

// newTCPProbe compiles a tcp check: port (required unless the target has one), send, expect.
func newTCPProbe(p *params, t Target, timeout time.Duration) (Prober, error) {
	port := p.Port(t, 0)
	if port == 0 {
		p.Errorf("port", "required: the target has no port")
	}
	expect, send := p.Regexp("expect"), p.String("send", "")
	// The key: the timeout, and send and the pattern each after its length.
	p.key = binary.LittleEndian.AppendUint64(append(p.key[:0], "tcp"...), uint64(timeout))
	pattern := ""
	if expect != nil {
		pattern = expect.String()
	}
	p.key = append(binary.AppendUvarint(p.key, uint64(len(pattern))), pattern...)
	p.key = append(binary.AppendUvarint(p.key, uint64(len(send))), send...)
	check := share(p, p.key, func() *tcpCheck { return &tcpCheck{send: send, expect: expect, timeout: timeout} })
	return &tcpProbe{dialTarget: newDialTarget(t, port), tcpCheck: check}, nil
}

// sendBytes returns send as the bytes of the string, without a copy (a string's 16 bytes are
// kept rather than a slice's 24, in each of tens of thousands of checks): they must not be
// written, and the writers of a connection only read them.
func (c *tcpCheck) sendBytes() []byte { return unsafe.Slice(unsafe.StringData(c.send), len(c.send)) }

// Probe connects to the target and, when configured, writes send and reads up to 4 KiB until
// expect matches, the peer closes, or the deadline passes.
func (tp *tcpProbe) Probe(ctx context.Context) Result {
	deadline, budget := connDeadline(ctx, tp.timeout)
	if ctx.Err() != nil {
		return Result{Reason: connTimeoutReason(budget)}
	}
	dialer := connDialer(tp.timeout)
	conn, err := dialer.DialContext(ctx, "tcp", tp.hostPort())
	if err != nil {
		return Result{Reason: connReason(ctx, err, budget)}
	}
	defer conn.Close()
	if tp.send == "" && tp.expect == nil {
		return Pass("connected")
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return Result{Reason: connReason(ctx, err, budget)}
	}
	if tp.send != "" {
		if _, err := conn.Write(tp.sendBytes()); err != nil {
			return Result{Reason: connReason(ctx, err, budget)}
		}
	}
	if tp.expect == nil {
		return Pass("connected, sent")
	}
	return tp.readExpect(ctx, conn, budget)
}

// readExpect reads the answer into a pooled buffer until expect matches. The buffer is taken
// only once the first byte arrived, so a silent peer costs no buffer.
func (tp *tcpProbe) readExpect(ctx context.Context, conn net.Conn, budget time.Duration) Result {
	first, err := connReadFirst(conn)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return Fail("tcp: expect %q not matched (connection closed)", tp.expect.String())
		}
		return Result{Reason: connReason(ctx, err, budget)}
	}
	bp := connBufPool.Get().(*[]byte)
	defer connBufPool.Put(bp)
	b := append((*bp)[:0], first)
	for {
		if tp.expect.Match(b) {
			return Pass("tcp: expect matched")
		}
		if len(b) >= tcpExpectLimit {
			break
		}
		n, err := conn.Read(b[len(b):min(cap(b), tcpExpectLimit)])
		b = b[:len(b)+n]
		if err != nil {
			if n > 0 && tp.expect.Match(b) {
				return Pass("tcp: expect matched")
			}
			break
		}
	}
	// Something came back but not what was expected (whether the peer then closed, stopped
	// at the deadline, or sent more than 4 KiB): that, not the timeout, is the news.
	return Fail("tcp: expect %q not matched", tp.expect.String())
}

// startAsync runs the probe on the poller instead of a goroutine; it declines host-name
// targets, which need a resolver.
func (tp *tcpProbe) startAsync(p *Poller, sources []netip.Addr, deadline time.Time, done func(Result)) bool {
	if !tp.ap.Addr().IsValid() {
		return false
	}
	p.start(tp.ap, -1, sources, tp.sendBytes(), tcpExpectLimit, deadline, tp.timeout, tcpExchange{tp}, done)
	return true
}

// tcpExchange judges a tcp probe on the poller, as Probe does on a goroutine.
type tcpExchange struct{ tp *tcpProbe }

func (x tcpExchange) written() (Result, bool) {
	switch {
	case x.tp.send == "" && x.tp.expect == nil:
		return Pass("connected"), true
	case x.tp.expect == nil:
		return Pass("connected, sent"), true
	}
	return Result{}, false
}

// expired judges what arrived before the deadline, as Probe does when its read times out.
func (x tcpExchange) expired(in []byte, timeout string) Result {
	if len(in) > 0 {
		return Fail("tcp: expect %q not matched", x.tp.expect.String())
	}
	return Result{Reason: timeout}
}

// ended does nothing: a tcp probe keeps no connection.
func (x tcpExchange) ended(int) {}

func (x tcpExchange) received(in []byte, eof bool) (Result, bool, bool) {
	if x.tp.expect.Match(in) {
		return Pass("tcp: expect matched"), true, false
	}
	if eof && len(in) == 0 {
		return Fail("tcp: expect %q not matched (connection closed)", x.tp.expect.String()), true, false
	}
	if eof || len(in) >= tcpExpectLimit {
		return Fail("tcp: expect %q not matched", x.tp.expect.String()), true, false
	}
	return Result{}, false, false
}
