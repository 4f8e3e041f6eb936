//go:build linux

package health

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"syscall"
	"time"
)

// poller runs the network exchanges of plain TCP and HTTP probes on one goroutine with epoll.
// A probe in flight costs a small struct and a socket: no goroutine and no stack. With tens of
// thousands of probes waiting on silent backends at once, stacks were most of the process's
// memory (about 8 KiB per probe). Protocols that need blocking I/O (TLS, gRPC, host names
// resolved per probe) keep running as goroutines.
type poller struct {
	epfd   int
	wake   [2]int // a non-blocking pipe: writing to wake[1] interrupts epoll_wait
	mu     sync.Mutex
	live   []*exchange // by file descriptor (descriptors are small integers)
	queue  timeQueue[*exchange]
	ended  []*exchange // finished outside the loop (start failures), to report from it
	closed bool
	done   chan struct{}
}

// exchangeHandler is the protocol side of an exchange.
type exchangeHandler interface {
	// written is called once the request is written; done ends the exchange with res.
	written() (res Result, done bool)
	// received is called with everything read so far, and eof once the peer closed.
	// keep hands the connection back to the handler (keep-alive) instead of closing it.
	received(in []byte, eof bool) (res Result, done, keep bool)
	// expired is called when the deadline passes, with what was read; timeout is the reason
	// to give when nothing else explains the failure.
	expired(in []byte, timeout string) Result
}

// exchange is one probe in flight.
type exchange struct {
	fd        int
	deadline  time.Time
	timeout   time.Duration
	connected bool
	wrote     bool   // the whole request is written
	out       []byte // still to write
	in        []byte // read so far
	limit     int    // most bytes read before the exchange fails
	handler   exchangeHandler
	finish    func(res Result, keptFD int) // keptFD is -1 unless the handler kept the connection
	result    Result
	keep      bool
	index     int
}

func newPoller() (*poller, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll: %w", err)
	}
	p := &poller{epfd: epfd, done: make(chan struct{})}
	if err := syscall.Pipe2(p.wake[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		syscall.Close(epfd)
		return nil, fmt.Errorf("poller pipe: %w", err)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(p.wake[0])}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, p.wake[0], &ev); err != nil {
		p.closeFDs()
		return nil, fmt.Errorf("epoll: %w", err)
	}
	go p.loop()
	return p, nil
}

// start begins an exchange with addr, on reuseFD when it is a kept-alive connection (>= 0).
// finish is called exactly once, from the poller's goroutine; only after close, from start.
func (p *poller) start(addr netip.AddrPort, reuseFD int, sources []netip.Addr, out []byte, limit int, deadline time.Time, timeout time.Duration, h exchangeHandler, finish func(Result, int)) {
	// The timeout a timeout reason names: the check's, or what is left of it for a retry.
	if rest := time.Until(deadline); rest < timeout-timeout/50 {
		timeout = max(rest.Round(time.Millisecond), time.Millisecond)
	}
	ex := &exchange{fd: reuseFD, deadline: deadline, timeout: timeout, out: out, limit: limit, handler: h, finish: finish, connected: reuseFD >= 0, index: -1}
	if ex.fd < 0 {
		fd, err := dialNonBlocking(addr, sources)
		if err != nil {
			ex.fd, ex.result = -1, Result{Reason: err.Error()}
			p.endEarly(ex)
			return
		}
		ex.fd = fd
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		// The loop is gone. Only a stopping manager starts probes now, and its finish
		// takes no lock, so reporting from here is safe.
		syscall.Close(ex.fd)
		defer finish(Fail("health checks stopped"), -1)
		return
	}
	// Edge-triggered, for writing and reading at once: one epoll_ctl per probe.
	ev := syscall.EpollEvent{Events: syscall.EPOLLOUT | syscall.EPOLLIN | syscall.EPOLLRDHUP | epollET, Fd: int32(ex.fd)}
	if err := syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, ex.fd, &ev); err != nil {
		syscall.Close(ex.fd)
		ex.fd, ex.result = -1, Fail("epoll: %v", err)
		p.ended = append(p.ended, ex)
		p.poke()
		return
	}
	if ex.fd >= len(p.live) {
		p.live = append(p.live, make([]*exchange, ex.fd+1-len(p.live))...)
	}
	p.live[ex.fd] = ex
	p.queue.push(ex)
	if p.queue.first() == ex {
		p.poke() // the loop may be sleeping past this deadline
	}
}

