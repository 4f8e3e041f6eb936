package probe

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// icmpProbe pings a backend: it sends `count` echo requests at once and is healthy when at
// least one matching echo reply arrives before the deadline.
//
// Parameters:
//
//	count  echo requests per probe, 1 to 10 (default 1)
//
// Each probe opens its own socket and closes it before returning, so probes share nothing
// and are safe for concurrent use. It prefers an unprivileged ICMP datagram socket ("ping
// socket", allowed to the groups in net.ipv4.ping_group_range, which also governs IPv6) and
// falls back to a raw socket, which needs CAP_NET_RAW. With a datagram socket the kernel picks
// the echo identifier and delivers only this socket's replies, so replies are matched by
// sequence number, source address and payload; with a raw socket, which sees every ICMP
// message the host receives, the identifier must match too.
//
// A backend given by host name is resolved at every probe (net.DefaultResolver, both
// families, the resolver's first address), so the probe follows the name as DNS changes; its
// socket check at load time accepts either family.
type icmpProbe struct {
	ip      netip.Addr // the backend's address; invalid when host must be resolved
	host    string
	count   int
	timeout time.Duration
	modes   []icmpMode // socket kinds to try, in order
}

// icmpMode is a kind of ICMP socket.
type icmpMode int

// The ICMP socket kinds.
const (
	// icmpDatagram is an unprivileged ICMP datagram socket (SOCK_DGRAM, IPPROTO_ICMP).
	icmpDatagram icmpMode = iota
	// icmpRaw is a raw ICMP socket (SOCK_RAW), which needs CAP_NET_RAW.
	icmpRaw
)

// String names the socket kind for messages.
func (m icmpMode) String() string {
	if m == icmpDatagram {
		return "datagram"
	}
	return "raw"
}

// network is the golang.org/x/net/icmp.ListenPacket network for the kind and family.
func (m icmpMode) network(v6 bool) string {
	switch {
	case m == icmpDatagram && v6:
		return "udp6"
	case m == icmpDatagram:
		return "udp4"
	case v6:
		return "ip6:ipv6-icmp"
	default:
		return "ip4:icmp"
	}
}

// icmpModes is the order in which probes try socket kinds: unprivileged first.
var icmpModes = []icmpMode{icmpDatagram, icmpRaw}

