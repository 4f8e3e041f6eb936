//go:build linux

package probe

import (
	"net/netip"
	"syscall"
	"unsafe"
)

// The poller's system calls. Each of them returns at once: the sockets are non-blocking, a
// close resets the connection (SO_LINGER 0), and epoll is polled with a zero timeout. Made as
// raw system calls they skip the runtime's syscall entry and exit, which at thousands of probes
// a second cost more than the calls: every entry woke the runtime's monitor thread (sysmon) from
// its sleep and set it polling every 20 µs again.

func rawErr(e syscall.Errno) error {
	if e != 0 {
		return e
	}
	return nil
}

func rawSocket(family int) (int, error) {
	fd, _, e := syscall.RawSyscall(syscall.SYS_SOCKET, uintptr(family), syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	return int(fd), rawErr(e)
}

// rawResetOnClose sets SO_LINGER to zero seconds: closing the socket sends a reset.
func rawResetOnClose(fd int) error {
	l := syscall.Linger{Onoff: 1, Linger: 0}
	_, _, e := syscall.RawSyscall6(syscall.SYS_SETSOCKOPT, uintptr(fd), syscall.SOL_SOCKET, syscall.SO_LINGER, uintptr(unsafe.Pointer(&l)), unsafe.Sizeof(l), 0)
	return rawErr(e)
}

// inetSockaddr is room for either kind of internet socket address.
type inetSockaddr struct {
	v4 syscall.RawSockaddrInet4
	v6 syscall.RawSockaddrInet6
}

// set fills in ap and returns the address to pass to the kernel and its length.
func (s *inetSockaddr) set(ap netip.AddrPort) (unsafe.Pointer, uintptr) {
	port := ap.Port()
	if ap.Addr().Is4() {
		s.v4.Family = syscall.AF_INET
		s.v4.Addr = ap.Addr().As4()
		p := (*[2]byte)(unsafe.Pointer(&s.v4.Port))
		p[0], p[1] = byte(port>>8), byte(port)
		return unsafe.Pointer(&s.v4), syscall.SizeofSockaddrInet4
	}
	s.v6.Family = syscall.AF_INET6
	s.v6.Addr = ap.Addr().As16()
	p := (*[2]byte)(unsafe.Pointer(&s.v6.Port))
	p[0], p[1] = byte(port>>8), byte(port)
	return unsafe.Pointer(&s.v6), syscall.SizeofSockaddrInet6
}

func rawBind(fd int, addr netip.Addr) error {
	var sa inetSockaddr
	ptr, n := sa.set(netip.AddrPortFrom(addr, 0))
	_, _, e := syscall.RawSyscall(syscall.SYS_BIND, uintptr(fd), uintptr(ptr), n)
	return rawErr(e)
}

// rawConnect starts connecting fd to ap; on a non-blocking socket it returns EINPROGRESS.
func rawConnect(fd int, ap netip.AddrPort) error {
	var sa inetSockaddr
	ptr, n := sa.set(ap)
	_, _, e := syscall.RawSyscall(syscall.SYS_CONNECT, uintptr(fd), uintptr(ptr), n)
	return rawErr(e)
}

func rawWrite(fd int, b []byte) (int, error) { return rawIO(syscall.SYS_WRITE, fd, b, 0) }

func rawRead(fd int, b []byte) (int, error) { return rawIO(syscall.SYS_READ, fd, b, 0) }

// rawSend writes b to the socket fd without raising SIGPIPE when the peer is gone.
func rawSend(fd int, b []byte) (int, error) {
	return rawIO(syscall.SYS_SENDTO, fd, b, syscall.MSG_NOSIGNAL)
}

// rawIO reads into or writes from b (trap SYS_READ, SYS_WRITE, or SYS_SENDTO with flags); -1
// with the error on failure.
func rawIO(trap uintptr, fd int, b []byte, flags uintptr) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall6(trap, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), flags, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}

// rawPeekOne reads one byte of fd without taking it and without waiting.
func rawPeekOne(fd int) (int, error) {
	var b [1]byte
	n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), 1, syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}

func rawClose(fd int) {
	_, _, _ = syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(fd), 0, 0)
}

func rawEpollCtl(epfd, op, fd int, ev *syscall.EpollEvent) error {
	_, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_CTL, uintptr(epfd), uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(ev)), 0, 0)
	return rawErr(e)
}

// rawEpollPoll returns the events ready now, without waiting.
func rawEpollPoll(epfd int, events []syscall.EpollEvent) (int, error) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// rawSocketError returns the pending error of fd (SO_ERROR), nil for none.
func rawSocketError(fd int) error {
	var v int32
	l := uint32(unsafe.Sizeof(v))
	_, _, e := syscall.RawSyscall6(syscall.SYS_GETSOCKOPT, uintptr(fd), syscall.SOL_SOCKET, syscall.SO_ERROR, uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return e
	}
	return rawErr(syscall.Errno(v))
}
