package fastpath

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/reuseport"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// echo is a Handler: packets starting with 'f' are answered fast ("F" + the packet); the
// others go to the slow path, which serveSlow answers ("S" + the packet).
type echo struct{}

func (e *echo) Fast(dst, pkt []byte, _ netip.Addr, _ bool) ([]byte, bool) {
	if len(pkt) == 0 || pkt[0] != 'f' {
		return dst, false
	}
	return append(append(dst, 'F'), pkt...), true
}

// serveSlow answers the slow path's packets of s until it is closed, counting them in n.
func serveSlow(s *Server, n *atomic.Int32) {
	c := s.Slow()
	buf := make([]byte, 512)
	for {
		k, from, err := c.ReadFrom(buf)
		if err != nil {
			return
		}
		n.Add(1)
		_, _ = c.WriteTo(append([]byte{'S'}, buf[:k]...), from)
	}
}

// freeUDP returns a free loopback UDP address.
func freeUDP(t *testing.T) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().String()
}

// ask sends msg to addr and returns the reply.
func ask(t *testing.T, addr, msg string) string {
	t.Helper()
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 512)
	for range 20 { // a datagram may be lost; ask again
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if n, err := c.Read(buf); err == nil {
			return string(buf[:n])
		}
	}
	t.Fatalf("no reply to %q from %s", msg, addr)
	return ""
}

// TestServerAnswersFastAndSlow: the loops answer what the handler answers fast, hand the rest
// to its slow path (which writes through the loop's socket), and count both.
func TestServerAnswersFastAndSlow(t *testing.T) {
	addr := freeUDP(t)
	counts := &Counts{}
	s, err := Listen(addr, Config{Loops: 2, Others: 0, Steer: true, Counts: counts}, &echo{})
	if err != nil {
		t.Fatal(err)
	}
	s.Serve()
	defer s.Close(nil)
	var slow atomic.Int32
	go serveSlow(s, &slow)
	for _, tt := range []struct{ q, want string }{{"fast1", "Ffast1"}, {"slow1", "Sslow1"}, {"fast2", "Ffast2"}} {
		if got := ask(t, addr, tt.q); got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.q, got, tt.want)
		}
	}
	if counts.Fast.Load() < 2 || counts.Slow.Load() < 1 || slow.Load() < 1 {
		t.Errorf("counts: fast %d slow %d (served %d)", counts.Fast.Load(), counts.Slow.Load(), slow.Load())
	}
}

// otherSocket binds a socket to addr in its SO_REUSEPORT group before any fast path, as
// CoreDNS's is, which answers every packet with prefix and the packet and counts them in
// served; it closes when the test ends.
func otherSocket(t *testing.T, addr, prefix string, served *atomic.Int32) {
	t.Helper()
	lc := net.ListenConfig{Control: reuseport.Control}
	other, err := lc.ListenPacket(context.Background(), "udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := other.ReadFrom(buf)
			if err != nil {
				return
			}
			served.Add(1)
			_, _ = other.WriteTo(append([]byte(prefix), buf[:n]...), from)
		}
	}()
}

// TestServerSteersTheGroup: a socket bound to the address before the server (CoreDNS's) gets
// none of the packets once the server's program steers the group to its loops.
func TestServerSteersTheGroup(t *testing.T) {
	addr := freeUDP(t)
	var stolen atomic.Int32
	otherSocket(t, addr, "X", &stolen)
	s, err := Listen(addr, Config{Loops: 2, Others: 1, Steer: true, Counts: &Counts{}}, &echo{})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Steered() {
		t.Fatal("the steering program was not attached")
	}
	s.Serve()
	defer s.Close(nil)
	for i := range 50 { // from 50 source ports: the kernel's hash would spread them
		msg := []byte("fast")
		msg = append(msg, byte('a'+i%26))
		if got := ask(t, addr, string(msg)); !bytes.HasPrefix([]byte(got), []byte("F")) {
			t.Fatalf("query %d answered %q, not by the fast path", i, got)
		}
	}
	if n := stolen.Load(); n != 0 {
		t.Errorf("the other socket of the group got %d packets", n)
	}
}

// TestListenRefusesTheUnspecifiedAddress: a socket on 0.0.0.0 could not answer from the
// address a query was sent to.
func TestListenRefusesTheUnspecifiedAddress(t *testing.T) {
	if _, err := Listen("0.0.0.0:5353", Config{Loops: 1, Others: 0, Steer: true, Counts: &Counts{}}, &echo{}); err == nil {
		t.Error("listened on the unspecified address")
	}
}

// tagged answers every packet fast, with its tag first.
type tagged byte

func (t tagged) Fast(dst, pkt []byte, _ netip.Addr, _ bool) ([]byte, bool) {
	return append(append(dst, byte(t)), pkt...), true
}

