package engine

import (
	"net"
	"net/netip"
	"time"

	"github.com/meridian-gslb/meridian/internal/answer"
	"github.com/meridian-gslb/meridian/internal/answerlog"
	"github.com/meridian-gslb/meridian/internal/fastpath"
)

// FastPath is the fast path of one address of a block (see internal/fastpath): its loops
// answer from the engine's snapshot what answer.AppendFast answers, and hand the rest to Slow
// (and, over TCP, SlowTCP).
type FastPath struct {
	srv *fastpath.Server
}

// FastObserver is told of every query the fast path answered: the query, the response, the
// client, whether it came over TCP and when the query's batch was read (for the adapter's
// metrics and sampled log). It runs in a loop: it must not block.
type FastObserver func(pkt, resp []byte, src netip.Addr, tcp bool, start time.Time)

// FastOptions are how ListenFast starts a fast path.
type FastOptions struct {
	// Loops is the count of loops of each transport (0: one per CPU); Others the count of
	// CoreDNS's sockets of the address, first in its groups.
	Loops, Others int
	// Steer sends the address's packets to the fast path's sockets at once; without it,
	// only after Resteer (fastpath.Listen).
	Steer bool
	// Observe is told of each answer (nil: nobody).
	Observe FastObserver
	// Answer are the options of the fast path's answers: the engine's (AnswerOptions) with
	// the block's fallthrough zones and the zones the fast path must leave to CoreDNS's server.
	Answer answer.Options
	// TCP serves the address's TCP too, with its limits; nil for UDP only.
	TCP *FastTCP
}

// FastTCP are the limits of the fast path's TCP connections (fastpath.TCPConfig; zero ones
// take its defaults).
type FastTCP = fastpath.TCPConfig

// ListenFast starts the fast path of the engine's zones on addr (host:port) with o.
func (e *Engine) ListenFast(addr string, o FastOptions) (*FastPath, error) {
	srv, err := fastpath.Listen(addr, fastpath.Config{Loops: o.Loops, Others: o.Others, Steer: o.Steer, Counts: &fastpath.Counts{}, TCP: o.TCP},
		&fastHandler{e: e, opts: o.Answer, observe: o.Observe})
	if err != nil {
		return nil, err
	}
	srv.Serve()
	return &FastPath{srv: srv}, nil
}

// Slow returns the connection of the packets the fast path does not answer, for a DNS server
// that serves them as the address's own socket would be.
func (f *FastPath) Slow() net.PacketConn { return f.srv.Slow() }

// SlowTCP returns the listener of the TCP queries the fast path does not answer, one
// connection each, for a DNS server that serves them as the address's own listener would be;
// nil without TCP.
func (f *FastPath) SlowTCP() net.Listener { return f.srv.SlowTCP() }

// Steered reports whether every packet of the address goes to the fast path's sockets.
func (f *FastPath) Steered() bool { return f.srv.Steered() }

// Resteer steers the address's packets to the fast path's sockets again (fastpath.Server.Resteer).
func (f *FastPath) Resteer() { f.srv.Resteer() }

// Close stops the fast path without dropping a query it holds; stopSlow stops the servers of
// Slow and SlowTCP (fastpath.Server.Close).
func (f *FastPath) Close(stopSlow func() error) error { return f.srv.Close(stopSlow) }

// AnswerLog returns the block's answer log (answer_log), nil when it has none: the adapter
// attaches the server block's dnstap plugins to it and tells it of the fast path's answers.
func (e *Engine) AnswerLog() *answerlog.Log {
	l, _ := instanceOf[*answerlog.Log](e)
	return l
}

// fastHandler answers in the loops from the engine's current snapshot.
type fastHandler struct {
	e       *Engine
	opts    answer.Options
	observe FastObserver
}

// Fast implements fastpath.Handler: a response that rate limiting dropped is no bytes.
func (h *fastHandler) Fast(dst, pkt []byte, src netip.Addr, tcp bool, now time.Time) ([]byte, bool) {
	e := h.e
	resp, ok := answer.AppendFast(dst, e.Snapshot(), &h.opts, pkt, src, tcp, e.Geo(), now)
	if ok && h.observe != nil && len(resp) > len(dst) {
		h.observe(pkt, resp[len(dst):], src, tcp, now)
	}
	return resp, ok
}
