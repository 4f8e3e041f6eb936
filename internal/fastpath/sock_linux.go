package fastpath

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// sock is one socket of the address's SO_REUSEPORT group. It is a blocking socket outside Go's
// poller: its loop waits for packets in the kernel's recvmmsg, as a C server's thread does, and
// the kernel wakes that thread when one arrives (through the poller, a packet would wake the
// scheduler first, which then runs the loop: a few microseconds more per wake-up, and as long
// again as the goroutine the processor is running keeps it).
type sock struct {
	fd    int
	local netip.AddrPort
	// received counts the datagrams its loop received: Close's drain watches it to see that
	// no more reach the socket. Only the loop writes it, once a batch.
	received atomic.Uint64
}

// rcvBuf is the receive buffer each socket asks for: about 900 queries (the kernel counts a
// query's whole buffer, about 1.1 KiB on loopback), several milliseconds of a loop's work,
// which hold a burst while the loop is off its CPU. The kernel's default (212,992 bytes)
// holds about 190: a client keeping 200 queries outstanding at one socket loses some.
const rcvBuf = 1 << 20

// setRcvBuf gives fd's socket a receive buffer of rcvBuf bytes: beyond net.core.rmem_max if
// the process may (CAP_NET_ADMIN), else as much of it as that allows. It never fails: a
// smaller buffer only drops more of a burst.
func setRcvBuf(fd int) {
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvBuf) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvBuf)
	}
}

// bindSock opens a blocking UDP socket on ap in its SO_REUSEPORT group, with a receive buffer
// of rcvBuf bytes (setRcvBuf).
func bindSock(ap netip.AddrPort) (*sock, error) {
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()) // as Go's net binds it, beside CoreDNS's
	family, sa := unix.AF_INET6, toSockaddr(ap, false)
	if ap.Addr().Is4() {
		family, sa = unix.AF_INET, toSockaddr(ap, true)
	} else if zone := ap.Addr().Zone(); zone != "" { // a link-local address's interface
		ifi, err := net.InterfaceByName(zone)
		if err != nil {
			return nil, fmt.Errorf("the zone of %s: %w", ap, err)
		}
		sa.(*unix.SockaddrInet6).ZoneId = uint32(ifi.Index)
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	setRcvBuf(fd)
	tv := unix.NsecToTimeval(sockTimeout.Nanoseconds())
	for _, o := range []struct {
		name string
		set  func() error
	}{
		{"SO_REUSEPORT", func() error { return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1) }},
		{"SO_RCVTIMEO", func() error { return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv) }},
		{"SO_SNDTIMEO", func() error { return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv) }},
		{"bind", func() error { return unix.Bind(fd, sa) }},
	} {
		if err := o.set(); err != nil {
			unix.Close(fd)
			return nil, os.NewSyscallError(o.name, err)
		}
	}
	return &sock{fd: fd, local: ap}, nil
}

// toSockaddr returns ap as the address of a socket of IPv4 (v4) or IPv6, nil for an IPv6
// address and an IPv4 socket.
func toSockaddr(ap netip.AddrPort, v4 bool) unix.Sockaddr {
	a := ap.Addr().Unmap()
	switch {
	case !v4:
		return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	case a.Is4():
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: a.As4()}
	}
	return nil
}

// wake makes the loop blocked in the socket's receive return: a receive after a shutdown of
// the socket's reading side returns at once (the kernel returns what is queued first).
func (k *sock) wake() {
	_ = unix.Shutdown(k.fd, unix.SHUT_RD) // an unconnected socket says ENOTCONN, and wakes anyway
}

// close closes the socket: it leaves the group.
func (k *sock) close() error {
	return os.NewSyscallError("close", unix.Close(k.fd))
}

// queued reports whether a datagram waits in the socket's receive queue.
func (k *sock) queued() bool {
	n, err := unix.IoctlGetInt(k.fd, unix.SIOCINQ)
	return err == nil && n > 0
}

// WriteTo sends b to addr, a *net.UDPAddr, from the socket (the slow path's replies).
func (k *sock) WriteTo(b []byte, addr net.Addr) (int, error) {
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		return 0, fmt.Errorf("fastpath: write to %v: not a UDP address", addr)
	}
	sa := toSockaddr(ua.AddrPort(), k.local.Addr().Is4())
	if sa == nil {
		return 0, fmt.Errorf("fastpath: write to %v from %v: %w", addr, k.local, errors.ErrUnsupported)
	}
	if err := unix.Sendto(k.fd, b, 0, sa); err != nil {
		return 0, &net.OpError{Op: "write", Net: "udp", Source: k.LocalAddr(), Addr: addr, Err: os.NewSyscallError("sendto", err)}
	}
	return len(b), nil
}

// LocalAddr returns the address the socket is bound to.
func (k *sock) LocalAddr() net.Addr { return net.UDPAddrFromAddrPort(k.local) }
