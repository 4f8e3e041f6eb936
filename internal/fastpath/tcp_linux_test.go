package fastpath

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/reuseport"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// freeTCPAndUDP returns a loopback address whose port is free for both transports.
func freeTCPAndUDP(t *testing.T) string {
	t.Helper()
	for range 20 {
		addr := freeUDP(t)
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return addr
		}
	}
	t.Fatal("no port free for both UDP and TCP")
	return ""
}

// startTCP starts a steered fast path of echo on addr with TCP, others sockets of each group
// bound before it, and serves its TCP slow path (serveSlowTCP), counting the queries there
// in slow.
func startTCP(t *testing.T, addr string, others int, cfg TCPConfig, slow *atomic.Int32) (*Server, *Counts) {
	t.Helper()
	counts := &Counts{}
	s, err := Listen(addr, Config{Loops: 2, Others: others, Steer: true, Counts: counts, TCP: &cfg}, &echo{})
	if err != nil {
		t.Fatal(err)
	}
	s.Serve()
	go serveSlowTCP(s, slow)
	return s, counts
}

// serveSlowTCP answers the TCP slow path's queries of s ("S" + the query) until it is closed:
// queries starting with "sdrop" get no answer, those starting with "swait" theirs after 50 ms.
func serveSlowTCP(s *Server, n *atomic.Int32) {
	ln := s.SlowTCP()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			if _, ok := c.RemoteAddr().(*net.TCPAddr); !ok {
				return // the server could not tell the client's transport
			}
			for {
				q, err := readFrame(c)
				if err != nil {
					return
				}
				n.Add(1)
				switch {
				case strings.HasPrefix(string(q), "sdrop"):
					continue
				case strings.HasPrefix(string(q), "swait"):
					time.Sleep(50 * time.Millisecond)
				}
				_, _ = c.Write(frame(append([]byte{'S'}, q...)))
			}
		}()
	}
}

// frame returns m with its length prefix.
func frame(m []byte) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(m))), m...)
}

// readFrame reads one message with its length prefix from r.
func readFrame(r io.Reader) ([]byte, error) {
	var n [2]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	m := make([]byte, binary.BigEndian.Uint16(n[:]))
	_, err := io.ReadFull(r, m)
	return m, err
}

// readAnswers reads n answers from c (each within 2 s) and returns them sorted.
func readAnswers(t *testing.T, c net.Conn, n int) []string {
	t.Helper()
	var got []string
	for range n {
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		m, err := readFrame(c)
		if err != nil {
			t.Fatalf("after %d answers of %d: %v", len(got), n, err)
		}
		got = append(got, string(m))
	}
	slices.Sort(got)
	return got
}

// TestTCPPipelinedQueries: the queries a client sends at once on one connection, fast and
// slow, in one write or a byte at a time, each get their answer on the connection (the slow
// ones in any order, RFC 7766 7), and are counted by path.
func TestTCPPipelinedQueries(t *testing.T) {
	addr := freeTCPAndUDP(t)
	var slow atomic.Int32
	s, counts := startTCP(t, addr, 0, TCPConfig{}, &slow)
	defer s.Close(nil)
	queries := []string{"fone", "swait1", "ftwo", "sthree", "ffour"}
	var want []string
	var all []byte
	for _, q := range queries {
		all = append(all, frame([]byte(q))...)
		want = append(want, strings.ToUpper(q[:1])+q)
	}
	slices.Sort(want)
	for _, tt := range []struct {
		name  string
		write func(c net.Conn) error
	}{
		{"one write", func(c net.Conn) error { _, err := c.Write(all); return err }},
		{"a byte at a time", func(c net.Conn) error {
			for i := range all {
				if _, err := c.Write(all[i : i+1]); err != nil {
					return err
				}
				time.Sleep(100 * time.Microsecond)
			}
			return nil
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := tt.write(c); err != nil {
				t.Fatal(err)
			}
			if got := readAnswers(t, c, len(queries)); !slices.Equal(got, want) {
				t.Errorf("answers %q, want %q", got, want)
			}
		})
	}
	if f, sl := counts.TCPFast.Load(), counts.TCPSlow.Load(); f != 6 || sl != 4 || slow.Load() != 4 {
		t.Errorf("counted %d fast, %d slow (%d served slow), want 6, 4, 4", f, sl, slow.Load())
	}
}