// icmpListen opens an ICMP socket. It is a variable so that tests can make opening fail the
// way an unprivileged process on a host with ping sockets disabled sees it.
var icmpListen = func(network, address string) (net.PacketConn, error) {
	c, err := icmp.ListenPacket(network, address)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// icmpMaxCount bounds the count parameter.
const icmpMaxCount = 10

// newICMPProbe compiles an icmp check for target t. It opens (and closes) a socket of the
// target's family to fail at load time, not at every probe, when the process may not ping.
func newICMPProbe(p *params, t Target, timeout time.Duration) (Prober, error) {
	pr := &icmpProbe{
		ip:      t.IP.Unmap(),
		host:    t.Host,
		count:   p.Int("count", 1, 1, icmpMaxCount),
		timeout: timeout,
		modes:   icmpModes,
	}
	if !pr.ip.IsValid() && pr.host == "" {
		return nil, errors.Join(p.Err(), errors.New("icmp: the backend has no address to ping"))
	}
	families := []bool{pr.ip.Is6()}
	if !pr.ip.IsValid() {
		families = []bool{false, true}
	}
	var errs []error
	for _, v6 := range families {
		c, _, err := pr.open(v6)
		if err == nil {
			c.Close()
			return pr, nil
		}
		errs = append(errs, err)
	}
	// The parameters' own errors come first; Compile does not ask for them when we fail.
	return nil, errors.Join(p.Err(), errors.Join(errs...))
}

// open opens an ICMP socket of the family, trying each mode in turn.
func (pr *icmpProbe) open(v6 bool) (net.PacketConn, icmpMode, error) {
	addr := "0.0.0.0"
	if v6 {
		addr = "::"
	}
	var errs []string
	denied := true
	for _, m := range pr.modes {
		c, err := icmpListen(m.network(v6), addr)
		if err == nil {
			return c, m, nil
		}
		denied = denied && errors.Is(err, os.ErrPermission)
		errs = append(errs, fmt.Sprintf("%s: %s", m, terseNetError(err)))
	}
	kind := "an ICMP"
	if v6 {
		kind = "an ICMPv6"
	}
	if denied {
		return nil, 0, fmt.Errorf("icmp: cannot open %s socket: unprivileged ICMP is disabled (net.ipv4.ping_group_range) and raw sockets need CAP_NET_RAW", kind)
	}
	return nil, 0, fmt.Errorf("icmp: cannot open %s socket: %s", kind, strings.Join(errs, "; "))
}

// Probe sends the echo requests and counts the replies.
func (pr *icmpProbe) Probe(ctx context.Context) Result {
	start := time.Now()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = start.Add(pr.timeout)
	}
	ip := pr.ip
	if !ip.IsValid() {
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", pr.host)
		if err != nil {
			if ctxOrNetTimeout(ctx, err) {
				return budgetFail(ctx, start, pr.timeout)
			}
			return Fail("icmp: resolve %s: %v", pr.host, err)
		}
		if len(addrs) == 0 {
			return Fail("icmp: resolve %s: no addresses", pr.host)
		}
		ip = addrs[0].Unmap()
	}

	conn, mode, err := pr.open(ip.Is6())
	if err != nil {
		return Fail("%v", err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(deadline); err != nil {
		return Fail("icmp: %v", err)
	}
	// Cancellation before the deadline wakes the read below at once.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()

	e := newICMPExchange(ip, mode, pr.count)
	sent, err := e.send(conn)
	if sent == 0 {
		if ctxOrNetTimeout(ctx, err) {
			return budgetFail(ctx, start, pr.timeout)
		}
		return Fail("icmp: send to %s: %s", ip, terseNetError(err))
	}
	replies, err := e.receive(conn, sent)
	if err != nil {
		return Fail("icmp: read: %s", terseNetError(err))
	}
	if replies == 0 {
		if errors.Is(ctx.Err(), context.Canceled) {
			return budgetFail(ctx, start, pr.timeout)
		}
		return Fail("icmp: no reply from %s after %s", ip, probeBudget(ctx, start, pr.timeout))
	}
	return Pass(fmt.Sprintf("icmp: %d/%d replies", replies, pr.count))
}

// icmpExchange is one probe's echo requests and the bookkeeping to match their replies.
type icmpExchange struct {
	ip    netip.Addr
	mode  icmpMode
	count int
	id    int    // echo identifier (raw sockets; the kernel replaces it on datagram sockets)
	seq0  int    // sequence number of the first request
	data  []byte // payload, random per probe, echoed back by the peer
	got   [icmpMaxCount]bool
}

// newICMPExchange draws a fresh identifier, first sequence number and payload, so that
// concurrent probes (and other pingers on the host) do not take each other's replies.
func newICMPExchange(ip netip.Addr, mode icmpMode, count int) *icmpExchange {
	e := &icmpExchange{ip: ip, mode: mode, count: count, id: rand.IntN(1 << 16), seq0: rand.IntN(1 << 16)}
	e.data = binary.BigEndian.AppendUint64([]byte("meridian"), rand.Uint64())
	return e
}

// send writes the echo requests back to back; it returns how many went out and the last
// error.
func (e *icmpExchange) send(conn net.PacketConn) (int, error) {
	var typ icmp.Type = ipv4.ICMPTypeEcho
	if e.ip.Is6() {
		typ = ipv6.ICMPTypeEchoRequest
	}
	var dst net.Addr = &net.IPAddr{IP: e.ip.AsSlice(), Zone: e.ip.Zone()}
	if e.mode == icmpDatagram {
		dst = &net.UDPAddr{IP: e.ip.AsSlice(), Zone: e.ip.Zone()}
	}
	sent := 0
	var lastErr error
	for i := range e.count {
		msg := icmp.Message{Type: typ, Body: &icmp.Echo{ID: e.id, Seq: (e.seq0 + i) & 0xffff, Data: e.data}}
		// An ICMPv6 checksum covers a pseudo-header we do not have: Marshal leaves it zero
		// and the kernel fills it in.
		b, err := msg.Marshal(nil)
		if err == nil {
			_, err = conn.WriteTo(b, dst)
		}
		if err != nil {
			lastErr = err
			continue
		}
		sent++
	}
	return sent, lastErr
}

// receive reads until every sent request has its reply or the socket's deadline passes. It
// returns the number of distinct replies, and an error only for a failure other than the
// deadline.
func (e *icmpExchange) receive(conn net.PacketConn, sent int) (int, error) {
	buf := make([]byte, 1500)
	replies := 0
	for replies < sent {
		n, from, err := conn.ReadFrom(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return replies, nil
			}
			return replies, err
		}
		if e.match(buf[:n], from) {
			replies++
		}
	}
	return replies, nil
}

// match reports whether b, received from from, is the first reply to one of our requests.
func (e *icmpExchange) match(b []byte, from net.Addr) bool {
	proto, want := 1, icmp.Type(ipv4.ICMPTypeEchoReply)
	if e.ip.Is6() {
		proto, want = 58, ipv6.ICMPTypeEchoReply
	}
	var src netip.Addr
	switch a := from.(type) {
	case *net.IPAddr:
		src, _ = netip.AddrFromSlice(a.IP)
	case *net.UDPAddr:
		src, _ = netip.AddrFromSlice(a.IP)
	}
	if src.Unmap() != e.ip.WithZone("") {
		return false
	}
	m, err := icmp.ParseMessage(proto, b)
	if err != nil || m.Type != want {
		return false
	}
	echo, ok := m.Body.(*icmp.Echo)
	if !ok || (e.mode == icmpRaw && echo.ID != e.id) || !bytes.Equal(echo.Data, e.data) {
		return false
	}
	i := (echo.Seq - e.seq0) & 0xffff
	if i >= e.count || e.got[i] {
		return false
	}
	e.got[i] = true
	return true
}
