// Package fastpath serves DNS on sockets of its own, beside CoreDNS's: over UDP, one loop per
// core, each on a blocking socket of the address's SO_REUSEPORT group outside Go's poller,
// reading and writing in batches (recvmmsg and sendmmsg); over TCP (when configured), one loop
// per core on a listener of the address's TCP group, serving its connections from an epoll set
// of its own (pipelined queries, RFC 7766). The loops answer the queries their Handler answers
// without allocating (answer.AppendFast); every other query goes to the Handler's slow path,
// CoreDNS's own server, on a goroutine of its own, as CoreDNS would have served it. A classic
// BPF program on each group steers every packet (every connection) to the loops' sockets, by
// the CPU it arrives on, so that CoreDNS's sockets of the address get none.
//
// The package knows no CoreDNS: plugin/gslb wires it to the server and the engine.
package fastpath

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Handler answers packets in the loops.
type Handler interface {
	// Fast appends the response to the query pkt from src (over TCP with tcp, pkt without
	// its length prefix, the response to be written without one) to dst and reports whether
	// it answered it; when it did not, it must have done nothing, and the query goes to the
	// slow path. It runs in a loop: it must not block, and should not allocate.
	Fast(dst, pkt []byte, src netip.Addr, tcp bool) ([]byte, bool)
}

// Counts are a Server's queries, by path and transport.
type Counts struct {
	// Fast were answered in the loops; Slow handed to the slow path; Dropped read but not
	// served: cut short by the buffer, or with the slow path's queue full.
	Fast, Slow, Dropped atomic.Uint64
	// TCPFast, TCPSlow and TCPDropped are the same for the queries of TCP connections.
	TCPFast, TCPSlow, TCPDropped atomic.Uint64
	// TCPConns are the open TCP connections; TCPRefused the connections closed at once
	// because a loop had TCPConfig.MaxConns open.
	TCPConns   atomic.Int64
	TCPRefused atomic.Uint64
}

// Config is how Listen makes a Server.
type Config struct {
	// Loops is the count of loops of each transport; 0 for one per CPU the process may use.
	Loops int
	// Others is the count of the group's sockets bound before the fast path's (CoreDNS's:
	// one UDP socket and one TCP listener each).
	Others int
	// Steer steers the groups to the loops' sockets at once (see Listen).
	Steer bool
	// Counts counts the queries.
	Counts *Counts
	// TCP, when set, serves the address's TCP too.
	TCP *TCPConfig
}

// TCPConfig are the limits of the TCP loops' connections (RFC 7766 6.2.3).
type TCPConfig struct {
	// ReadTimeout bounds the wait for a connection's first query; IdleTimeout the wait for
	// each next one once the last was answered; WriteTimeout the wait for a client that does
	// not read its answers. A connection that exceeds one is closed.
	ReadTimeout, IdleTimeout, WriteTimeout time.Duration
	// MaxConns bounds the connections open at once on each loop: one more is closed as it is
	// accepted (and counted).
	MaxConns int
}

// The TCP limits that a TCPConfig leaves zero: CoreDNS's server's timeouts, and
// DefaultMaxConns connections per loop.
const (
	DefaultReadTimeout  = 3 * time.Second
	DefaultIdleTimeout  = 10 * time.Second
	DefaultWriteTimeout = 5 * time.Second
	DefaultMaxConns     = 10000
)

// withDefaults returns c with the defaults in place of its zero limits.
func (c TCPConfig) withDefaults() TCPConfig {
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&c.ReadTimeout, DefaultReadTimeout}, {&c.IdleTimeout, DefaultIdleTimeout}, {&c.WriteTimeout, DefaultWriteTimeout}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
	}
	return c
}

// drainWait bounds how long Close waits for its sockets' queues, and the slow path's, to empty.
const drainWait = 200 * time.Millisecond

// steerSettle is how long the sockets of a closing server must have received nothing (and its
// listeners accepted nothing) before they close. Packets that the kernel was steering by the group's old program still reach
// them for a while after the steering changed: setsockopt replaces the program without
// waiting for the lookups that use it (the old one is freed after them, RCU), and a lookup on
// another processor can be behind, longer on a loaded virtual machine.
const steerSettle = 10 * time.Millisecond

// sockTimeout bounds a loop's blocking receive, so that a loop whose wake-up was missed still
// sees that its server closed, and a blocking send, so that a full send buffer cannot hold a
// loop (or the slow path's writer) for long. A variable for the tests only.
var sockTimeout = 250 * time.Millisecond

