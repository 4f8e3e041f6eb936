package main

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// The abuse tests send real traffic, on loopback, to a meridian with and without the fast
// path: a flood from one address, a flood spoofed from a victim's address, 10,000 idle TCP
// connections, a client that trickles its query.

// abuseServer is a meridian for the abuse tests and its metrics page.
type abuseServer struct {
	*testutil.Server
	metrics string
}

// startAbuse serves withBig(40) on 127.0.0.1 with the gslb options extra and the server block's
// plugins plugins, with the fast path or without (whatever MERIDIAN_TEST_FASTPATH says).
func startAbuse(t *testing.T, fast bool, extra, plugins string) *abuseServer {
	t.Helper()
	dir := t.TempDir()
	zone := filepath.Join(dir, "zone.yml")
	if err := os.WriteFile(zone, []byte(withBig(40)), 0o644); err != nil {
		t.Fatal(err)
	}
	if fast {
		extra += "  fastpath 1\n"
	}
	metricsPort := testutil.FreePort(t)
	s := testutil.Start(t, dir, func(port int) string {
		return fmt.Sprintf("%s\n.:%d {\n bind 127.0.0.1\n prometheus 127.0.0.1:%d\n%s gslb {\n  zone example.org. %s\n%s }\n}\n",
			testutil.NoFastPath, port, metricsPort, plugins, zone, extra)
	})
	return &abuseServer{Server: s, metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)}
}

// series returns the metrics page's series.
func (s *abuseServer) series(t *testing.T) series {
	t.Helper()
	page, _ := parseSeries(t, metricsPage(t, s.metrics))
	return page
}

// bothPaths runs f with the fast path off and on.
func bothPaths(t *testing.T, f func(t *testing.T, fast bool)) {
	for _, fast := range []bool{false, true} {
		name := "slow path"
		if fast {
			name = "fast path"
		}
		t.Run(name, func(t *testing.T) { f(t, fast) })
	}
}

// TestAbuseFloodFromOneAddress floods from one address: it gets its rate and slips, while a
// client of another network is answered in full.
func TestAbuseFloodFromOneAddress(t *testing.T) {
	bothPaths(t, func(t *testing.T, fast bool) {
		s := startAbuse(t, fast, "  rrl\n  rrl_responses_per_second 10\n", "")
		q := new(dns.Msg)
		q.SetQuestion("www.example.org.", dns.TypeA)
		other := askMeanwhile(t, "127.0.1.1", s.Addr, q)
		got := mustFlood(t, "127.0.0.1", s.Addr, q.Copy(), 2000, 500*time.Millisecond)
		o := <-other
		t.Logf("flood of %d from 127.0.0.1 at 10/s: %d answered, %d slipped; another network: %d of %d", got.sent, got.answered, got.truncated, o.answered, o.sent)
		if got.answered < 10 || got.answered > 20 || got.truncated == 0 || o.answered != o.sent {
			t.Errorf("flood: %+v; another network: %+v", got, o)
		}
		// Slip 2: about half of the limited responses slip. The server's counts, since a loaded
		// machine drops some of the flood's datagrams at the sockets.
		m := s.series(t)
		slipped, dropped := m["coredns_gslb_rrl_responses_total{decision=slipped,kind=positive}"], m["coredns_gslb_rrl_responses_total{decision=dropped,kind=positive}"]
		if limited := slipped + dropped; limited < 500 || slipped < 0.3*limited || slipped > 0.7*limited {
			t.Errorf("the server limited %v responses and slipped %v of them", limited, slipped)
		}
		if limited := m["coredns_gslb_fastpath_packets_total{address=127.0.0.1:"+portOf(s.Addr)+",path=limited}"]; fast != (limited > 0) {
			t.Errorf("the fast path's limited packets: %v", limited)
		}
	})
}

func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// spoofer sends UDP packets from an address that is not its own, through a raw socket (the
// test runs as root).
type spoofer struct {
	fd   int
	sent atomic.Int64 // bytes of the UDP payloads sent
}