// TestTCPHalfClose: a client that sends its queries and closes its side gets every answer,
// the slow path's too, then the end of the connection.
func TestTCPHalfClose(t *testing.T) {
	addr := freeTCPAndUDP(t)
	var slow atomic.Int32
	s, _ := startTCP(t, addr, 0, TCPConfig{}, &slow)
	defer s.Close(nil)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(append(frame([]byte("fa")), frame([]byte("swaitb"))...)); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if got := readAnswers(t, c, 2); !slices.Equal(got, []string{"Ffa", "Sswaitb"}) {
		t.Errorf("answers %q", got)
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("after the answers: %v, want the end of the connection", err)
	}
}

// TestTCPTimeouts: a connection that sends no query within the read timeout, or none after its
// last within the idle timeout, is closed; so is one whose query the slow path dropped.
func TestTCPTimeouts(t *testing.T) {
	addr := freeTCPAndUDP(t)
	var slow atomic.Int32
	cfg := TCPConfig{ReadTimeout: 300 * time.Millisecond, IdleTimeout: 600 * time.Millisecond}
	s, counts := startTCP(t, addr, 0, cfg, &slow)
	defer s.Close(nil)
	closedWithin := func(c net.Conn, least, most time.Duration) {
		t.Helper()
		start := time.Now()
		_ = c.SetReadDeadline(start.Add(most + time.Second))
		_, err := c.Read(make([]byte, 1))
		if took := time.Since(start); !errors.Is(err, io.EOF) || took < least || took > most+sweepEvery {
			t.Errorf("read %v after %v, want the end of the connection after %v to %v", err, took, least, most)
		}
	}
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	closedWithin(silent, cfg.ReadTimeout-sweepEvery, cfg.ReadTimeout)

	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if _, err := idle.Write(frame([]byte("fq"))); err != nil {
		t.Fatal(err)
	}
	readAnswers(t, idle, 1)
	closedWithin(idle, cfg.IdleTimeout-sweepEvery, cfg.IdleTimeout)

	waiting, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	if _, err := waiting.Write(frame([]byte("sdrop"))); err != nil {
		t.Fatal(err)
	}
	closedWithin(waiting, cfg.IdleTimeout-sweepEvery, cfg.IdleTimeout)
	testutil.Eventually(t, 2*time.Second, func() bool { return counts.TCPConns.Load() == 0 }, "%d connections open", counts.TCPConns.Load())
}

// TestTCPMaxConns: a server with its limit of connections open, or a client with its own,
// closes the next one at once, and counts it.
func TestTCPMaxConns(t *testing.T) {
	for _, c := range []struct {
		name    string
		cfg     TCPConfig
		refused func(*Counts) uint64
	}{
		{"overall", TCPConfig{MaxConns: 2}, func(c *Counts) uint64 { return c.TCPRefused.Load() }},
		{"per client", TCPConfig{MaxConnsPerClient: 2}, func(c *Counts) uint64 { return c.TCPRefusedClient.Load() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := freeTCPAndUDP(t)
			var slow atomic.Int32
			s, counts := startTCP(t, addr, 0, c.cfg, &slow)
			defer s.Close(nil)
			var open []net.Conn
			defer func() {
				for _, c := range open {
					c.Close()
				}
			}()
			// Two connections are answered, the third is closed at once.
			for i := range 3 {
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				open = append(open, conn)
				_, _ = conn.Write(frame(fmt.Appendf(nil, "f%d", i)))
				_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
				_, err = readFrame(conn)
				if i < 2 && err != nil {
					t.Fatalf("connection %d: %v", i, err)
				}
				if i == 2 && err == nil {
					t.Fatal("the third connection is answered")
				}
			}
			if n := c.refused(counts); n != 1 {
				t.Errorf("%d refused, want 1", n)
			}
			// Closing one makes room for one more.
			open[0].Close()
			testutil.Eventually(t, 2*time.Second, func() bool { return counts.TCPConns.Load() == 1 }, "%d connections open", counts.TCPConns.Load())
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			open = append(open, conn)
			_, _ = conn.Write(frame([]byte("fagain")))
			_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
			if _, err := readFrame(conn); err != nil {
				t.Errorf("after a close: %v", err)
			}
		})
	}
}

