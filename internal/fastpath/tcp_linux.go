package fastpath

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The TCP loops: each owns one listener of the address's TCP group and the connections it
// accepts, in an epoll set of its own, waited on in the kernel as the UDP loops wait in
// recvmmsg. A readable connection is read once into the loop's buffer, every whole query in it
// answered (the fast ones in place, into one write, the others handed to the slow path), and
// what is left of a query kept for the next read. Everything about a connection — its
// buffers, its timeouts, its count of queries in the slow path, its closing — is in tcpConn and
// the loop's methods on it: the one place where per-connection limits and per-client
// accounting belong.

// The sizes of a TCP loop's buffers: a read takes up to tcpReadSize bytes, after the start of
// a query the last read left (at most a whole message and its prefix); answers are written
// once tcpWriteSize bytes of them are ready, and at the end of each read.
const (
	tcpReadSize  = 64 << 10
	tcpWriteSize = 32 << 10
	tcpBacklog   = 1024
	// sweepEvery is how often a loop looks for connections past their timeouts.
	sweepEvery = 250 * time.Millisecond
)

// The epoll data of what is not a connection: the listener, and the eventfd that wakes the loop.
const (
	slotListener = -1
	slotWake     = -2
)

// tcpConn is one client connection of a loop.
type tcpConn struct {
	fd     int
	slot   int32
	remote netip.AddrPort
	// partial is the start of a query that the last read cut; pending is what the socket did
	// not take of the answers (the loop reads no more until it has).
	partial, pending []byte
	// deadline is when the connection is closed if no query comes (ReadTimeout for the first,
	// IdleTimeout after); writeDeadline when it is if pending is still not sent.
	deadline, writeDeadline time.Time
	// queries counts the whole queries read; inflight those in the slow path.
	queries, inflight int
	// eof is set when the client closed its side, or the loop stops reading; closed when the
	// loop closed the connection (the slow path's late replies are dropped).
	eof, closed bool
}

// tcpReply is a reply of the slow path to a query of c (nil with done: the query is over).
type tcpReply struct {
	c    *tcpConn
	b    []byte
	done bool
}

// tcpLoop is one TCP listener's loop.
type tcpLoop struct {
	s      *Server
	ln     *sock
	ep     int
	wakeFD int
	conns  []*tcpConn // by slot; nil for a free one
	free   []int32
	events [batch]unix.EpollEvent
	in     []byte
	out    []byte

	mu      sync.Mutex // guards replies, which the slow path adds to
	replies []tcpReply
	spare   []tcpReply
}

// bindListener opens a non-blocking TCP listener on ap in its SO_REUSEPORT group.
func bindListener(ap netip.AddrPort) (*sock, error) {
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	family, sa := unix.AF_INET6, toSockaddr(ap, false)
	if ap.Addr().Is4() {
		family, sa = unix.AF_INET, toSockaddr(ap, true)
	} else if zone := ap.Addr().Zone(); zone != "" {
		ifi, err := net.InterfaceByName(zone)
		if err != nil {
			return nil, err
		}
		sa.(*unix.SockaddrInet6).ZoneId = uint32(ifi.Index)
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	for _, o := range []struct {
		name string
		set  func() error
	}{
		{"SO_REUSEADDR", func() error { return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1) }},
		{"SO_REUSEPORT", func() error { return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1) }},
		{"bind", func() error { return unix.Bind(fd, sa) }},
		{"listen", func() error { return unix.Listen(fd, tcpBacklog) }},
	} {
		if err := o.set(); err != nil {
			unix.Close(fd)
			return nil, os.NewSyscallError(o.name, err)
		}
	}
	return &sock{fd: fd, local: ap}, nil
}

