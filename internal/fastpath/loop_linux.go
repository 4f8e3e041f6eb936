package fastpath

import (
	"encoding/binary"
	"net/netip"
	"runtime"
	"time"
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

// yieldEvery is how often a loop yields its processor while it serves (see run): often
// enough that the runtime never finds it 10 ms on one scheduling.
const yieldEvery = 5 * time.Millisecond

// yield is how a loop yields its processor (a variable for the tests only).
var yield = runtime.Gosched

// mmsghdr is the kernel's struct mmsghdr: a message header and the length received or sent.
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   [4]byte
}

// loop is one socket's read-answer-write loop; everything it needs is allocated with it.
type loop struct {
	s    *Server
	sock *sock

	in      [batch][bufSize]byte
	out     [batch][bufSize]byte
	names   [batch]unix.RawSockaddrInet6 // large enough for both families
	iovIn   [batch]unix.Iovec
	iovOut  [batch]unix.Iovec
	msgsIn  [batch]mmsghdr
	msgsOut [batch]mmsghdr
}

// newLoop makes the loop of socket k of s.
func newLoop(s *Server, k *sock) *loop {
	l := &loop{s: s, sock: k}
	for i := range batch {
		l.iovIn[i].Base = &l.in[i][0]
		l.iovIn[i].SetLen(bufSize)
		l.msgsIn[i].hdr.Name = (*byte)(unsafe.Pointer(&l.names[i]))
		l.msgsIn[i].hdr.Iov = &l.iovIn[i]
		l.msgsIn[i].hdr.SetIovlen(1)
		l.msgsOut[i].hdr.Iov = &l.iovOut[i]
		l.msgsOut[i].hdr.SetIovlen(1)
	}
	return l
}

// run serves the socket until its server closes. It blocks in the kernel's recvmmsg, which
// returns with the first packet and whatever else is queued by then (MSG_WAITFORONE); the
// Go runtime keeps the loop's processor for it meanwhile (Serve gives the process one
// processor more per loop), so that the loop goes on at once when the kernel wakes it.
//
// While it serves, the loop yields its processor every yieldEvery. The runtime takes the
// processor of a goroutine that has not been through the scheduler for 10 ms (sysmon's
// forced preemption; in a system call, by handing the processor to another thread), and
// every such take sets sysmon back to waking every 20 us. A busy loop that never yielded
// gave sysmon 4.3% of the process's CPU (a perf profile at max qps, pinned) and moved from
// thread to thread; with the yields, sysmon takes 0.25% and the yields 0.9%.
func (l *loop) run() {
	yielded := time.Now()
	for {
		for i := range batch {
			l.msgsIn[i].hdr.Namelen = unix.SizeofSockaddrInet6
			l.msgsIn[i].hdr.Flags = 0
		}
		n, _, e := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(l.sock.fd), uintptr(unsafe.Pointer(&l.msgsIn[0])), batch, unix.MSG_WAITFORONE, 0, 0)
		// Not e: the timeout (EAGAIN), a signal, or a transient error (an ICMP error's
		// ECONNREFUSED). What was received is answered even once the server is closed: Close
		// saw the socket's queue empty because this receive had taken it.
		if e == 0 && n > 0 {
			l.sock.received.Add(uint64(n))
			l.serve(int(n))
			if time.Since(yielded) >= yieldEvery {
				yield()
				yielded = time.Now()
			}
		}
		if l.s.closed.Load() {
			return
		}
	}
}

// serve answers the n packets received: the fast ones into the out buffers, sent together;
// the others handed to the slow path.
func (l *loop) serve(n int) {
	h, counts := l.s.handler, l.s.counts
	k := 0
	for i := range n {
		m := &l.msgsIn[i]
		if m.len == 0 && l.s.closed.Load() {
			continue // the end of a socket whose reading side Close shut: not a datagram
		}
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
		resp, fast := h.Fast(l.out[k][:0], pkt, src.Addr(), false)
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
	for sent := 0; sent < k; {
		done, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(l.sock.fd), uintptr(unsafe.Pointer(&l.msgsOut[sent])), uintptr(k-sent), 0, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 || done == 0 {
			return // the send buffer stayed full past the timeout, or an error: the clients retry
		}
		sent += int(done)
	}
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