// TestTCPTrickleIsClosed: a client that sends its query a byte every 100 ms, never whole
// within the read timeout, is closed at it, and counted as a read timeout.
func TestTCPTrickleIsClosed(t *testing.T) {
	addr := freeTCPAndUDP(t)
	var slow atomic.Int32
	cfg := TCPConfig{ReadTimeout: 500 * time.Millisecond, IdleTimeout: 5 * time.Second}
	s, counts := startTCP(t, addr, 0, cfg, &slow)
	defer s.Close(nil)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A whole query first: the connection is then on its idle timeout, which the trickle must
	// not extend.
	if _, err := conn.Write(frame([]byte("ffirst"))); err != nil {
		t.Fatal(err)
	}
	readAnswers(t, conn, 1)
	query := frame(make([]byte, 200))
	start := time.Now()
	var werr error
	for i := 0; werr == nil && i < len(query) && time.Since(start) < 3*time.Second; i++ {
		_, werr = conn.Write(query[i : i+1])
		time.Sleep(100 * time.Millisecond) // the client's pace: a byte every 100 ms
	}
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := conn.Read(make([]byte, 1)); werr == nil && !errors.Is(err, io.EOF) {
		t.Fatalf("the trickling connection is open after %v: %v", time.Since(start), err)
	}
	// About ReadTimeout, and well before the idle timeout (5 s) that a trickle must not
	// reach; the slack is the client's own pace on a loaded machine (its 100 ms sleeps and
	// the write that finds the connection reset).
	if took := time.Since(start); took > cfg.ReadTimeout+2*sweepEvery+2*time.Second {
		t.Errorf("closed after %v, want about %v (idle timeout %v)", took, cfg.ReadTimeout, cfg.IdleTimeout)
	}
	if n := counts.TCPReadTimeouts.Load(); n != 1 {
		t.Errorf("%d read timeouts counted", n)
	}
}

// TestTCPSteersTheGroup: a listener bound to the address before the server (CoreDNS's) gets
// none of the connections once the server's program steers the group to its loops.
func TestTCPSteersTheGroup(t *testing.T) {
	addr := freeTCPAndUDP(t)
	var stolen atomic.Int32
	otherSocket(t, addr, "X", &stolen)
	lc := net.ListenConfig{Control: reuseport.Control}
	other, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			stolen.Add(1)
			c.Close()
		}
	}()
	var slow atomic.Int32
	s, _ := startTCP(t, addr, 1, TCPConfig{}, &slow)
	defer s.Close(nil)
	if !s.Steered() {
		t.Fatal("the steering programs were not attached")
	}
	for i := range 30 { // from 30 source ports: the kernel's hash would spread them
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write(frame(fmt.Appendf(nil, "f%d", i)))
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		m, err := readFrame(c)
		c.Close()
		if err != nil || string(m) != fmt.Sprintf("Ff%d", i) {
			t.Fatalf("connection %d: %q, %v", i, m, err)
		}
	}
	if n := stolen.Load(); n != 0 {
		t.Errorf("the other sockets of the groups got %d packets and connections", n)
	}
}

// TestTCPCloseAnswersWhatItHolds: closing the server answers the queries its connections
// hold, the slow path's too, then closes them; no connection stays open.
func TestTCPCloseAnswersWhatItHolds(t *testing.T) {
	addr := freeTCPAndUDP(t)
	var slow atomic.Int32
	s, counts := startTCP(t, addr, 0, TCPConfig{}, &slow)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(frame([]byte("fwarm"))); err != nil {
		t.Fatal(err)
	}
	readAnswers(t, c, 1)
	if _, err := c.Write(append(frame([]byte("swaitx")), frame([]byte("fy"))...)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // the queries reach the server's socket
	closed := make(chan error, 1)
	go func() { closed <- s.Close(nil) }()
	if got := readAnswers(t, c, 2); !slices.Equal(got, []string{"Ffy", "Sswaitx"}) {
		t.Errorf("answers %q", got)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("the connection is still open after Close")
	}
	if n := counts.TCPConns.Load(); n != 0 {
		t.Errorf("%d connections counted open after Close", n)
	}
}
