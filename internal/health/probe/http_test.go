package probe

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
)

// probeTarget returns the Target of a loopback listener's address.
func probeTarget(t testing.TB, addr net.Addr) Target {
	t.Helper()
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		t.Fatal(err)
	}
	return Target{Host: ap.Addr().String(), IP: ap.Addr(), Port: ap.Port()}
}

// compileProbe compiles a check of type typ through Compile, failing the test on error.
func compileProbe(t testing.TB, typ string, params map[string]any, tg Target) Prober {
	t.Helper()
	c, err := Compile(config.HealthCheck{Type: typ, Params: params}, tg, 5*time.Second)
	if err != nil {
		t.Fatalf("compile %s %v: %v", typ, params, err)
	}
	return c.Prober
}

// probeWithin runs one probe with a context of d, returning its result and duration.
func probeWithin(pr Prober, d time.Duration) (Result, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	res := pr.Probe(ctx)
	return res, time.Since(start)
}

// silentListener accepts connections on loopback and never answers; they are closed at the
// end of the test.
func silentListener(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t testing.TB) Target {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tg := probeTarget(t, ln.Addr())
	ln.Close()
	return tg
}

// httpTestHandler serves the paths the http tests probe.
func httpTestHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello, all ok") })
	mux.HandleFunc("/created", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) })
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/target", http.StatusFound)
	})
	mux.HandleFunc("/target", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "redirected here") })
	mux.HandleFunc("/temporary", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/echo", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://other.example/", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "method=%s host=%s x-probe=%s ua=%s", r.Method, r.Host, r.Header.Get("X-Probe"), r.UserAgent())
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "marker ")
		w.Write(make([]byte, 100<<10))
	})
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		for i := range 3 {
			fmt.Fprintf(w, "part%d ", i)
			w.(http.Flusher).Flush()
		}
	})
	return mux
}

func TestHTTPProbe(t *testing.T) {
	srv := httptest.NewServer(httpTestHandler())
	defer srv.Close()
	tg := probeTarget(t, srv.Listener.Addr())
	port := strconv.Itoa(int(tg.Port))

	tests := []struct {
		name   string
		params map[string]any
		ok     bool
		reason string
	}{
		{"default GET /", nil, true, "http 200"},
		{"expected code single", map[string]any{"uri": "/created", "expected_code": 201}, true, "http 201"},
		{"expected code list", map[string]any{"uri": "/created", "expected_code": []any{200, 201}}, true, "http 201"},
		{"expected code as string", map[string]any{"uri": "/created", "expected_code": "201"}, true, "http 201"},
		{"unexpected code", map[string]any{"uri": "/created"}, false, "http 201"},
		{"503", map[string]any{"uri": "/fail"}, false, "http 503"},
		{"503 expected", map[string]any{"uri": "/fail", "expected_code": 503}, true, "http 503"},
		{"body match", map[string]any{"expected_body": "all ok$"}, true, "http 200"},
		{"body mismatch", map[string]any{"expected_body": "^ok"}, false, `http 200, body does not match "^ok"`},
		{"body not judged on bad code", map[string]any{"uri": "/fail", "expected_body": "down"}, false, "http 503"},
		{"method headers host", map[string]any{
			"uri": "/echo", "method": "POST", "host": "example.test",
			"headers":       map[string]any{"X-Probe": "yes"},
			"expected_body": "^method=POST host=example.test x-probe=yes ua=meridian-healthcheck$",
		}, true, "http 200"},
		{"default host header", map[string]any{
			"uri": "/echo", "expected_body": `host=127\.0\.0\.1:` + port + " ",
		}, true, "http 200"},
		{"user agent header wins", map[string]any{
			"uri": "/echo", "headers": map[string]any{"User-Agent": "custom"}, "expected_body": "ua=custom$",
		}, true, "http 200"},
		{"HEAD", map[string]any{"method": "HEAD"}, true, "http 200"},
		{"redirect not followed", map[string]any{"uri": "/redirect"}, false, "http 302"},
		{"redirect expected", map[string]any{"uri": "/redirect", "expected_code": 302}, true, "http 302"},
		{"redirect followed", map[string]any{
			"uri": "/redirect", "follow_redirects": true, "expected_body": "redirected here",
		}, true, "http 200"},
		{"307 keeps the method", map[string]any{
			"uri": "/temporary", "method": "POST", "follow_redirects": true, "expected_body": "^method=POST ",
		}, true, "http 200"},
		{"302 turns POST into GET", map[string]any{
			"uri": "/redirect", "method": "POST", "follow_redirects": true, "expected_body": "redirected here",
		}, true, "http 200"},
		{"redirect loop", map[string]any{"uri": "/loop", "follow_redirects": true}, false, "http 302"},
		{"redirect to other host", map[string]any{"uri": "/elsewhere", "follow_redirects": true}, false, "http 301"},
		{"body over 64 KiB", map[string]any{"uri": "/big", "expected_body": "^marker"}, true, "http 200"},
		{"chunked body", map[string]any{"uri": "/chunked", "expected_body": "part0 part1 part2"}, true, "http 200"},
		{"port param", map[string]any{"port": port}, true, "http 200"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, via := range probeWays {
				pr := compileProbe(t, "http", tc.params, tg)
				for i := range 2 { // the second probe runs on the kept-alive connection, if any
					res, _ := probeVia(t, via, pr, 2*time.Second)
					if res.OK != tc.ok || res.Reason != tc.reason {
						t.Fatalf("%s probe %d: got %+v, want ok=%v reason %q", via, i, res, tc.ok, tc.reason)
					}
				}
			}
		})
	}
}

func TestHTTPProbeTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(httpTestHandler())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the failed handshakes are on purpose
	srv.StartTLS()
	defer srv.Close()
	tg := probeTarget(t, srv.Listener.Addr())

	tests := []struct {
		name   string
		params map[string]any
		ok     bool
		reason string
	}{
		{"skip verify", map[string]any{"enable_tls": true, "skip_tls_verify": true}, true, "http 200"},
		{"skip verify with host", map[string]any{
			"enable_tls": true, "skip_tls_verify": true, "host": "example.com", "uri": "/echo",
			"expected_body": "host=example.com ",
		}, true, "http 200"},
		{"verify fails", map[string]any{"enable_tls": true}, false, "tls: certificate signed by unknown authority"},
		{"plain http to a TLS server", nil, false, "http 400"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pr := compileProbe(t, "http", tc.params, tg)
			res, _ := probeWithin(pr, 2*time.Second)
			if res.OK != tc.ok || res.Reason != tc.reason {
				t.Fatalf("got %+v, want ok=%v reason %q", res, tc.ok, tc.reason)
			}
		})
	}

	t.Run("TLS to a plain server", func(t *testing.T) {
		plain := httptest.NewServer(httpTestHandler())
		defer plain.Close()
		pr := compileProbe(t, "http", map[string]any{"enable_tls": true, "skip_tls_verify": true}, probeTarget(t, plain.Listener.Addr()))
		res, _ := probeWithin(pr, 2*time.Second)
		if res.OK || !strings.HasPrefix(res.Reason, "tls: ") {
			t.Fatalf("got %+v, want a tls failure", res)
		}
	})
}

func TestHTTPProbeIPv6(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("cannot bind [::1]: %v", err)
	}
	srv := httptest.NewUnstartedServer(httpTestHandler())
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	tg := probeTarget(t, ln.Addr())
	if tg.Host != "::1" {
		t.Fatalf("target host %q", tg.Host)
	}
	want := fmt.Sprintf(`host=\[::1\]:%d `, tg.Port)
	pr := compileProbe(t, "http", map[string]any{"uri": "/echo", "expected_body": want}, tg)
	if res, _ := probeWithin(pr, 2*time.Second); !res.OK {
		t.Fatalf("got %+v", res)
	}
}

func TestHTTPProbeTimeout(t *testing.T) {
	ln := silentListener(t)
	for _, params := range []map[string]any{nil, {"enable_tls": true}} {
		pr := compileProbe(t, "http", params, probeTarget(t, ln.Addr()))
		res, took := probeWithin(pr, 200*time.Millisecond)
		if res.OK || res.Reason != "timeout after 200ms" {
			t.Errorf("%v: got %+v, want timeout after 200ms", params, res)
		}
		if took < 150*time.Millisecond || took > time.Second {
			t.Errorf("%v: took %v", params, took)
		}
	}

	// Without a deadline on the context, the check's own timeout bounds the probe.
	pr := compileProbe(t, "http", map[string]any{"timeout": "150ms"}, probeTarget(t, ln.Addr()))
	start := time.Now()
	res := pr.Probe(context.Background())
	if res.OK || res.Reason != "timeout after 150ms" || time.Since(start) > time.Second {
		t.Fatalf("got %+v after %v", res, time.Since(start))
	}
}

