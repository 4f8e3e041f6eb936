package fastpath

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The sizes of a loop's batches and buffers: a query longer than bufSize is dropped (real
// queries are a few dozen bytes; EDNS lets a client send up to 64 KiB, which no resolver does),
// and a response the fast path composes never exceeds 1232 bytes.
const (
	batch   = 32
	bufSize = 4096
)

// mmsghdr is the kernel's struct mmsghdr: a message header and the length received or sent.
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   [4]byte
}

// loop is one socket's read-answer-write loop; everything it needs is allocated with it.
type loop struct {
	s    *Server
	conn *net.UDPConn
	rc   syscall.RawConn

	in      [batch][bufSize]byte
	out     [batch][bufSize]byte
	names   [batch]unix.RawSockaddrInet6 // large enough for both families
	iovIn   [batch]unix.Iovec
	iovOut  [batch]unix.Iovec
	msgsIn  [batch]mmsghdr
	msgsOut [batch]mmsghdr

	// received and sent are the counts of the last system calls; errno their error.
	received, toSend, sent int
	errno                  syscall.Errno
	// recv and send are the poller callbacks, made once so that a round allocates nothing.
	recv, send func(fd uintptr) bool
}

func newLoop(s *Server, c *net.UDPConn) (*loop, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	l := &loop{s: s, conn: c, rc: rc}
	for i := range batch {
		l.iovIn[i].Base = &l.in[i][0]
		l.iovIn[i].SetLen(bufSize)
		l.msgsIn[i].hdr.Name = (*byte)(unsafe.Pointer(&l.names[i]))
		l.msgsIn[i].hdr.Iov = &l.iovIn[i]
		l.msgsIn[i].hdr.SetIovlen(1)
		l.msgsOut[i].hdr.Iov = &l.iovOut[i]
		l.msgsOut[i].hdr.SetIovlen(1)
	}
	l.recv = l.recvmmsg
	l.send = l.sendmmsg
	return l, nil
}

// run serves the socket until it is closed.
func (l *loop) run() {
	for {
		for i := range batch {
			l.msgsIn[i].hdr.Namelen = unix.SizeofSockaddrInet6
			l.msgsIn[i].hdr.Flags = 0
		}
		l.errno = 0
		if err := l.rc.Read(l.recv); err != nil || l.errno != 0 {
			if l.s.closed.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			continue // a transient error of one receive (ECONNREFUSED from an ICMP error)
		}
		l.serve()
	}
}

// recvmmsg receives a batch without blocking; it reports false to wait until the socket is
// readable.
func (l *loop) recvmmsg(fd uintptr) bool {
	n, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&l.msgsIn[0])), batch, unix.MSG_DONTWAIT, 0, 0)
	if e == unix.EAGAIN || e == unix.EINTR {
		return false
	}
	l.received, l.errno = int(n), e
	return true
}

// serve answers the batch received: the fast ones into the out buffers, sent together; the
// others handed to the slow path.
func (l *loop) serve() {
	h, counts := l.s.handler, l.s.counts
	k := 0
	for i := 0; i < l.received; i++ {
		m := &l.msgsIn[i]
		if m.hdr.Flags&unix.MSG_TRUNC != 0 {
			counts.Dropped.Add(1)
			continue
		}
		src, ok := sockaddr(&l.names[i], m.hdr.Namelen)
		if !ok {
			counts.Dropped.Add(1)
			continue
		}
		pkt := l.in[i][:m.len]
		resp, fast := h.Fast(l.out[k][:0], pkt, src.Addr())
		if !fast || len(resp) == 0 || len(resp) > bufSize || &resp[0] != &l.out[k][0] {
			if l.s.slow.push(pkt, src) {
				counts.Slow.Add(1)
			} else {
				counts.Dropped.Add(1)
			}
			continue
		}
		counts.Fast.Add(1)
		o := &l.msgsOut[k]
		o.hdr.Name, o.hdr.Namelen = m.hdr.Name, m.hdr.Namelen
		l.iovOut[k].Base = &resp[0]
		l.iovOut[k].SetLen(len(resp))
		k++
	}
	for l.sent, l.toSend = 0, k; l.sent < l.toSend; {
		l.errno = 0
		if err := l.rc.Write(l.send); err != nil || l.errno != 0 {
			return // closed, or the rest cannot be sent: the clients retry
		}
	}
}

// sendmmsg sends what is left of the batch without blocking; it reports false to wait until
// the socket is writable.
func (l *loop) sendmmsg(fd uintptr) bool {
	n, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&l.msgsOut[l.sent])), uintptr(l.toSend-l.sent), unix.MSG_DONTWAIT, 0, 0)
	if e == unix.EAGAIN || e == unix.EINTR {
		return false
	}
	if e != 0 {
		l.errno = e
		return true
	}
	l.sent += int(n)
	return true
}

// sockaddr returns the address and port of a received sockaddr of length n.
func sockaddr(sa *unix.RawSockaddrInet6, n uint32) (netip.AddrPort, bool) {
	switch sa.Family {
	case unix.AF_INET:
		if n < unix.SizeofSockaddrInet4 {
			return netip.AddrPort{}, false
		}
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), port(sa4.Port)), true
	case unix.AF_INET6:
		if n < unix.SizeofSockaddrInet6 {
			return netip.AddrPort{}, false
		}
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), port(sa.Port)), true
	}
	return netip.AddrPort{}, false
}

// port converts a port in network byte order, as the kernel stores it, to a number.
func port(p uint16) uint16 {
	var b [2]byte
	*(*uint16)(unsafe.Pointer(&b[0])) = p
	return binary.BigEndian.Uint16(b[:])
}