// Server is the fast path of one UDP address.
type Server struct {
	addr    string
	handler Handler
	counts  *Counts
	socks   []*sock
	// lns are the TCP listeners (none without TCPConfig), tcp their config, tcpLoops their
	// loops once serving, and tcpSlow the listener of the TCP slow path.
	lns      []*sock
	tcp      TCPConfig
	tcpLoops []*tcpLoop
	tcpSlow  *slowListener
	// base is the count of the group's sockets that are not any fast path's (CoreDNS's);
	// seq orders the fast paths of one address by when they bound.
	base   int
	seq    uint64
	slow   *slowConn
	wg     sync.WaitGroup
	closed atomic.Bool
	// leaving is set when Close begins: the server's sockets get no more packets from then
	// on, and no resteer points the group at them again.
	leaving atomic.Bool
	// reserved is the processors Serve added for the loops (reserveProcs), which Close gives
	// back.
	reserved int
	// steered is set when the group's packets are steered to the loops' sockets (see
	// Steered).
	steered atomic.Bool
}

// Serve starts the loops; it returns at once. The process gets one processor more per loop
// (GOMAXPROCS) while they run: see reserveProcs.
func (s *Server) Serve() {
	s.reserved = len(s.socks)
	for _, ln := range s.lns {
		l, err := newTCPLoop(s, ln)
		if err != nil {
			continue // no epoll set: the listener's share of the connections waits in its queue
		}
		s.tcpLoops = append(s.tcpLoops, l)
	}
	s.reserved += len(s.tcpLoops)
	reserveProcs(s.reserved)
	for _, k := range s.socks {
		s.wg.Go(newLoop(s, k).run)
	}
	for _, l := range s.tcpLoops {
		s.wg.Go(l.run)
	}
}

// Close stops the server without dropping a query it holds. It steers the address's packets
// away from its sockets (to CoreDNS's sockets, or, without any, to another fast path of the
// address), lets its loops answer what the sockets have queued, and stops the loops; then it
// lets the slow path answer what they handed it: once that queue is empty, stopSlow (nil:
// none) stops the server of Slow, and must wait for the replies it is writing. Only then do the
// sockets close, the first of which sends the slow path's replies.
func (s *Server) Close(stopSlow func() error) error {
	if s.leaving.Swap(true) {
		return nil
	}
	steerAway(s)
	drain(s.socks, s.lns)
	s.closed.Store(true)
	for _, k := range s.socks {
		k.wake() // the loops see closed and return
	}
	for _, l := range s.tcpLoops {
		l.wake() // they answer what their connections hold, then close them and return
	}
	s.wg.Wait()
	reserveProcs(-s.reserved) // none for a server closed before it served
	for _, k := range s.socks[1:] {
		_ = k.close()
	}
	for _, ln := range s.lns {
		_ = ln.close()
	}
	s.slow.drain(drainWait)
	var err error
	if stopSlow != nil {
		err = stopSlow()
	}
	s.slow.Close()
	if s.tcpSlow != nil {
		_ = s.tcpSlow.Close()
	}
	_ = s.socks[0].close()
	track(s, false)
	resteer(s.addr) // another fast path of the address, in the places the group closed up
	return err
}

// Resteer steers the address's packets to the loops' sockets again, after sockets that this
// process does not know of left the address's group before them: in a binary upgrade, the
// fast path's of the process this one replaces (the kernel moves the group's last sockets into
// the places of those that close).
func (s *Server) Resteer() { resteer(s.addr) }

// Slow returns the connection the packets of the slow path are read from: serve it with a DNS
// server (miekg/dns's, as CoreDNS does its socket). Its writes go out of the address's socket.
func (s *Server) Slow() net.PacketConn { return s.slow }

// SlowTCP returns the listener the queries of the TCP slow path are accepted from, one
// connection each: serve it with a DNS server (miekg/dns's, as CoreDNS does its listener).
// Its connections' replies go out on the client's connection. Nil without TCPConfig.
func (s *Server) SlowTCP() net.Listener {
	if s.tcpSlow == nil {
		return nil
	}
	return s.tcpSlow
}

// closeSocks closes every socket of the server.
func (s *Server) closeSocks() {
	for _, k := range s.socks {
		_ = k.close()
	}
	for _, k := range s.lns {
		_ = k.close()
	}
}

// Steered reports whether the group's packets are steered to the loops' sockets (the BPF
// program was attached); otherwise the kernel spreads them over every socket of the group by
// their addresses, CoreDNS's included, which serves its share the slow way.
func (s *Server) Steered() bool { return s.steered.Load() }

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.addr }