func (p *poller) endEarly(ex *exchange) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		ex.finish(ex.result, -1) // see start: only a stopping manager gets here
		return
	}
	defer p.mu.Unlock()
	p.ended = append(p.ended, ex)
	p.poke()
}

// dialNonBlocking opens a non-blocking socket, binds it to the source of its family among
// sources (probe_source) if there is one, and starts connecting it to addr.
func dialNonBlocking(addr netip.AddrPort, sources []netip.Addr) (int, error) {
	family := syscall.AF_INET6
	var sa syscall.Sockaddr = &syscall.SockaddrInet6{Port: int(addr.Port()), Addr: addr.Addr().As16()}
	if addr.Addr().Is4() {
		family = syscall.AF_INET
		sa = &syscall.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()}
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	// Close with a reset, as load balancers' health checkers do: no FIN exchange and no
	// TIME_WAIT socket left behind for every probe (3,000 a second at 30,000 checks).
	_ = syscall.SetsockoptLinger(fd, syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1, Linger: 0})
	if src := sourceSockaddr(sources, family == syscall.AF_INET6); src != nil {
		if err := syscall.Bind(fd, src); err != nil {
			syscall.Close(fd)
			return -1, fmt.Errorf("connect: bind: %w", err)
		}
	}
	if err := syscall.Connect(fd, sa); err != nil && !errors.Is(err, syscall.EINPROGRESS) {
		syscall.Close(fd)
		return -1, fmt.Errorf("connect: %w", err)
	}
	return fd, nil
}

// exchange returns the exchange on descriptor fd, or nil.
func (p *poller) exchange(fd int) *exchange {
	if fd < 0 || fd >= len(p.live) {
		return nil
	}
	return p.live[fd]
}

