package fastpath

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"time"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Listen binds loops sockets (0: one per CPU the process may use) to addr (host:port, a
// specific address: a socket on the unspecified address could not answer from the address a
// query was sent to) in its SO_REUSEPORT group, after the first others sockets of the group
// (CoreDNS's) and those of the fast paths still serving addr (a Corefile reload starts the new
// one before it stops the old), and, with steer, steers the group's packets to them at once:
// the old one's sockets get no more, and it answers what it has queued until it closes.
// Without steer, the group's packets go where they went until Resteer: in a binary upgrade,
// to the parent process's fast path, until it leaves. It counts its packets in counts.
func Listen(addr string, loops, others int, steer bool, h Handler, counts *Counts) (*Server, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("fastpath: %q: %w", addr, err)
	}
	if ap.Addr().IsUnspecified() {
		return nil, fmt.Errorf("fastpath: %s is the unspecified address: bind the server block to its addresses (the bind plugin)", addr)
	}
	if loops <= 0 {
		loops = processors()
	}
	s := &Server{addr: addr, handler: h, counts: counts, base: others}
	for range loops {
		k, err := bindSock(ap)
		if err != nil {
			s.closeSocks()
			return nil, fmt.Errorf("fastpath: listen on %s: %w", addr, err)
		}
		s.socks = append(s.socks, k)
	}
	s.slow = newSlowConn(s.socks[0])
	track(s, true)
	if steer {
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
	s.steered.Store(steer(s.socks[0], s.base+socketsBefore(s), len(s.socks)) == nil)
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
		return
	}
	for o := range live.servers {
		if o != s && o.addr == s.addr && !o.leaving.Load() {
			o.steerLocked()
			return
		}
	}
}

// drain waits, at most drainWait, until no datagram has reached socks for steerSettle and
// none is queued on them: their loops answer them meanwhile. Its caller has just steered the
// group away from socks, and what the kernel was steering by the old program still arrives.
func drain(socks []*sock) {
	received := func() (n uint64) {
		for _, k := range socks {
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

// steer attaches to the group of k the program that sends each packet to socket
// others + cpu % loops: the loops' sockets, which were bound after the others'.
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