// newTCPLoop makes the loop of listener ln of s: its epoll set, holding the listener and an
// eventfd that wakes it.
func newTCPLoop(s *Server, ln *sock) (*tcpLoop, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(ep)
		return nil, os.NewSyscallError("eventfd", err)
	}
	l := &tcpLoop{s: s, ln: ln, ep: ep, wakeFD: wake, in: make([]byte, 2+0xffff+tcpReadSize), out: make([]byte, 0, tcpWriteSize+2+0xffff)}
	for _, fd := range []struct {
		fd   int
		slot int32
	}{{ln.fd, slotListener}, {wake, slotWake}} {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: fd.slot}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd.fd, &ev); err != nil {
			unix.Close(ep)
			unix.Close(wake)
			return nil, os.NewSyscallError("epoll_ctl", err)
		}
	}
	return l, nil
}

// wake makes the loop's wait return.
func (l *tcpLoop) wake() {
	var one [8]byte
	*(*uint64)(unsafe.Pointer(&one[0])) = 1
	_, _ = unix.Write(l.wakeFD, one[:])
}

// run serves the listener and its connections until the server closes, then answers what its
// connections hold (closeAll) and returns.
func (l *tcpLoop) run() {
	defer unix.Close(l.ep)
	defer unix.Close(l.wakeFD)
	yielded, swept := time.Now(), time.Now()
	for {
		n, err := unix.EpollWait(l.ep, l.events[:], int(sweepEvery/time.Millisecond))
		if err != nil && !errors.Is(err, unix.EINTR) {
			n = 0
		}
		now := time.Now()
		for i := range max(n, 0) {
			ev := &l.events[i]
			switch ev.Fd {
			case slotListener:
				l.accept(now)
			case slotWake:
				l.takeReplies(now)
			default:
				c := l.conns[ev.Fd]
				if c == nil {
					continue
				}
				if ev.Events&unix.EPOLLOUT != 0 {
					l.flush(c, now)
				}
				if !c.closed && ev.Events&(unix.EPOLLIN|unix.EPOLLHUP|unix.EPOLLERR) != 0 && len(c.pending) == 0 {
					l.read(c, now)
				}
			}
		}
		if l.s.closed.Load() {
			l.closeAll()
			return
		}
		if now.Sub(swept) >= sweepEvery {
			l.sweep(now)
			swept = now
		}
		if n > 0 && now.Sub(yielded) >= yieldEvery {
			yield()
			yielded = time.Now()
		}
	}
}

// accept accepts what the listener's queue holds.
func (l *tcpLoop) accept(now time.Time) {
	for {
		fd, sa, err := unix.Accept4(l.ln.fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err != nil {
			return // EAGAIN: none left; or a connection reset while queued
		}
		l.ln.received.Add(1)
		remote, ok := addrPortOf(sa)
		if !ok || l.open() >= l.s.tcp.MaxConns {
			l.s.counts.TCPRefused.Add(1)
			unix.Close(fd)
			continue
		}
		// Answers are written whole, often several in one write: Nagle's wait for the
		// client's acknowledgement would only delay them.
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		c := &tcpConn{fd: fd, remote: remote, deadline: now.Add(l.s.tcp.ReadTimeout)}
		if n := len(l.free); n > 0 {
			c.slot, l.free = l.free[n-1], l.free[:n-1]
			l.conns[c.slot] = c
		} else {
			c.slot = int32(len(l.conns))
			l.conns = append(l.conns, c)
		}
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: c.slot}
		if unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, fd, &ev) != nil {
			l.close(c)
			continue
		}
		l.s.counts.TCPConns.Add(1)
	}
}

// open returns the count of the loop's open connections.
func (l *tcpLoop) open() int { return len(l.conns) - len(l.free) }