// alive reports whether a kept-alive connection is still open: no EOF, error or stray data.
func alive(fd int) bool {
	var b [1]byte
	n, _, err := syscall.Recvfrom(fd, b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return n < 0 && errors.Is(err, syscall.EAGAIN)
}

// closeFD closes a kept-alive connection's descriptor.
func closeFD(fd int) { syscall.Close(fd) }

func (p *poller) poke() {
	_, _ = syscall.Write(p.wake[1], []byte{0})
}

// loop waits for socket events and deadlines and drives every exchange.
func (p *poller) loop() {
	defer close(p.done)
	events := make([]syscall.EpollEvent, 512)
	var finished []*exchange
	for {
		p.mu.Lock()
		wait := -1
		if len(p.queue) > 0 {
			// Deadlines are checked in 10 ms steps: a probe may time out up to 10 ms late,
			// and thousands of deadlines a second cost a hundred wake-ups.
			const step = 10
			wait = max((int(time.Until(p.queue.first().deadline)/time.Millisecond)/step+1)*step, 0)
		}
		closed := p.closed
		p.mu.Unlock()
		if closed {
			return
		}
		n, err := syscall.EpollWait(p.epfd, events, wait)
		if err != nil && !errors.Is(err, syscall.EINTR) {
			return
		}
		p.mu.Lock()
		for _, ev := range events[:max(n, 0)] {
			fd := int(ev.Fd)
			if fd == p.wake[0] {
				var drain [64]byte
				for {
					if k, _ := syscall.Read(fd, drain[:]); k <= 0 {
						break
					}
				}
				continue
			}
			if ex := p.exchange(fd); ex != nil && p.handle(ex, ev.Events) {
				finished = append(finished, p.retire(ex))
			}
		}
		now := time.Now()
		for len(p.queue) > 0 && !p.queue.first().deadline.After(now) {
			ex := p.queue.first()
			ex.result = ex.handler.expired(ex.in, connTimeoutReason(ex.timeout))
			ex.keep = false
			finished = append(finished, p.retire(ex))
		}
		finished = append(finished, p.ended...)
		p.ended = p.ended[:0]
		p.mu.Unlock()
		for i, ex := range finished {
			kept := -1
			if ex.keep {
				kept = ex.fd
			}
			ex.finish(ex.result, kept)
			finished[i] = nil
		}
		finished = finished[:0]
	}
}

// handle advances ex on socket events and reports whether it is finished. Events are
// edge-triggered: everything an event allows is done now, reads until EAGAIN.
func (p *poller) handle(ex *exchange, events uint32) bool {
	const readable = syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLHUP | syscall.EPOLLERR
	if !ex.connected {
		if events&(syscall.EPOLLERR|syscall.EPOLLHUP) != 0 {
			errno, err := syscall.GetsockoptInt(ex.fd, syscall.SOL_SOCKET, syscall.SO_ERROR)
			if err == nil {
				err = syscall.Errno(errno)
			}
			ex.result = Fail("connect: %v", err)
			return true
		}
		if events&syscall.EPOLLOUT == 0 {
			return false
		}
		ex.connected = true
	}
	if !ex.wrote && events&syscall.EPOLLOUT != 0 {
		if len(ex.out) > 0 {
			k, err := syscall.Write(ex.fd, ex.out)
			if err != nil && !errors.Is(err, syscall.EAGAIN) {
				ex.result = Fail("write: %v", err)
				return true
			}
			ex.out = ex.out[max(k, 0):]
		}
		if len(ex.out) == 0 {
			ex.wrote = true
			if res, done := ex.handler.written(); done {
				ex.result = res
				return true
			}
		}
	}
	if events&readable == 0 {
		return false
	}
	eof := false
	for {
		if len(ex.in) == cap(ex.in) {
			ex.in = append(ex.in, make([]byte, min(max(cap(ex.in), 512), ex.limit+1-len(ex.in)))...)[:len(ex.in)]
		}
		k, err := syscall.Read(ex.fd, ex.in[len(ex.in):cap(ex.in)])
		if errors.Is(err, syscall.EAGAIN) {
			break
		}
		if err != nil {
			if len(ex.in) == 0 {
				ex.result = Fail("read: %v", err)
				return true
			}
			eof = true
			break
		}
		if k == 0 {
			eof = true
			break
		}
		ex.in = ex.in[:len(ex.in)+k]
		if len(ex.in) > ex.limit {
			break
		}
	}
	res, done, keep := ex.handler.received(ex.in, eof)
	switch {
	case done:
		ex.result, ex.keep = res, keep && !eof
	case eof || len(ex.in) > ex.limit:
		ex.result, done = Fail("connection closed"), true
		if !eof {
			ex.result = Fail("response larger than %d bytes", ex.limit)
		}
	}
	return done
}

// retire removes ex from the poller; its socket is closed unless the handler keeps it.
func (p *poller) retire(ex *exchange) *exchange {
	p.live[ex.fd] = nil
	p.queue.remove(ex.index)
	if ex.keep {
		_ = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, ex.fd, nil)
	} else {
		syscall.Close(ex.fd) // closing also leaves the epoll set
	}
	return ex
}

// close stops the loop and finishes every exchange in flight with a failure.
func (p *poller) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.poke()
	p.mu.Unlock()
	<-p.done
	p.mu.Lock()
	var finished []*exchange
	for _, ex := range p.live {
		if ex == nil {
			continue
		}
		ex.result, ex.keep = Fail("health checks stopped"), false
		finished = append(finished, p.retire(ex))
	}
	finished = append(finished, p.ended...)
	p.ended = nil
	p.closeFDs()
	p.mu.Unlock()
	for _, ex := range finished {
		ex.finish(ex.result, -1)
	}
}

func (p *poller) closeFDs() {
	syscall.Close(p.wake[0])
	syscall.Close(p.wake[1])
	syscall.Close(p.epfd)
}

// epollET is EPOLLET as the unsigned event mask (the syscall package declares it negative).
const epollET = 1 << 31

func (ex *exchange) due() time.Time { return ex.deadline }
func (ex *exchange) setIndex(i int) { ex.index = i }