// TestServerTakesOverTheGroup: a second fast path on the address (a Corefile reload's) gets
// every packet from its start, and keeps them once the first one closes; the group's other
// socket gets none throughout.
func TestServerTakesOverTheGroup(t *testing.T) {
	addr := freeUDP(t)
	var stolen atomic.Int32
	otherSocket(t, addr, "X", &stolen) // a query it answers fails askAll
	old, err := Listen(addr, Config{Loops: 2, Others: 1, Steer: true, Counts: &Counts{}}, tagged('O'))
	if err != nil {
		t.Fatal(err)
	}
	old.Serve()
	defer old.Close(nil)
	askAll := func(step string, want byte) {
		t.Helper()
		for i := range 30 {
			if got := ask(t, addr, fmt.Sprintf("q%d", i)); got[0] != want {
				t.Fatalf("%s: query %d answered %q, want it from %c", step, i, got, want)
			}
		}
	}
	askAll("the first fast path", 'O')
	next, err := Listen(addr, Config{Loops: 2, Others: 1, Steer: true, Counts: &Counts{}}, tagged('N'))
	if err != nil {
		t.Fatal(err)
	}
	next.Serve()
	defer next.Close(nil)
	askAll("both", 'N')
	old.Close(nil)
	if !next.Steered() {
		t.Fatal("the second fast path was not steered again")
	}
	askAll("the second alone", 'N')
}

// TestCloseAnswersWhatItHolds: queries that reached the server before Close are answered, the
// slow path's included, although its server takes a while over each: Close waits for the slow
// path's queue to empty and its server to stop before the sockets close.
func TestCloseAnswersWhatItHolds(t *testing.T) {
	addr := freeUDP(t)
	s, err := Listen(addr, Config{Loops: 2, Others: 0, Steer: true, Counts: &Counts{}}, &echo{})
	if err != nil {
		t.Fatal(err)
	}
	s.Serve()
	// A slow path that answers each query 20 ms after it read it, and whose stop waits for
	// the answers it is writing, as miekg/dns's Shutdown does.
	var replies sync.WaitGroup
	served := make(chan struct{})
	go func() {
		defer close(served)
		c, buf := s.Slow(), make([]byte, 512)
		for {
			k, from, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			reply := append([]byte{'S'}, buf[:k]...)
			replies.Go(func() {
				time.Sleep(20 * time.Millisecond)
				_, _ = c.WriteTo(reply, from)
			})
		}
	}()
	stopSlow := func() error {
		_ = s.Slow().SetReadDeadline(time.Unix(1, 0))
		<-served
		replies.Wait()
		return nil
	}
	client, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	const queries = 50
	for i := range queries {
		if _, err := fmt.Fprintf(client, "s%02d", i); err != nil {
			t.Fatal(err)
		}
	}
	// Close once every query has reached the server: it holds them, in its queues or in the
	// slow path's server.
	testutil.Eventually(t, 5*time.Second, func() bool { return s.counts.Slow.Load() == queries }, "the queries did not arrive")
	if err := s.Close(stopSlow); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	buf := make([]byte, 512)
	for len(got) < queries {
		_ = client.SetReadDeadline(time.Now().Add(time.Second))
		n, err := client.Read(buf)
		if err != nil {
			break
		}
		got[string(buf[:n])] = true
	}
	if len(got) != queries {
		t.Fatalf("%d of %d queries answered after Close", len(got), queries)
	}
}

// TestCloseWakesTheLoops: Close wakes the loops blocked in their receive, rather than waiting
// for its timeout (an hour here), and gives back the processors Serve added, one per loop.
func TestCloseWakesTheLoops(t *testing.T) {
	defer func(d time.Duration) { sockTimeout = d }(sockTimeout)
	sockTimeout = time.Hour
	addr := freeUDP(t)
	s, err := Listen(addr, Config{Loops: 2, Others: 0, Steer: true, Counts: &Counts{}}, &echo{})
	if err != nil {
		t.Fatal(err)
	}
	procs := runtime.GOMAXPROCS(0)
	s.Serve()
	if got := runtime.GOMAXPROCS(0); got != procs+2 {
		t.Errorf("GOMAXPROCS %d while 2 loops serve, want %d", got, procs+2)
	}
	if got := ask(t, addr, "fast"); got != "Ffast" {
		t.Errorf("answered %q", got)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close(nil) }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return: its loops were not woken")
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS %d after Close, want %d", got, procs)
	}
}

