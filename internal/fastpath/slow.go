package fastpath

import (
	"net"
	"net/netip"
	"os"
	"sync"
	"time"
)

// slowQueue bounds the packets waiting for the slow path: under a flood of what the fast path
// does not answer, the rest is dropped in the loops rather than queued without end.
const slowQueue = 1024

// packet is one query waiting for the slow path.
type packet struct {
	b    []byte
	from netip.AddrPort
}

// slowConn is the net.PacketConn of the slow path: its reads return what the loops hand over,
// its writes go out of a socket of the address.
type slowConn struct {
	out     packetWriter
	queue   chan packet
	closeMu sync.RWMutex
	closed  bool
	done    chan struct{}
	// stop is closed by a read deadline in the past: the reads end, as on a socket.
	stop     chan struct{}
	stopOnce sync.Once
}

// packetWriter is what the slow path writes its replies with and names its address by: the
// address's first socket.
type packetWriter interface {
	WriteTo(b []byte, addr net.Addr) (int, error)
	LocalAddr() net.Addr
}

func newSlowConn(out packetWriter) *slowConn {
	return &slowConn{out: out, queue: make(chan packet, slowQueue), done: make(chan struct{}), stop: make(chan struct{})}
}

// push queues a copy of b from from; it reports false when the queue is full or closed.
func (c *slowConn) push(b []byte, from netip.AddrPort) bool {
	c.closeMu.RLock()
	defer c.closeMu.RUnlock()
	if c.closed {
		return false
	}
	select {
	case c.queue <- packet{append([]byte(nil), b...), from}:
		return true
	default:
		return false
	}
}

// ReadFrom implements net.PacketConn: the next packet the loops handed over, cut to len(b) as
// a socket's read would. Once the connection is closed, or its read deadline set in the past
// (a DNS server's Shutdown), it returns what is still queued, then an error.
func (c *slowConn) ReadFrom(b []byte) (int, net.Addr, error) {
	select {
	case p := <-c.queue:
		return copy(b, p.b), net.UDPAddrFromAddrPort(p.from), nil
	case <-c.done:
	case <-c.stop:
	}
	select {
	case p := <-c.queue:
		return copy(b, p.b), net.UDPAddrFromAddrPort(p.from), nil
	default:
	}
	select {
	case <-c.done:
		return 0, nil, net.ErrClosed
	default:
		return 0, nil, os.ErrDeadlineExceeded
	}
}

// drain waits, at most wait, until the slow path's server has read every packet queued.
func (c *slowConn) drain(wait time.Duration) {
	deadline := time.Now().Add(wait)
	for len(c.queue) > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

// WriteTo implements net.PacketConn.
func (c *slowConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	return c.out.WriteTo(b, addr)
}

// Close implements net.PacketConn; it ends the reads.
func (c *slowConn) Close() error {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if !c.closed {
		c.closed = true
		close(c.done)
	}
	return nil
}

// LocalAddr implements net.PacketConn.
func (c *slowConn) LocalAddr() net.Addr { return c.out.LocalAddr() }

// SetDeadline implements net.PacketConn, as SetReadDeadline.
func (c *slowConn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

// SetReadDeadline implements net.PacketConn. Only a deadline in the past counts, which is how a
// DNS server's Shutdown ends its reads: they return what is queued, then time out, for good.
// Other deadlines are ignored: the server reading the slow path sets none.
func (c *slowConn) SetReadDeadline(t time.Time) error {
	if !t.IsZero() && !t.After(time.Now()) {
		c.stopOnce.Do(func() { close(c.stop) })
	}
	return nil
}

// SetWriteDeadline implements net.PacketConn. It does nothing: a write of the socket waits
// at most sockTimeout for room in its send buffer.
func (c *slowConn) SetWriteDeadline(time.Time) error { return nil }
