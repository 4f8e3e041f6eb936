//go:build linux

package probe

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/meridian-gslb/meridian/internal/health/timequeue"
)

// Poller runs the network exchanges of plain TCP and HTTP probes on one goroutine with epoll.
// A probe in flight costs a small struct and a socket: no goroutine and no stack. With tens of
// thousands of probes waiting on silent backends at once, stacks were most of the process's
// memory (about 8 KiB per probe). Protocols that need blocking I/O (TLS, gRPC, host names
// resolved per probe) keep running as goroutines.
//
// The loop never blocks a thread in epoll_wait: the epoll descriptor is itself registered with
// Go's network poller (an epoll set is readable while it has events), and the loop parks like
// any network read, with a read deadline for the next probe timeout. A thread blocked in a raw
// epoll_wait made the runtime hand its processor off at every wait and kept sysmon polling
// every 20 µs: at 30,000 checks, 12-15% of the process's CPU (about 4 points of a core).
type Poller struct {
	epfd   int
	epoll  *os.File        // epfd, registered with the runtime's poller
	raw    syscall.RawConn // epoll's, to wait for events without blocking a thread
	wake   [2]int          // a non-blocking pipe in the epoll set: writing to wake[1] wakes the loop
	mu     sync.Mutex
	live   []*exchange // by file descriptor (descriptors are small integers)
	queue  timequeue.Queue[*exchange]
	ended  []*exchange // finished outside the loop (start failures), to report from it
	free   []*exchange // finished exchanges, for the next ones: thousands start a second
	closed bool
	done   chan struct{}
}

// maxFreeExchanges bounds the finished exchanges the poller keeps for reuse.
const maxFreeExchanges = 4096

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
	// ended is called once the exchange ended, before its result is reported, with the
	// connection received kept (keep-alive), or -1.
	ended(keptFD int)
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
	done      func(Result) // the caller's, called once with the result
	result    Result
	keep      bool
	index     int
}

