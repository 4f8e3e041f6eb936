package fastpath

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"time"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Listen binds c.Loops sockets (0: one per CPU the process may use) to addr (host:port, a
// specific address: a socket on the unspecified address could not answer from the address a
// query was sent to) in its UDP SO_REUSEPORT group, and with c.TCP as many listeners in its
// TCP group, after the first c.Others sockets of each group (CoreDNS's) and those of the fast
// paths still serving addr (a Corefile reload starts the new one before it stops the old),
// and, with c.Steer, steers the groups' packets and connections to them at once: the old one's
// sockets get no more, and it answers what it has queued until it closes. Without c.Steer,
// they go where they went until Resteer: in a binary upgrade, to the parent process's fast
// path, until it leaves. It counts its queries in c.Counts.
func Listen(addr string, c Config, h Handler) (*Server, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("fastpath: %q: %w", addr, err)
	}
	if ap.Addr().IsUnspecified() {
		return nil, fmt.Errorf("fastpath: %s is the unspecified address: bind the server block to its addresses (the bind plugin)", addr)
	}
	loops := c.Loops
	if loops <= 0 {
		loops = processors()
	}
	s := &Server{addr: addr, handler: h, counts: c.Counts, base: c.Others}
	for range loops {
		k, err := bindSock(ap)
		if err != nil {
			s.closeSocks()
			return nil, fmt.Errorf("fastpath: listen on %s: %w", addr, err)
		}
		s.socks = append(s.socks, k)
	}
	if c.TCP != nil {
		s.tcp = c.TCP.withDefaults()
		for range loops {
			ln, err := bindListener(ap)
			if err != nil {
				s.closeSocks()
				return nil, fmt.Errorf("fastpath: listen on %s over TCP: %w", addr, err)
			}
			s.lns = append(s.lns, ln)
		}
		s.tcpSlow = newSlowListener(net.TCPAddrFromAddrPort(s.lns[0].local))
	}
	s.slow = newSlowConn(s.socks[0])
	track(s, true)
	if c.Steer {
		live.Lock()
		s.steerLocked()
		live.Unlock()
	}
	return s, nil
}

// resteer steers addr's group to the sockets of the fast path that still serves it, after
// another one's sockets left the group (the kernel moves the group's last sockets into the
// places of those that close, so the survivors now follow the base sockets).
func resteer(addr string) {
	live.Lock()
	defer live.Unlock()
	for s := range live.servers {
		if s.addr == addr && !s.leaving.Load() {
			s.steerLocked()
		}
	}
}

// steerLocked steers s's group to s's sockets, which follow the base sockets and those of
// the live fast paths of the address bound before s; live must be locked.
func (s *Server) steerLocked() {
	udp, tcp := socketsBefore(s)
	ok := steer(s.socks[0], s.base+udp, len(s.socks)) == nil
	if len(s.lns) > 0 {
		ok = steer(s.lns[0], s.base+tcp, len(s.lns)) == nil && ok
	}
	s.steered.Store(ok)
}

// steerAway steers s's group to the group's base sockets (CoreDNS's), so that s's sockets get
// no more; without any, to another live fast path of its address. The base sockets come first
// in the group and stay in their places while s's close; the other fast path's sockets do not
// (the kernel moves the group's last sockets into the places of those that close, and a
// program that names a place past the group's end leaves the choice to the kernel's hash, which
// may pick a socket of s that no loop reads any more): it is steered again once s has left
// (resteer).
func steerAway(s *Server) {
	live.Lock()
	defer live.Unlock()
	if s.base > 0 {
		_ = steer(s.socks[0], 0, s.base)
		if len(s.lns) > 0 {
			_ = steer(s.lns[0], 0, s.base)
		}
		return
	}
	for o := range live.servers {
		if o != s && o.addr == s.addr && !o.leaving.Load() {
			o.steerLocked()
			return
		}
	}
}

// drain waits, at most drainWait, until no datagram has reached socks and no connection has
// been accepted on lns for steerSettle, and none is queued on socks: their loops answer them
// meanwhile. Its caller has just steered the groups away from them, and what the kernel was
// steering by the old programs still arrives.
func drain(socks, lns []*sock) {
	received := func() (n uint64) {
		for _, k := range socks {
			n += k.received.Load()
		}
		for _, k := range lns {
			n += k.received.Load()
		}
		return n
	}
	now := time.Now()
	deadline, quiet, last := now.Add(drainWait), now, received()
	for now.Before(deadline) {
		time.Sleep(time.Millisecond)
		now = time.Now()
		if n := received(); n != last || slices.ContainsFunc(socks, (*sock).queued) {
			quiet, last = now, n
		} else if now.Sub(quiet) >= steerSettle {
			return
		}
	}
}

// steer attaches to the group of k (UDP or TCP) the program that sends each packet (each
// connection's first) to socket others + cpu % loops: the loops' sockets, which were bound
// after the others'.
func steer(k *sock, others, loops int) error {
	prog, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadExtension{Num: bpf.ExtCPUID},
		bpf.ALUOpConstant{Op: bpf.ALUOpMod, Val: uint32(loops)},
		bpf.ALUOpConstant{Op: bpf.ALUOpAdd, Val: uint32(others)},
		bpf.RetA{},
	})
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, ins := range prog {
		filter[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	return os.NewSyscallError("SO_ATTACH_REUSEPORT_CBPF", unix.SetsockoptSockFprog(k.fd, unix.SOL_SOCKET, unix.SO_ATTACH_REUSEPORT_CBPF, &fprog))
}
