package probe

import (
	"context"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"

	"github.com/meridian-gslb/meridian/internal/config"
)

// icmpCompile compiles an icmp check the way the loader does.
func icmpCompile(params map[string]any, target Target, timeout time.Duration) (*icmpProbe, error) {
	c, err := Compile(config.HealthCheck{Type: "icmp", Params: config.NewParams(params)}, target, timeout)
	if err != nil {
		return nil, err
	}
	return c.Prober.(*icmpProbe), nil
}

// icmpIPTarget is a backend at ip.
func icmpIPTarget(ip string) Target {
	a := netip.MustParseAddr(ip)
	return Target{Host: a.String(), IP: a}
}

// icmpCanOpen reports whether this process may open a socket of the kind and family, and why
// not.
func icmpCanOpen(mode icmpMode, v6 bool) error {
	addr := "0.0.0.0"
	if v6 {
		addr = "::"
	}
	c, err := icmpListen(mode.network(v6), addr)
	if err == nil {
		c.Close()
	}
	return err
}

// icmpHasIPv6Loopback reports whether ::1 is configured.
func icmpHasIPv6Loopback() bool {
	c, err := net.ListenPacket("udp6", "[::1]:0")
	if err == nil {
		c.Close()
	}
	return err == nil
}

// icmpFakeListen replaces icmpListen for one test.
func icmpFakeListen(t *testing.T, f func(network, address string) (net.PacketConn, error)) {
	t.Helper()
	orig := icmpListen
	icmpListen = f
	t.Cleanup(func() { icmpListen = orig })
}