func newSpoofer(t *testing.T) *spoofer {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_RAW)
	if err != nil {
		t.Skipf("raw socket: %v (the spoofing test needs root)", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	return &spoofer{fd: fd}
}

// send sends payload in a UDP datagram from src to dst (IPv4).
func (s *spoofer) send(src, dst netip.AddrPort, payload []byte) error {
	pkt := make([]byte, 28+len(payload))
	pkt[0], pkt[8], pkt[9] = 0x45, 64, syscall.IPPROTO_UDP // version 4, 5 words; TTL; UDP
	binary.BigEndian.PutUint16(pkt[2:], uint16(len(pkt)))
	s4, d4 := src.Addr().As4(), dst.Addr().As4()
	copy(pkt[12:], s4[:])
	copy(pkt[16:], d4[:])
	binary.BigEndian.PutUint16(pkt[20:], src.Port())
	binary.BigEndian.PutUint16(pkt[22:], dst.Port())
	binary.BigEndian.PutUint16(pkt[24:], uint16(8+len(payload))) // no UDP checksum (IPv4)
	copy(pkt[28:], payload)
	// The kernel fills in the IP header's checksum (IP_HDRINCL).
	err := syscall.Sendto(s.fd, pkt, 0, &syscall.SockaddrInet4{Addr: d4})
	if err == nil {
		s.sent.Add(int64(len(payload)))
	}
	return err
}

// TestAbuseSpoofedVictim sends queries for a large answer with a victim's address as their
// source, 2,000 a second for 3 seconds, and measures what reaches the victim: without rate
// limiting, every answer (an amplification of the attacker's bytes); with it, the rate's
// answers and small slips, less than the attacker sent.
func TestAbuseSpoofedVictim(t *testing.T) {
	sp := newSpoofer(t)
	bothPaths(t, func(t *testing.T, fast bool) {
		for _, rrl := range []bool{false, true} {
			extra := ""
			if rrl {
				extra = "  rrl\n  rrl_responses_per_second 10\n"
			}
			s := startAbuse(t, fast, extra, "")
			victim, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 66)})
			if err != nil {
				t.Fatal(err)
			}
			var received, packets atomic.Int64
			var wg sync.WaitGroup
			wg.Go(func() {
				buf := make([]byte, 4096)
				for {
					_ = victim.SetReadDeadline(time.Now().Add(time.Second))
					n, err := victim.Read(buf)
					if err != nil {
						return
					}
					received.Add(int64(n))
					packets.Add(1)
				}
			})
			q := new(dns.Msg)
			q.SetQuestion("big.example.org.", dns.TypeA)
			q.SetEdns0(4096, false)
			from := victim.LocalAddr().(*net.UDPAddr).AddrPort()
			to := netip.MustParseAddrPort(s.Addr)
			const rate, seconds = 2000, 3
			start := time.Now()
			for i := range rate * seconds {
				q.Id = uint16(i)
				payload, _ := q.Pack()
				if err := sp.send(from, to, payload); err != nil {
					t.Fatal(err)
				}
				if ahead := time.Duration(i)*time.Second/rate - time.Since(start); ahead > 0 {
					time.Sleep(ahead) // the attack's pace
				}
			}
			wg.Wait()
			victim.Close()
			sent, got := sp.sent.Swap(0), received.Load()
			factor := float64(got) / float64(sent)
			t.Logf("rrl %t: the attacker sent %d bytes (%d queries), the victim received %d bytes in %d packets (%.0f bytes/s): amplification %.2f",
				rrl, sent, rate*seconds, got, packets.Load(), float64(got)/seconds, factor)
			switch {
			case !rrl && factor < 5:
				t.Errorf("without rate limiting the answers amplify %.2f times: the test's answer is too small", factor)
			case rrl && factor >= 1:
				t.Errorf("with rate limiting the victim received %.2f times what the attacker sent", factor)
			}
		}
	})
}

// TestAbuseIdleTCPConnections opens 10,000 TCP connections (10 from each of 1,000 addresses,
// so that even the few addresses that share a counter of the fast path's table of clients stay
// under its per-client limit of 64) and leaves them idle: UDP and TCP queries are still
// answered at once.
func TestAbuseIdleTCPConnections(t *testing.T) {
	bothPaths(t, func(t *testing.T, fast bool) {
		s := startAbuse(t, fast, "", " timeouts {\n  read 60s\n  idle 60s\n }\n")
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		start := time.Now()
		for i := range 10000 {
			local := &net.TCPAddr{IP: net.IPv4(127, 0, 10+byte(i/10/250), byte(1+i/10%250))}
			d := net.Dialer{LocalAddr: local, Timeout: 5 * time.Second}
			c, err := d.Dial("tcp", s.Addr)
			if err != nil {
				t.Fatalf("connection %d: %v", i, err)
			}
			conns = append(conns, c)
		}
		t.Logf("10,000 connections opened in %v", time.Since(start).Round(time.Millisecond))
		for _, network := range []string{"udp", "tcp"} {
			began := time.Now()
			r := s.Query(t, network, "www.example.org", dns.TypeA)
			if len(r.Answer) != 1 || time.Since(began) > time.Second {
				t.Errorf("%s with 10,000 idle connections: %d answers in %v", network, len(r.Answer), time.Since(began))
			}
		}
		if fast {
			key := "coredns_gslb_fastpath_tcp_connections{address=127.0.0.1:" + portOf(s.Addr) + "}"
			refused := "coredns_gslb_fastpath_tcp_refused_total{address=127.0.0.1:" + portOf(s.Addr) + ",reason=client}"
			testutil.Eventually(t, 5*time.Second, func() bool { return s.series(t)[key] >= 10000 }, "%s = %v (%v refused for their client)", key, s.series(t)[key], s.series(t)[refused])
		}
	})
}

// TestAbuseTricklingClient sends a query a byte every 200 ms: the connection is closed at the
// read timeout, not held.
func TestAbuseTricklingClient(t *testing.T) {
	bothPaths(t, func(t *testing.T, fast bool) {
		s := startAbuse(t, fast, "", " timeouts {\n  read 1s\n  idle 10s\n }\n")
		c, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		q := new(dns.Msg)
		q.SetQuestion("www.example.org.", dns.TypeA)
		wire, _ := q.Pack()
		msg := append(binary.BigEndian.AppendUint16(nil, uint16(len(wire))), wire...)
		start := time.Now()
		var werr error
		for i := 0; i < len(msg)-1 && werr == nil; i++ {
			_, werr = c.Write(msg[i : i+1])
			time.Sleep(200 * time.Millisecond) // the client's pace
		}
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, rerr := c.Read(make([]byte, 512))
		took := time.Since(start)
		t.Logf("closed after %v (write: %v, read: %v)", took.Round(10*time.Millisecond), werr, rerr)
		if werr == nil && rerr == nil || took > 3*time.Second {
			t.Errorf("the trickling connection was held %v: write %v, read %v", took, werr, rerr)
		}
		if fast {
			key := "coredns_gslb_fastpath_tcp_timeouts_total{address=127.0.0.1:" + portOf(s.Addr) + ",timeout=read}"
			if v := s.series(t)[key]; v != 1 {
				t.Errorf("%s = %v", key, v)
			}
		}
	})
}