func TestHTTPProbeTransportErrors(t *testing.T) {
	pr := compileProbe(t, "http", nil, closedPort(t))
	if res, _ := probeWithin(pr, time.Second); res.OK || res.Reason != "connect: connection refused" {
		t.Fatalf("closed port: got %+v", res)
	}

	garbage := func(reply string) Target {
		return tcpServer(t, func(c net.Conn) {
			c.Read(make([]byte, 4096))
			io.WriteString(c, reply)
		})
	}
	for reply, want := range map[string]string{
		"garbage\r\n\r\n": "http: malformed response",
		"":                "connection closed before response",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n": "connection closed",
	} {
		pr := compileProbe(t, "http", nil, garbage(reply))
		if res, _ := probeWithin(pr, time.Second); res.OK || res.Reason != want {
			t.Errorf("reply %q: got %+v, want %q", reply, res, want)
		}
	}
}

// countingServer starts a plain test server that counts new connections.
func countingServer(t testing.TB) (*httptest.Server, *atomic.Int32) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(httpTestHandler())
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func TestHTTPProbeReuse(t *testing.T) {
	srv, conns := countingServer(t)
	pr := compileProbe(t, "http", map[string]any{"expected_body": "ok"}, probeTarget(t, srv.Listener.Addr()))
	for i := range 5 {
		if res, _ := probeWithin(pr, time.Second); !res.OK {
			t.Fatalf("probe %d: %+v", i, res)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("5 probes opened %d connections, want 1", n)
	}

	// The server drops the idle connection: the next probe retries on a fresh one.
	srv.CloseClientConnections()
	time.Sleep(20 * time.Millisecond)
	if res, _ := probeWithin(pr, time.Second); !res.OK {
		t.Fatalf("after the server closed the idle connection: %+v", res)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("got %d connections, want 2", n)
	}

	// A body over the limit is not drained: its connection is not reused.
	big := compileProbe(t, "http", map[string]any{"uri": "/big"}, probeTarget(t, srv.Listener.Addr()))
	before := conns.Load()
	for range 2 {
		if res, _ := probeWithin(big, time.Second); !res.OK {
			t.Fatal(res)
		}
	}
	if n := conns.Load() - before; n != 2 {
		t.Fatalf("big bodies: %d new connections, want 2", n)
	}

	// Close drops the idle connection and keeps none afterwards.
	if err := pr.(io.Closer).Close(); err != nil {
		t.Fatal(err)
	}
	if res, _ := probeWithin(pr, time.Second); !res.OK {
		t.Fatal(res)
	}
	if hp := pr.(*httpProbe); hp.takeIdle() != nil {
		t.Fatal("a closed prober kept a connection")
	}
}

func TestHTTPProbeConcurrent(t *testing.T) {
	srv, conns := countingServer(t)
	pr := compileProbe(t, "http", map[string]any{"expected_body": "ok"}, probeTarget(t, srv.Listener.Addr()))
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 20 {
				if res, _ := probeWithin(pr, 2*time.Second); !res.OK {
					t.Error(res)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := conns.Load(); n > 16*20/2 {
		t.Errorf("%d connections for %d probes: little reuse", n, 16*20)
	}
}

func TestHTTPParamErrors(t *testing.T) {
	tg := Target{Host: "127.0.0.1", IP: netip.MustParseAddr("127.0.0.1")}
	tests := []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"bogus": 1}, "params.bogus: unknown parameter"},
		{map[string]any{"expected_code": "abc"}, "params.expected_code: must be an integer"},
		{map[string]any{"expected_code": 700}, "params.expected_code: must be an integer from 100 to 599"},
		{map[string]any{"expected_code": []any{200, "x"}}, "params.expected_code"},
		{map[string]any{"expected_code": []any{}}, "params.expected_code: must list at least one"},
		{map[string]any{"expected_body": "(unclosed"}, "params.expected_body: invalid regular expression"},
		{map[string]any{"method": "GE T"}, "params.method"},
		{map[string]any{"uri": "health"}, "params.uri"},
		{map[string]any{"headers": map[string]any{"X-A": "a\r\nInjected: 1"}}, "params.headers"},
		{map[string]any{"headers": map[string]any{"Host": "x"}}, "params.headers: set the Host header with the host parameter"},
		{map[string]any{"headers": "X-A: 1"}, "params.headers: must be a mapping"},
		{map[string]any{"port": 70000}, "params.port"},
		{map[string]any{"enable_tls": "maybe"}, "params.enable_tls"},
		{map[string]any{"host": "a\nb"}, "params.host"},
		{map[string]any{"skip_tls_verify": true}, "params.skip_tls_verify: only applies with enable_tls: true"},
	}
	for _, tc := range tests {
		_, err := Compile(config.HealthCheck{Type: "http", Params: tc.params}, tg, time.Second)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got error %v, want %q", tc.params, err, tc.want)
		}
	}

	// Every documented parameter is known.
	all := map[string]any{
		"port": 8080, "uri": "/h", "method": "GET", "host": "h", "headers": map[string]any{"A": "b"},
		"expected_code": 200, "expected_body": "x", "enable_tls": true, "skip_tls_verify": true,
		"follow_redirects": true, "timeout": "1s",
	}
	if _, err := Compile(config.HealthCheck{Type: "http", Params: all}, tg, time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestHTTPDefaultPort(t *testing.T) {
	tg := Target{Host: "example.com"}
	for _, tc := range []struct {
		params      map[string]any
		addr, host  string
		serverName  string
		wantTLSConf bool
	}{
		{nil, "example.com:80", "example.com", "", false},
		{map[string]any{"enable_tls": true}, "example.com:443", "example.com", "example.com", true},
		{map[string]any{"port": 8443, "enable_tls": true, "host": "api.example.com"}, "example.com:8443", "api.example.com", "api.example.com", true},
	} {
		hp := compileProbe(t, "http", tc.params, tg).(*httpProbe)
		if hp.addr != tc.addr || !hostHeaderIs(hp, tc.host) || (hp.tls != nil) != tc.wantTLSConf {
			t.Errorf("%v: addr %q request %q tls %v", tc.params, hp.addr, hp.req, hp.tls != nil)
		}
		if hp.tls != nil && hp.tls.ServerName != tc.serverName {
			t.Errorf("%v: server name %q", tc.params, hp.tls.ServerName)
		}
	}
	hp := compileProbe(t, "http", nil, Target{Host: "2001:db8::1", Port: 8080}).(*httpProbe)
	if hp.addr != "[2001:db8::1]:8080" || !hostHeaderIs(hp, "[2001:db8::1]:8080") {
		t.Errorf("IPv6: addr %q request %q", hp.addr, hp.req)
	}
}

// hostHeaderIs reports whether the prebuilt request of hp has the Host header host.
func hostHeaderIs(hp *httpProbe, host string) bool {
	return bytes.Contains(hp.req, []byte("\r\nHost: "+host+"\r\n"))
}

// rawOK is the response of rawKeepAliveServer.
var rawOK = []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

// rawKeepAliveServer answers every request on a connection with a fixed 200 "ok" response,
// allocating nothing per request, so that benchmarks count the prober's allocations only.
func rawKeepAliveServer(b *testing.B) Target {
	return tcpServer(b, func(c net.Conn) {
		c.SetDeadline(time.Time{}) // a benchmark may run longer than tcpServer's deadline
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(line) == 2 { // the blank line ending the request header
				if _, err := c.Write(rawOK); err != nil {
					return
				}
			}
		}
	})
}

// BenchmarkHTTPProbe measures one keep-alive probe: against a raw server that allocates
// nothing (the prober's own allocations) and against httptest (both sides).
func BenchmarkHTTPProbe(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	raw := rawKeepAliveServer(b)
	for _, bc := range []struct {
		name   string
		tg     Target
		params map[string]any
	}{
		{"raw/status", raw, nil},
		{"raw/body", raw, map[string]any{"expected_body": "^ok$"}},
		{"httptest/status", probeTarget(b, srv.Listener.Addr()), nil},
	} {
		b.Run(bc.name, func(b *testing.B) {
			pr := compileProbe(b, "http", bc.params, bc.tg)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			b.ReportAllocs()
			for b.Loop() {
				if res := pr.Probe(ctx); !res.OK {
					b.Fatal(res)
				}
			}
		})
	}
}