// TestICMPProbeLoopback pings 127.0.0.1 and ::1 with each socket kind the host allows.
func TestICMPProbeLoopback(t *testing.T) {
	for _, ip := range []string{"127.0.0.1", "::1"} {
		v6 := ip == "::1"
		for _, mode := range []icmpMode{icmpDatagram, icmpRaw} {
			t.Run(ip+"/"+mode.String(), func(t *testing.T) {
				if v6 && !icmpHasIPv6Loopback() {
					t.Skip("no IPv6 loopback")
				}
				if err := icmpCanOpen(mode, v6); err != nil {
					t.Skipf("cannot open a %s socket here: %v", mode, err)
				}
				pr, err := icmpCompile(map[string]any{"count": 2}, icmpIPTarget(ip), 2*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				pr.modes = []icmpMode{mode}
				// Concurrent probes share the host's ICMP traffic (a raw socket sees every
				// reply), so each must pick out its own.
				var wg sync.WaitGroup
				for range 8 {
					wg.Go(func() {
						ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
						defer cancel()
						if res := pr.Probe(ctx); !res.OK || res.Reason != "icmp: 2/2 replies" {
							t.Errorf("got %+v, want icmp: 2/2 replies", res)
						}
					})
				}
				wg.Wait()
			})
		}
	}
}

// TestICMPProbeDefaults pings with the default socket order and count, and a backend given
// by name, which is resolved at probe time.
func TestICMPProbeDefaults(t *testing.T) {
	if icmpCanOpen(icmpDatagram, false) != nil && icmpCanOpen(icmpRaw, false) != nil {
		// Without CAP_NET_RAW and ping sockets: the check must fail at load.
		_, err := icmpCompile(nil, icmpIPTarget("127.0.0.1"), time.Second)
		if err == nil || !strings.Contains(err.Error(), "icmp: cannot open an ICMP socket") {
			t.Errorf("got error %v, want cannot open an ICMP socket", err)
		}
		t.Skipf("this host allows no ICMP socket (%v)", err)
	}
	targets := []Target{icmpIPTarget("127.0.0.1")}
	if addrs, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", "localhost"); err == nil && len(addrs) > 0 &&
		(addrs[0].Unmap().Is4() || icmpHasIPv6Loopback()) {
		targets = append(targets, Target{Host: "localhost"})
	}
	for _, tg := range targets {
		t.Run(tg.Host, func(t *testing.T) {
			pr, err := icmpCompile(nil, tg, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if res := pr.Probe(ctx); !res.OK || res.Reason != "icmp: 1/1 replies" {
				t.Errorf("got %+v, want icmp: 1/1 replies", res)
			}
		})
	}
}

// TestICMPProbeLoadErrors makes socket opening fail the way it does for an unprivileged
// process, which the tests (run as root) cannot otherwise see.
func TestICMPProbeLoadErrors(t *testing.T) {
	deny := func(errno syscall.Errno) func(string, string) (net.PacketConn, error) {
		return func(network, _ string) (net.PacketConn, error) {
			return nil, &net.OpError{Op: "listen", Net: network, Err: os.NewSyscallError("socket", errno)}
		}
	}
	tests := []struct {
		name   string
		listen func(string, string) (net.PacketConn, error)
		target Target
		params map[string]any
		want   []string
	}{
		{"permission v4", deny(syscall.EACCES), icmpIPTarget("192.0.2.1"), nil,
			[]string{"icmp: cannot open an ICMP socket: unprivileged ICMP is disabled (net.ipv4.ping_group_range) and raw sockets need CAP_NET_RAW"}},
		{"permission v6", deny(syscall.EPERM), icmpIPTarget("2001:db8::1"), nil,
			[]string{"icmp: cannot open an ICMPv6 socket: unprivileged ICMP is disabled"}},
		{"permission host name", deny(syscall.EPERM), Target{Host: "backend.example.org"}, nil,
			[]string{"cannot open an ICMP socket", "cannot open an ICMPv6 socket"}},
		{"no ipv6", deny(syscall.EAFNOSUPPORT), icmpIPTarget("2001:db8::1"), nil,
			[]string{"icmp: cannot open an ICMPv6 socket: datagram: listen: address family not supported by protocol; raw: listen: address family not supported by protocol"}},
		{"params reported too", deny(syscall.EACCES), icmpIPTarget("192.0.2.1"), map[string]any{"count": 11, "cuont": 2},
			[]string{"params.count: must be an integer from 1 to 10", "params.cuont: unknown parameter", "cannot open an ICMP socket"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			icmpFakeListen(t, tc.listen)
			_, err := icmpCompile(tc.params, tc.target, time.Second)
			if err == nil {
				t.Fatal("compiled, want an error")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}

	t.Run("raw when datagram is denied", func(t *testing.T) {
		if icmpCanOpen(icmpRaw, false) != nil {
			t.Skip("no raw sockets here")
		}
		orig := icmpListen
		icmpFakeListen(t, func(network, address string) (net.PacketConn, error) {
			if strings.HasPrefix(network, "udp") {
				return deny(syscall.EACCES)(network, address)
			}
			return orig(network, address)
		})
		pr, err := icmpCompile(nil, icmpIPTarget("127.0.0.1"), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if res := pr.Probe(context.Background()); !res.OK {
			t.Errorf("got %+v, want a pass over a raw socket", res)
		}
	})
}

// TestICMPProbeParamErrors checks that bad parameters fail at load with the parameter named.
func TestICMPProbeParamErrors(t *testing.T) {
	icmpFakeListen(t, func(string, string) (net.PacketConn, error) { return icmpNewFakeConn(t, nil), nil })
	for _, params := range []map[string]any{{"count": 0}, {"count": 11}, {"count": "two"}} {
		if _, err := icmpCompile(params, icmpIPTarget("192.0.2.1"), time.Second); err == nil ||
			!strings.Contains(err.Error(), "params.count: must be an integer from 1 to 10") {
			t.Errorf("count %v: got error %v", params["count"], err)
		}
	}
	if _, err := icmpCompile(map[string]any{"port": 7}, icmpIPTarget("192.0.2.1"), time.Second); err == nil ||
		!strings.Contains(err.Error(), "params.port: unknown parameter") {
		t.Errorf("port: got error %v", err)
	}
}

// icmpFakeConn stands in for an ICMP socket to a remote host, which the loopback-only test
// network does not have. Each echo request it is sent is passed to reply, which returns the
// messages that "arrive" for it; they come back through a real UDP socket so that reads and
// deadlines behave as on a real socket.
type icmpFakeConn struct {
	net.PacketConn // the loopback UDP socket the replies travel through
	reply          func(dst net.Addr, req *icmp.Echo) []icmpFakeMsg
}

// icmpFakeMsg is a message the fake delivers, as if sent by from.
type icmpFakeMsg struct {
	from netip.Addr
	msg  icmp.Message
}

// icmpNewFakeConn returns a fake socket; reply nil means that nothing answers.
func icmpNewFakeConn(t *testing.T, reply func(dst net.Addr, req *icmp.Echo) []icmpFakeMsg) *icmpFakeConn {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &icmpFakeConn{PacketConn: pc, reply: reply}
}

// WriteTo takes an echo request and sends its replies, each prefixed with its source address.
func (c *icmpFakeConn) WriteTo(b []byte, dst net.Addr) (int, error) {
	m, err := icmp.ParseMessage(1, b)
	if err != nil {
		return 0, err
	}
	if c.reply == nil {
		return len(b), nil
	}
	for _, r := range c.reply(dst, m.Body.(*icmp.Echo)) {
		out, err := r.msg.Marshal(nil)
		if err != nil {
			return 0, err
		}
		from := r.from.As4()
		if _, err := c.PacketConn.WriteTo(append(from[:], out...), c.LocalAddr()); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// ReadFrom returns the next delivered message and the address it claims to come from.
func (c *icmpFakeConn) ReadFrom(b []byte) (int, net.Addr, error) {
	buf := make([]byte, len(b)+4)
	n, _, err := c.PacketConn.ReadFrom(buf)
	if err != nil {
		return 0, nil, err
	}
	from := netip.AddrFrom4([4]byte(buf[:4]))
	return copy(b, buf[4:n]), &net.IPAddr{IP: from.AsSlice()}, nil
}

// TestICMPProbeRemote runs the probe against the fake socket: silence, partial replies, and
// stray messages that must not count.
func TestICMPProbeRemote(t *testing.T) {
	backend := netip.MustParseAddr("192.0.2.1")
	other := netip.MustParseAddr("192.0.2.2")
	echoReply := func(from netip.Addr, e icmp.Echo) icmpFakeMsg {
		return icmpFakeMsg{from, icmp.Message{Type: ipv4.ICMPTypeEchoReply, Body: &e}}
	}
	tests := []struct {
		name   string
		count  int
		reply  func(dst net.Addr, req *icmp.Echo) []icmpFakeMsg
		ok     bool
		reason string
	}{
		{"no reply", 2, nil, false, "icmp: no reply from 192.0.2.1 after 200ms"},
		{"one of three", 3, func() func(net.Addr, *icmp.Echo) []icmpFakeMsg {
			answered := false
			return func(_ net.Addr, req *icmp.Echo) []icmpFakeMsg {
				if answered {
					return nil
				}
				answered = true
				return []icmpFakeMsg{echoReply(backend, *req), echoReply(backend, *req)} // a duplicate counts once
			}
		}(), true, "icmp: 1/3 replies"},
		{"all replies", 3, func(_ net.Addr, req *icmp.Echo) []icmpFakeMsg {
			return []icmpFakeMsg{echoReply(backend, *req)}
		}, true, "icmp: 3/3 replies"},
		{"strays only", 2, func(_ net.Addr, req *icmp.Echo) []icmpFakeMsg {
			wrongID, wrongData, wrongSeq := *req, *req, *req
			wrongID.ID ^= 1
			wrongData.Data = []byte("someone else")
			wrongSeq.Seq += 100
			return []icmpFakeMsg{
				echoReply(other, *req), // from another host
				echoReply(backend, wrongID),
				echoReply(backend, wrongData),
				echoReply(backend, wrongSeq),
				{backend, icmp.Message{Type: ipv4.ICMPTypeEcho, Body: req}}, // our own request
			}
		}, false, "icmp: no reply from 192.0.2.1 after 200ms"},
		{"destination checked", 1, func(dst net.Addr, req *icmp.Echo) []icmpFakeMsg {
			if dst.String() != backend.String() {
				return nil
			}
			return []icmpFakeMsg{echoReply(backend, *req)}
		}, true, "icmp: 1/1 replies"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			icmpFakeListen(t, func(string, string) (net.PacketConn, error) { return icmpNewFakeConn(t, tc.reply), nil })
			pr, err := icmpCompile(map[string]any{"count": tc.count}, icmpIPTarget(backend.String()), 200*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			pr.modes = []icmpMode{icmpRaw} // the fake checks identifiers like a raw socket
			res, elapsed := probeWithin(pr, 200*time.Millisecond)
			if elapsed > time.Second {
				t.Errorf("probe took %s, want at most about 200ms", elapsed)
			}
			if res.OK != tc.ok || res.Reason != tc.reason {
				t.Errorf("got %+v, want OK=%v %q", res, tc.ok, tc.reason)
			}
		})
	}

	t.Run("canceled", func(t *testing.T) {
		icmpFakeListen(t, func(string, string) (net.PacketConn, error) { return icmpNewFakeConn(t, nil), nil })
		pr, err := icmpCompile(nil, icmpIPTarget(backend.String()), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		res := pr.Probe(ctx)
		if elapsed := time.Since(start); elapsed > time.Second || res.OK || !strings.HasPrefix(res.Reason, "canceled after") {
			t.Errorf("got %+v after %s, want canceled after about 100ms", res, elapsed)
		}
	})
}
