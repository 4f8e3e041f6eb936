package probe

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// probeWays are the two ways a probe runs: Probe on a goroutine, and on the poller.
var probeWays = []string{"goroutine", "poller"}

// probeVia runs one probe with a budget of d, on a goroutine or on a poller of its own. A
// probe that cannot run on the poller (TLS, redirects, host names) runs on a goroutine.
func probeVia(t testing.TB, via string, pr Prober, d time.Duration) (Result, time.Duration) {
	t.Helper()
	as, ok := pr.(asyncStarter)
	if via == "goroutine" || !ok {
		return probeWithin(pr, d)
	}
	p, err := NewPoller()
	if err != nil {
		t.Skipf("no poller here: %v", err)
	}
	defer p.Close()
	results := make(chan Result, 1)
	start := time.Now()
	if !as.startAsync(p, nil, start.Add(d), func(r Result) { results <- r }) {
		return probeWithin(pr, d)
	}
	select {
	case res := <-results:
		return res, time.Since(start)
	case <-time.After(d + 5*time.Second):
		t.Fatal("the poller never finished the probe")
		return Result{}, 0
	}
}

func TestPollerReusesKeptAliveConnections(t *testing.T) {
	srv, conns := countingServer(t)
	tg := probeTarget(t, srv.Listener.Addr())
	pr := compileHTTP(t, nil, tg)
	for i := range 5 {
		if res, _ := probeVia(t, "poller", pr, 2*time.Second); !res.OK {
			t.Fatalf("probe %d: %+v", i, res)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("5 probes on the poller opened %d connections, want 1", n)
	}
	// The server drops idle connections: the next probe notices and connects again.
	srv.CloseClientConnections()
	testutil.Eventually(t, 5*time.Second, func() bool {
		res, _ := probeVia(t, "poller", pr, 2*time.Second)
		return res.OK && conns.Load() == 2
	}, "the closed connection to be seen")
}

func TestPollerCloseDelimitedBody(t *testing.T) {
	// An HTTP/1.0-style response without Content-Length ends with the connection.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		w.(http.Flusher).Flush() // no Content-Length: the body ends when the server closes
		_, _ = w.Write([]byte("streamed until close"))
	}))
	defer srv.Close()
	pr := compileHTTP(t, map[string]any{"expected_body": "until close$"}, probeTarget(t, srv.Listener.Addr()))
	if res, _ := probeVia(t, "poller", pr, 2*time.Second); !res.OK {
		t.Fatalf("%+v", res)
	}
}

func TestPollerStopsWithProbesInFlight(t *testing.T) {
	p, err := NewPoller()
	if err != nil {
		t.Skip(err)
	}
	silent := probeTarget(t, silentListener(t).Addr())
	pr := compileProbe(t, "tcp", map[string]any{"expect": "never"}, silent).(asyncStarter)
	results := make(chan Result, 3)
	for range 3 {
		pr.startAsync(p, nil, time.Now().Add(time.Hour), func(r Result) { results <- r })
	}
	p.Close()
	for range 3 {
		if res := <-results; res.OK || res.Reason != "health checks stopped" {
			t.Fatalf("in flight at close: %+v", res)
		}
	}
	// After close, a probe is refused at once rather than left hanging.
	pr.startAsync(p, nil, time.Now().Add(time.Hour), func(r Result) { results <- r })
	if res := <-results; res.OK {
		t.Fatalf("after close: %+v", res)
	}
}

// fullListener returns the address of a loopback listener whose accept queue is full: it drops
// new SYNs, so connects to it stay in progress (SYN_SENT) until their probes time out.
func fullListener(t *testing.T) net.Addr {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil { // room for one connection, never accepted
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sa.(*syscall.SockaddrInet4).Port}
	for range 8 {
		c, err := net.DialTimeout("tcp4", addr.String(), 300*time.Millisecond)
		if err != nil {
			return addr // this connect's SYN was dropped: the queue is full
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Fatal("the accept queue never filled")
	return nil
}

func TestPollerWaitsForAConnectInProgress(t *testing.T) {
	// The poller sends the request as soon as it connects, which on loopback is usually within
	// connect itself. A connect still in progress refuses that write (EAGAIN); the probe must
	// then wait for the connection, here until its timeout, not fail on the refused write.
	tg := probeTarget(t, fullListener(t))
	for _, tc := range []struct {
		typ    string
		params map[string]any
	}{
		{"tcp", map[string]any{"send": "ping", "expect": "pong"}},
		{"http", map[string]any{"enable_tls": false}},
	} {
		pr := compileProbe(t, tc.typ, tc.params, tg)
		res, took := probeVia(t, "poller", pr, 300*time.Millisecond)
		if res.OK || !strings.HasPrefix(res.Reason, "timeout after") || took < 250*time.Millisecond {
			t.Errorf("%s: %+v after %v, want a timeout after 300ms", tc.typ, res, took)
		}
	}
}
