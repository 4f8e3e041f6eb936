package fastpath

import (
	"io"
	"net"
	"sync"
	"time"
)

// The TCP slow path: a query of a TCP connection that the loop does not answer goes to
// CoreDNS's server as a connection of its own, which slowListener hands out and which carries
// that one query (then the end of the stream); what the server writes on it goes back to the
// loop, which writes it on the client's connection. So the server serves it exactly as a
// query of its own listener (TSIG, every plugin, the same framing), and the client's
// connection stays the loop's alone: its writes, its limits, its accounting.

// slowListener is the net.Listener of the TCP slow path.
type slowListener struct {
	addr      net.Addr
	queue     chan *slowTCPConn
	done      chan struct{}
	closeOnce sync.Once
}

func newSlowListener(addr net.Addr) *slowListener {
	return &slowListener{addr: addr, queue: make(chan *slowTCPConn, slowQueue), done: make(chan struct{})}
}

// push queues c; it reports false when the queue is full or the listener closed.
func (l *slowListener) push(c *slowTCPConn) bool {
	select {
	case <-l.done:
		return false
	default:
	}
	select {
	case l.queue <- c:
		return true
	default:
		return false
	}
}

// Accept implements net.Listener: the next query the loops handed over.
func (l *slowListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.queue:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.
func (l *slowListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return nil
}

// Addr implements net.Listener.
func (l *slowListener) Addr() net.Addr { return l.addr }

// slowTCPConn is one query of a client's connection, as a net.Conn of its own: its reads give
// the query with its length prefix, then io.EOF; its writes go to reply, and Close calls done
// (once), whether the server answered or not.
type slowTCPConn struct {
	query         []byte
	local, remote net.Addr
	reply         func([]byte)
	done          func()
	closeOnce     sync.Once
}

// Read implements net.Conn.
func (c *slowTCPConn) Read(b []byte) (int, error) {
	if len(c.query) == 0 {
		return 0, io.EOF
	}
	n := copy(b, c.query)
	c.query = c.query[n:]
	return n, nil
}

// Write implements net.Conn: b is one reply with its length prefix (miekg/dns writes each
// message whole).
func (c *slowTCPConn) Write(b []byte) (int, error) {
	c.reply(append([]byte(nil), b...))
	return len(b), nil
}

// Close implements net.Conn.
func (c *slowTCPConn) Close() error {
	c.closeOnce.Do(c.done)
	return nil
}

// LocalAddr implements net.Conn.
func (c *slowTCPConn) LocalAddr() net.Addr { return c.local }

// RemoteAddr implements net.Conn: the client's address (a *net.TCPAddr).
func (c *slowTCPConn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline implements net.Conn. The query is read from memory: there is nothing to wait for.
func (c *slowTCPConn) SetDeadline(time.Time) error { return nil }

// SetReadDeadline implements net.Conn, as SetDeadline.
func (c *slowTCPConn) SetReadDeadline(time.Time) error { return nil }

// SetWriteDeadline implements net.Conn, as SetDeadline.
func (c *slowTCPConn) SetWriteDeadline(time.Time) error { return nil }