// read reads what c holds and answers every whole query in it.
func (l *tcpLoop) read(c *tcpConn, now time.Time) {
	n := copy(l.in, c.partial)
	r, err := unix.Read(c.fd, l.in[n:n+tcpReadSize])
	if l.failed(c, err) {
		return
	}
	if r == 0 {
		l.stopReading(c)
		return
	}
	data := l.in[:n+r]
	out := l.out[:0]
	h, counts, src := l.s.handler, l.s.counts, c.remote.Addr()
	for len(data) >= 2 {
		size := int(binary.BigEndian.Uint16(data))
		if len(data) < 2+size {
			break
		}
		pkt := data[2 : 2+size]
		data = data[2+size:]
		c.queries++
		start := len(out)
		resp, fast := h.Fast(append(out, 0, 0), pkt, src, true)
		if fast && len(resp)-start-2 <= 0xffff && len(resp) > start+2 {
			binary.BigEndian.PutUint16(resp[start:], uint16(len(resp)-start-2))
			out = resp
			counts.TCPFast.Add(1)
		} else {
			l.slow(c, pkt)
		}
		if len(out) >= tcpWriteSize {
			l.write(c, out, now)
			out = out[:0]
			if c.closed {
				return
			}
		}
	}
	if cap(out) > cap(l.out) {
		l.out = out[:0] // a handler that grew it: keep the larger buffer
	}
	c.partial = append(c.partial[:0], data...)
	if len(c.partial) == 0 && cap(c.partial) > tcpReadSize {
		c.partial = nil // a large query's buffer is not kept
	}
	c.deadline = now.Add(l.s.tcp.IdleTimeout)
	if len(out) > 0 {
		l.write(c, out, now)
	}
}

// failed reports whether a read or write of c that returned err leaves the caller nothing to
// do: none was possible now (EAGAIN, EINTR), or an error, which closes c.
func (l *tcpLoop) failed(c *tcpConn, err error) bool {
	if err == nil {
		return false
	}
	if err != unix.EAGAIN && err != unix.EINTR {
		l.close(c)
	}
	return true
}

// slow hands the query pkt of c to the slow path, as a connection of its own.
func (l *tcpLoop) slow(c *tcpConn, pkt []byte) {
	q := make([]byte, 2+len(pkt))
	binary.BigEndian.PutUint16(q, uint16(len(pkt)))
	copy(q[2:], pkt)
	sc := &slowTCPConn{
		query:  q,
		local:  l.s.tcpSlow.addr,
		remote: net.TCPAddrFromAddrPort(c.remote),
		reply:  func(b []byte) { l.deliver(tcpReply{c: c, b: b}) },
		done:   func() { l.deliver(tcpReply{c: c, done: true}) },
	}
	if !l.s.tcpSlow.push(sc) {
		l.s.counts.TCPDropped.Add(1)
		return
	}
	c.inflight++
	l.s.counts.TCPSlow.Add(1)
}

// deliver hands the loop a reply of the slow path (from its goroutine) and wakes it.
func (l *tcpLoop) deliver(r tcpReply) {
	l.mu.Lock()
	l.replies = append(l.replies, r)
	l.mu.Unlock()
	l.wake()
}

// takeReplies writes the slow path's replies on their connections.
func (l *tcpLoop) takeReplies(now time.Time) {
	var buf [8]byte
	_, _ = unix.Read(l.wakeFD, buf[:])
	l.mu.Lock()
	replies := l.replies
	l.replies = l.spare[:0]
	l.mu.Unlock()
	for i, r := range replies {
		c := r.c
		replies[i] = tcpReply{}
		if c.closed {
			continue
		}
		if r.b != nil {
			l.write(c, r.b, now)
		}
		if r.done {
			c.inflight--
			l.closeIfDone(c)
		}
	}
	l.spare = replies[:0]
}

// write writes b on c, keeping what the socket does not take in c.pending: c is then read no
// more until it is sent (flush).
func (l *tcpLoop) write(c *tcpConn, b []byte, now time.Time) {
	if c.closed {
		return
	}
	if len(c.pending) > 0 {
		c.pending = append(c.pending, b...)
		return
	}
	n, err := unix.Write(c.fd, b)
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		n = 0
	case err != nil:
		l.close(c)
		return
	}
	if n == len(b) {
		return
	}
	c.pending = append(c.pending[:0], b[n:]...)
	c.writeDeadline = now.Add(l.s.tcp.WriteTimeout)
	l.watch(c, unix.EPOLLOUT)
}

