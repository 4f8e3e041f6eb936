package engine

import (
	"net"
	"net/netip"
	"time"

	"github.com/meridian-gslb/meridian/internal/answer"
	"github.com/meridian-gslb/meridian/internal/answerlog"
	"github.com/meridian-gslb/meridian/internal/fastpath"
)

// FastPath is the fast path of one UDP address of a block (see internal/fastpath): its loops
// answer from the engine's snapshot what answer.AppendFast answers, and hand the rest to Slow.
type FastPath struct {
	srv *fastpath.Server
}

// FastObserver is told of every query the fast path answered: the query, the response, the
// client and when the query's batch was read (for the adapter's metrics and sampled log). It
// runs in a loop: it must not block.
type FastObserver func(pkt, resp []byte, src netip.Addr, start time.Time)

// ListenFast starts the fast path of the engine's zones on addr (host:port) with loops sockets
// (0: one per CPU) after the address's first others sockets of its SO_REUSEPORT group
// (CoreDNS's), telling observe (nil: nobody) of each answer. With steer, the address's packets
// go to its sockets at once; without, only after Resteer (fastpath.Listen).
func (e *Engine) ListenFast(addr string, loops, others int, steer bool, observe FastObserver) (*FastPath, error) {
	srv, err := fastpath.Listen(addr, loops, others, steer, fastHandler{e: e, opts: e.AnswerOptions(), observe: observe}, &fastpath.Counts{})
	if err != nil {
		return nil, err
	}
	srv.Serve()
	return &FastPath{srv: srv}, nil
}

// Slow returns the connection of the packets the fast path does not answer, for a DNS server
// that serves them as the address's own socket would be.
func (f *FastPath) Slow() net.PacketConn { return f.srv.Slow() }

// Steered reports whether every packet of the address goes to the fast path's sockets.
func (f *FastPath) Steered() bool { return f.srv.Steered() }

// Resteer steers the address's packets to the fast path's sockets again (fastpath.Server.Resteer).
func (f *FastPath) Resteer() { f.srv.Resteer() }

// Close stops the fast path without dropping a query it holds; stopSlow stops the server of
// Slow (fastpath.Server.Close).
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

// Fast implements fastpath.Handler.
func (h fastHandler) Fast(dst, pkt []byte, src netip.Addr) ([]byte, bool) {
	e := h.e
	var start time.Time
	if h.observe != nil {
		start = time.Now() // the clock only for an observer: the metrics' duration
	}
	resp, ok := answer.AppendFast(dst, e.Snapshot(), h.opts, pkt, src, e.Geo())
	if ok && h.observe != nil {
		h.observe(pkt, resp, src, start)
	}
	return resp, ok
}