// TestReplacingLosesNoQuery: fast paths replaced one after another on an address, as Corefile
// reloads do, under queries from clients that wait for each reply: none is lost.
func TestReplacingLosesNoQuery(t *testing.T) {
	addr := freeUDP(t)
	var slow atomic.Int32
	otherSocket(t, addr, "F", &slow) // a closing fast path steers to it: it answers the same
	cur := startEcho(t, addr)
	stop := loadFast(t, addr, 4, 0)
	for range 30 {
		time.Sleep(20 * time.Millisecond) // queries in flight at every replacement
		next := startEcho(t, addr)
		if err := cur.Close(nil); err != nil {
			t.Fatal(err)
		}
		cur = next
	}
	lost, answered := stop()
	cur.Close(nil)
	if lost != 0 || answered == 0 {
		t.Errorf("%d queries lost, %d answered over 30 replacements", lost, answered)
	}
}

// TestResteerWhileClosingLosesNoQuery: a resteer while a server closes (in a binary upgrade,
// the parent's exit seen late by a process that is itself being replaced) leaves the group on
// the other sockets: a closing server's sockets get no packets again, which they would drop.
// The clients pause a millisecond between queries: a query that the kernel delivers at the
// instant a socket closes can still go to it (the lookup found the socket in the port's hash
// chain just before it left its group), and queries back to back on a loaded machine met that
// about once in 15 runs; a resteer onto the closing server loses every query of its drain.
func TestResteerWhileClosingLosesNoQuery(t *testing.T) {
	addr := freeUDP(t)
	var slow atomic.Int32
	otherSocket(t, addr, "F", &slow) // CoreDNS's socket, which the closing server steers to
	stop := loadFast(t, addr, 2, time.Millisecond)
	for range 10 {
		s := startEcho(t, addr)
		time.Sleep(20 * time.Millisecond) // queries in flight
		done := make(chan struct{})
		var resteers sync.WaitGroup
		resteers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
					s.Resteer()
				}
			}
		})
		if err := s.Close(nil); err != nil {
			t.Fatal(err)
		}
		close(done)
		resteers.Wait()
	}
	if lost, answered := stop(); lost != 0 || answered == 0 {
		t.Errorf("%d queries lost, %d answered over 10 closes", lost, answered)
	}
}

// startEcho starts a steered fast path of echo on addr, after one other socket.
func startEcho(t *testing.T, addr string) *Server {
	t.Helper()
	s, err := Listen(addr, Config{Loops: 2, Others: 1, Steer: true, Counts: &Counts{}}, &echo{})
	if err != nil {
		t.Fatal(err)
	}
	s.Serve()
	return s
}

// loadFast starts clients that ask addr fast queries one after another, pause apart, each
// waiting up to 2 s for its answer ("F" and the query); stop ends them and returns how many
// queries were lost (unanswered or answered wrong) and answered.
func loadFast(t *testing.T, addr string, clients int, pause time.Duration) (stop func() (lost, answered int32)) {
	t.Helper()
	done := make(chan struct{})
	var lost, answered atomic.Int32
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			c, err := net.Dial("udp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			buf := make([]byte, 64)
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				if pause > 0 {
					time.Sleep(pause)
				}
				q := fmt.Sprintf("f%d", i)
				if _, err := c.Write([]byte(q)); err != nil {
					t.Error(err)
					return
				}
				_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
				if n, err := c.Read(buf); err != nil || string(buf[:n]) != "F"+q {
					lost.Add(1)
					continue
				}
				answered.Add(1)
			}
		})
	}
	return func() (int32, int32) {
		close(done)
		wg.Wait()
		return lost.Load(), answered.Load()
	}
}

// TestListenNamesAMissingZone: the zone of a link-local address is its interface, looked up
// by name; one that does not exist is said so (a bind with no interface fails otherwise,
// with EINVAL).
func TestListenNamesAMissingZone(t *testing.T) {
	_, err := Listen("[fe80::1%no-such-if0]:5353", Config{Loops: 1, Others: 0, Steer: true, Counts: &Counts{}}, &echo{})
	if err == nil || !strings.Contains(err.Error(), "no such network interface") {
		t.Errorf("listened, or an error that does not say the interface is missing: %v", err)
	}
}

// TestCloseBeforeServe: a server closed before it served (a setup that failed later) gives
// back no processor it did not take: the next server's loops still get theirs.
func TestCloseBeforeServe(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	unserved, err := Listen(freeUDP(t), Config{Loops: 2, Others: 0, Steer: true, Counts: &Counts{}}, &echo{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unserved.Close(nil); err != nil {
		t.Fatal(err)
	}
	s, err := Listen(freeUDP(t), Config{Loops: 2, Others: 0, Steer: true, Counts: &Counts{}}, &echo{})
	if err != nil {
		t.Fatal(err)
	}
	s.Serve()
	if got := runtime.GOMAXPROCS(0); got != procs+2 {
		t.Errorf("GOMAXPROCS %d while 2 loops serve, want %d", got, procs+2)
	}
	if err := s.Close(nil); err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS %d after Close, want %d", got, procs)
	}
}