// flush writes what c's socket did not take; once it has, c is read again.
func (l *tcpLoop) flush(c *tcpConn, now time.Time) {
	n, err := unix.Write(c.fd, c.pending)
	if l.failed(c, err) {
		return
	}
	if c.pending = c.pending[:copy(c.pending, c.pending[n:])]; len(c.pending) > 0 {
		c.writeDeadline = now.Add(l.s.tcp.WriteTimeout)
		return
	}
	if cap(c.pending) > tcpWriteSize {
		c.pending = nil
	}
	if c.eof {
		l.closeIfDone(c)
		if !c.closed {
			l.watch(c, 0)
		}
		return
	}
	l.watch(c, unix.EPOLLIN|unix.EPOLLRDHUP)
}

// watch sets the events the loop waits for on c.
func (l *tcpLoop) watch(c *tcpConn, events uint32) {
	ev := unix.EpollEvent{Events: events, Fd: c.slot}
	if unix.EpollCtl(l.ep, unix.EPOLL_CTL_MOD, c.fd, &ev) != nil {
		l.close(c)
	}
}

// stopReading stops reading c (its client closed its side, or the server is closing): it is
// closed once its queries in the slow path are answered and its answers sent.
func (l *tcpLoop) stopReading(c *tcpConn) {
	c.eof = true
	if l.closeIfDone(c); !c.closed && len(c.pending) == 0 {
		l.watch(c, 0)
	}
}

// closeIfDone closes c once it has been read to its end and nothing of it is left to answer.
func (l *tcpLoop) closeIfDone(c *tcpConn) {
	if c.eof && c.inflight == 0 && len(c.pending) == 0 && !c.closed {
		l.close(c)
	}
}

// close closes c and frees its slot.
func (l *tcpLoop) close(c *tcpConn) {
	if c.closed {
		return
	}
	c.closed = true
	_ = unix.EpollCtl(l.ep, unix.EPOLL_CTL_DEL, c.fd, nil)
	unix.Close(c.fd)
	l.conns[c.slot] = nil
	l.free = append(l.free, c.slot)
	c.partial, c.pending = nil, nil
	l.s.counts.TCPConns.Add(-1)
}

// sweep closes the connections past their timeouts: idle (nothing to answer, no query since
// their deadline) or not reading their answers.
func (l *tcpLoop) sweep(now time.Time) {
	for _, c := range l.conns {
		switch {
		case c == nil:
		case len(c.pending) > 0 && now.After(c.writeDeadline):
			l.close(c)
		case len(c.pending) == 0 && c.inflight == 0 && now.After(c.deadline):
			l.close(c)
		}
	}
}

// closeAll ends the loop's service: no more connections are accepted; each connection is read
// once more and the queries it holds answered, the slow path's answers waited for (at most
// drainWait), and every connection closed.
func (l *tcpLoop) closeAll() {
	_ = unix.EpollCtl(l.ep, unix.EPOLL_CTL_DEL, l.ln.fd, nil)
	now := time.Now()
	for _, c := range l.conns {
		if c != nil && !c.eof && len(c.pending) == 0 {
			l.read(c, now)
		}
		if c != nil && !c.closed {
			l.stopReading(c)
		}
	}
	deadline := now.Add(drainWait)
	for l.open() > 0 && time.Now().Before(deadline) {
		n, _ := unix.EpollWait(l.ep, l.events[:], 10)
		now = time.Now()
		for i := range max(n, 0) {
			switch ev := &l.events[i]; ev.Fd {
			case slotWake:
				l.takeReplies(now)
			case slotListener:
			default:
				if c := l.conns[ev.Fd]; c != nil && ev.Events&unix.EPOLLOUT != 0 {
					l.flush(c, now)
				}
			}
		}
	}
	for _, c := range l.conns {
		if c != nil {
			l.close(c)
		}
	}
}

// addrPortOf returns the address and port of an accepted connection's peer.
func addrPortOf(sa unix.Sockaddr) (netip.AddrPort, bool) {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port)), true
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr).Unmap(), uint16(a.Port)), true
	}
	return netip.AddrPort{}, false
}