// NewPoller starts a poller's goroutine; it runs until Close. It fails where epoll is
// unavailable, and then every probe runs on a goroutine of its own.
func NewPoller() (*Poller, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll: %w", err)
	}
	if err := syscall.SetNonblock(epfd, true); err != nil {
		syscall.Close(epfd)
		return nil, fmt.Errorf("epoll: %w", err)
	}
	// A non-blocking descriptor that is not a regular file is registered with the runtime's
	// poller; SetReadDeadline fails if that did not happen.
	epoll := os.NewFile(uintptr(epfd), "health-epoll")
	raw, err := epoll.SyscallConn()
	if err == nil {
		err = epoll.SetReadDeadline(time.Time{})
	}
	if err != nil {
		epoll.Close()
		return nil, fmt.Errorf("epoll in the runtime poller: %w", err)
	}
	p := &Poller{epfd: epfd, epoll: epoll, raw: raw, done: make(chan struct{})}
	if err := syscall.Pipe2(p.wake[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		epoll.Close()
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
// h.ended and then done are called exactly once, from the poller's goroutine; only after
// close, from start.
func (p *Poller) start(addr netip.AddrPort, reuseFD int, sources []netip.Addr, out []byte, limit int, deadline time.Time, timeout time.Duration, h exchangeHandler, done func(Result)) {
	// The timeout a timeout reason names: the check's, or what is left of it for a retry.
	timeout = namedBudget(time.Until(deadline), timeout)
	ex := p.newExchange()
	*ex = exchange{fd: reuseFD, deadline: deadline, timeout: timeout, in: ex.in[:0], out: out, limit: limit, handler: h, done: done, connected: reuseFD >= 0, index: -1}
	if ex.fd < 0 {
		fd, err := dialNonBlocking(addr, sources)
		if err != nil {
			ex.fd, ex.result = -1, Result{Reason: err.Error()}
			p.endEarly(ex)
			return
		}
		ex.fd = fd
	}
	// Edge-triggered, for writing and reading at once: one epoll_ctl per probe. When the
	// request went out at once (a kept-alive connection, or a connect that completed within
	// the call, as on a near network), the socket joins for reading only: it is not ready
	// when added, so adding it wakes nobody.
	events := uint32(syscall.EPOLLOUT | syscall.EPOLLIN | syscall.EPOLLRDHUP | epollET)
	if len(ex.out) > 0 {
		if ex.writeEarly() {
			rawClose(ex.fd)
			ex.fd = -1
			p.endEarly(ex)
			return
		}
		if ex.wrote {
			events = syscall.EPOLLIN | syscall.EPOLLRDHUP | epollET
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		// The loop is gone. Only a stopping manager starts probes now, and its done takes
		// no lock, so reporting from here is safe.
		syscall.Close(ex.fd)
		ex.result = Fail("health checks stopped")
		defer ex.report(-1)
		return
	}
	ev := syscall.EpollEvent{Events: events, Fd: int32(ex.fd)}
	if err := rawEpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, ex.fd, &ev); err != nil {
		rawClose(ex.fd)
		ex.fd, ex.result = -1, Result{Reason: errnoReason("epoll", err)}
		p.ended = append(p.ended, ex)
		p.poke()
		return
	}
	if ex.fd >= len(p.live) {
		p.live = append(p.live, make([]*exchange, ex.fd+1-len(p.live))...)
	}
	p.live[ex.fd] = ex
	p.queue.Push(ex)
	if p.queue.First() == ex {
		p.poke() // the loop may be sleeping past this deadline
	}
}

// writeEarly tries to send the request before the socket joins the epoll set, and reports
// whether that already ended the exchange (a failed connect, or a handler done once written).
// A socket still connecting refuses the write (EAGAIN) and waits for EPOLLOUT as usual.
func (ex *exchange) writeEarly() bool {
	k, err := rawSend(ex.fd, ex.out)
	switch {
	case errors.Is(err, syscall.EAGAIN):
		return false
	case err != nil && ex.connected:
		ex.result = Result{Reason: errnoReason("write", err)}
		return true
	case err != nil: // the connect's error, which the write reports
		ex.result = Result{Reason: errnoReason("connect", err)}
		return true
	}
	ex.connected = true
	ex.out = ex.out[k:]
	if len(ex.out) > 0 {
		return false
	}
	ex.wrote = true
	res, done := ex.handler.written()
	if done {
		ex.result = res
	}
	return done
}

func (p *Poller) endEarly(ex *exchange) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		ex.report(-1) // see start: only a stopping manager gets here
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
	if addr.Addr().Is4() {
		family = syscall.AF_INET
	}
	fd, err := rawSocket(family)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	// Close with a reset, as load balancers' health checkers do: no FIN exchange and no
	// TIME_WAIT socket left behind for every probe (3,000 a second at 30,000 checks).
	_ = rawResetOnClose(fd)
	if src, ok := sourceFor(sources, family == syscall.AF_INET6); ok {
		if err := rawBind(fd, src); err != nil {
			rawClose(fd)
			return -1, fmt.Errorf("connect: bind: %w", err)
		}
	}
	if err := rawConnect(fd, addr); err != nil && !errors.Is(err, syscall.EINPROGRESS) {
		rawClose(fd)
		return -1, fmt.Errorf("connect: %w", err)
	}
	return fd, nil
}

// exchange returns the exchange on descriptor fd, or nil.
func (p *Poller) exchange(fd int) *exchange {
	if fd < 0 || fd >= len(p.live) {
		return nil
	}
	return p.live[fd]
}

// alive reports whether a kept-alive connection is still open: no EOF, error or stray data.
func alive(fd int) bool {
	n, err := rawPeekOne(fd)
	return n < 0 && errors.Is(err, syscall.EAGAIN)
}

// closeFD closes a kept-alive connection's descriptor.
func closeFD(fd int) { rawClose(fd) }

func (p *Poller) poke() {
	_, _ = rawWrite(p.wake[1], []byte{0})
}

// loop waits for socket events and deadlines and drives every exchange.
func (p *Poller) loop() {
	defer close(p.done)
	events := make([]syscall.EpollEvent, 512)
	var finished []*exchange
	for {
		p.mu.Lock()
		var wake time.Time // zero: no deadline
		if len(p.queue) > 0 {
			// Deadlines are checked in 10 ms steps: a probe may time out up to 10 ms late,
			// and thousands of deadlines a second cost a hundred wake-ups.
			const step = 10 * time.Millisecond
			now := time.Now()
			wake = now.Add((max(p.queue.First().deadline.Sub(now), 0)/step + 1) * step)
		}
		closed := p.closed
		p.mu.Unlock()
		if closed {
			return
		}
		n, err := p.wait(events, wake)
		if err != nil {
			return
		}
		p.mu.Lock()
		for _, ev := range events[:max(n, 0)] {
			fd := int(ev.Fd)
			if fd == p.wake[0] {
				var drain [64]byte
				for {
					if k, _ := rawRead(fd, drain[:]); k <= 0 {
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
		for len(p.queue) > 0 && !p.queue.First().deadline.After(now) {
			ex := p.queue.First()
			ex.result = ex.handler.expired(ex.in, connTimeoutReason(ex.timeout))
			ex.keep = false
			finished = append(finished, p.retire(ex))
		}
		finished = append(finished, p.ended...)
		p.ended = p.ended[:0]
		p.mu.Unlock()
		for _, ex := range finished {
			kept := -1
			if ex.keep {
				kept = ex.fd
			}
			ex.report(kept)
		}
		p.recycle(finished)
		clear(finished)
		finished = finished[:0]
	}
}

// wait returns the events ready now, or waits for some until wake, when it returns none. The
// epoll descriptor is polled without blocking; the goroutine parks in the runtime's poller
// until the set turns readable or the deadline passes.
func (p *Poller) wait(events []syscall.EpollEvent, wake time.Time) (int, error) {
	if err := p.epoll.SetReadDeadline(wake); err != nil {
		return 0, fmt.Errorf("epoll deadline: %w", err)
	}
	n := 0
	var waitErr error
	err := p.raw.Read(func(fd uintptr) bool {
		n, waitErr = rawEpollPoll(int(fd), events)
		if errors.Is(waitErr, syscall.EINTR) {
			n, waitErr = 0, nil
			return true // look again on the loop's next turn
		}
		return n != 0 || waitErr != nil
	})
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("epoll wait: %w", err)
	case waitErr != nil:
		return 0, fmt.Errorf("epoll wait: %w", waitErr)
	}
	return n, nil
}

// handle advances ex on socket events and reports whether it is finished. Events are
// edge-triggered: everything an event allows is done now, reads until EAGAIN.
func (p *Poller) handle(ex *exchange, events uint32) bool {
	const readable = syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLHUP | syscall.EPOLLERR
	if !ex.connected {
		if events&(syscall.EPOLLERR|syscall.EPOLLHUP) != 0 {
			ex.result = Result{Reason: errnoReason("connect", rawSocketError(ex.fd))}
			return true
		}
		if events&syscall.EPOLLOUT == 0 {
			return false
		}
		ex.connected = true
	}
	if !ex.wrote && events&syscall.EPOLLOUT != 0 {
		if len(ex.out) > 0 {
			k, err := rawSend(ex.fd, ex.out)
			if err != nil && !errors.Is(err, syscall.EAGAIN) {
				ex.result = Result{Reason: errnoReason("write", err)}
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
		k, err := rawRead(ex.fd, ex.in[len(ex.in):cap(ex.in)])
		if errors.Is(err, syscall.EAGAIN) {
			break
		}
		if err != nil {
			if len(ex.in) == 0 {
				ex.result = Result{Reason: errnoReason("read", err)}
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
		ex.result, done = Result{Reason: connClosed}, true
		if !eof {
			ex.result = Fail("response larger than %d bytes", ex.limit)
		}
	}
	return done
}

// retire removes ex from the poller; its socket is closed unless the handler keeps it.
func (p *Poller) retire(ex *exchange) *exchange {
	p.live[ex.fd] = nil
	p.queue.Remove(ex.index)
	if ex.keep {
		_ = rawEpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, ex.fd, nil)
	} else {
		rawClose(ex.fd) // closing also leaves the epoll set
	}
	return ex
}

// Close stops the poller and finishes every exchange in flight with a failure.
func (p *Poller) Close() {
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
		ex.report(-1)
	}
}

// report ends ex: its handler learns of the connection kept (keptFD, or -1), then its caller
// of the result. Called once, outside the poller's lock.
func (ex *exchange) report(keptFD int) {
	ex.handler.ended(keptFD)
	ex.done(ex.result)
}

// newExchange returns a finished exchange to reuse, or a new one.
func (p *Poller) newExchange() *exchange {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		ex := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		return ex
	}
	return &exchange{}
}

// recycle keeps finished exchanges for newExchange, up to maxFreeExchanges. Their read
// buffers are kept when small.
func (p *Poller) recycle(finished []*exchange) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ex := range finished {
		if len(p.free) == maxFreeExchanges {
			return
		}
		in := ex.in[:0]
		if cap(in) > connReadSize {
			in = nil
		}
		*ex = exchange{in: in}
		p.free = append(p.free, ex)
	}
}

func (p *Poller) closeFDs() {
	syscall.Close(p.wake[0])
	syscall.Close(p.wake[1])
	p.epoll.Close()
}

// epollET is EPOLLET as the unsigned event mask (the syscall package declares it negative).
const epollET = 1 << 31

// Due and SetIndex make an exchange a timequeue.Item.
func (ex *exchange) Due() time.Time { return ex.deadline }
func (ex *exchange) SetIndex(i int) { ex.index = i }
