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
	out     *net.UDPConn
	queue   chan packet
	closeMu sync.RWMutex
	closed  bool
	done    chan struct{}
}

func newSlowConn(out *net.UDPConn) *slowConn {
	return &slowConn{out: out, queue: make(chan packet, slowQueue), done: make(chan struct{})}
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
// a socket's read would.
func (c *slowConn) ReadFrom(b []byte) (int, net.Addr, error) {
	select {
	case p := <-c.queue:
		return copy(b, p.b), net.UDPAddrFromAddrPort(p.from), nil
	case <-c.done:
		return 0, nil, net.ErrClosed
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

// SetDeadline implements net.PacketConn; the slow path's reads have no deadline (the server
// reading them is stopped by Close).
func (c *slowConn) SetDeadline(time.Time) error { return nil }

// SetReadDeadline implements net.PacketConn, as SetDeadline.
func (c *slowConn) SetReadDeadline(time.Time) error { return nil }

// SetWriteDeadline implements net.PacketConn.
func (c *slowConn) SetWriteDeadline(t time.Time) error {
	if err := c.out.SetWriteDeadline(t); err != nil && err != os.ErrNoDeadline {
		return err
	}
	return nil
}
