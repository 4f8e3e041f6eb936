package probe

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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

// compileProbe compiles a check of type typ with a timeout of 5s through Compile, failing the
// test on error.
func compileProbe(t testing.TB, typ string, params map[string]any, tg Target) Prober {
	t.Helper()
	return compileProbeTimeout(t, typ, params, tg, 5*time.Second)
}

// compileProbeTimeout is compileProbe with the check's timeout given.
func compileProbeTimeout(t testing.TB, typ string, params map[string]any, tg Target, timeout time.Duration) Prober {
	t.Helper()
	c, err := Compile(config.HealthCheck{Type: typ, Params: config.NewParams(params)}, tg, timeout)
	if err != nil {
		t.Fatalf("compile %s %v: %v", typ, params, err)
	}
	return c.Prober
}

// compileHTTP compiles an http check of params against tg, over plain HTTP unless params set
// enable_tls (TLS is the default).
func compileHTTP(t testing.TB, params map[string]any, tg Target) Prober {
	t.Helper()
	if _, ok := params["enable_tls"]; !ok {
		params = maps.Clone(params)
		if params == nil {
			params = map[string]any{}
		}
		params["enable_tls"] = false
	}
	return compileProbe(t, "http", params, tg)
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
				pr := compileHTTP(t, tc.params, tg)
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
			pr := compileHTTP(t, tc.params, tg)
			res, _ := probeWithin(pr, 2*time.Second)
			if res.OK != tc.ok || res.Reason != tc.reason {
				t.Fatalf("got %+v, want ok=%v reason %q", res, tc.ok, tc.reason)
			}
		})
	}

	t.Run("TLS to a plain server", func(t *testing.T) {
		plain := httptest.NewServer(httpTestHandler())
		defer plain.Close()
		pr := compileHTTP(t, map[string]any{"enable_tls": true, "skip_tls_verify": true}, probeTarget(t, plain.Listener.Addr()))
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
	pr := compileHTTP(t, map[string]any{"uri": "/echo", "expected_body": want}, tg)
	if res, _ := probeWithin(pr, 2*time.Second); !res.OK {
		t.Fatalf("got %+v", res)
	}
}

func TestHTTPProbeTimeout(t *testing.T) {
	ln := silentListener(t)
	// The check's timeout and the context's deadline are the same, as the scheduler sets them:
	// the reason names the timeout even when the machine is slow to start the probe.
	for _, params := range []map[string]any{{"timeout": "200ms"}, {"enable_tls": false, "timeout": "200ms"}} {
		pr := compileHTTP(t, params, probeTarget(t, ln.Addr()))
		res, took := probeWithin(pr, 200*time.Millisecond)
		if res.OK || res.Reason != "timeout after 200ms" {
			t.Errorf("%v: got %+v, want timeout after 200ms", params, res)
		}
		if took < 150*time.Millisecond || took > time.Second {
			t.Errorf("%v: took %v", params, took)
		}
	}

	// Without a deadline on the context, the check's own timeout bounds the probe.
	pr := compileHTTP(t, map[string]any{"timeout": "150ms"}, probeTarget(t, ln.Addr()))
	start := time.Now()
	res := pr.Probe(context.Background())
	if res.OK || res.Reason != "timeout after 150ms" || time.Since(start) > time.Second {
		t.Fatalf("got %+v after %v", res, time.Since(start))
	}
}

func TestHTTPProbeTransportErrors(t *testing.T) {
	pr := compileHTTP(t, nil, closedPort(t))
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
		pr := compileHTTP(t, nil, garbage(reply))
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
	pr := compileHTTP(t, map[string]any{"expected_body": "ok"}, probeTarget(t, srv.Listener.Addr()))
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
	big := compileHTTP(t, map[string]any{"uri": "/big"}, probeTarget(t, srv.Listener.Addr()))
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
	pr := compileHTTP(t, map[string]any{"expected_body": "ok"}, probeTarget(t, srv.Listener.Addr()))
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
		{map[string]any{"skip_tls_verify": true, "enable_tls": false}, "params.skip_tls_verify: only applies with enable_tls: true"},
	}
	for _, tc := range tests {
		_, err := Compile(config.HealthCheck{Type: "http", Params: config.NewParams(tc.params)}, tg, time.Second)
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
	if _, err := Compile(config.HealthCheck{Type: "http", Params: config.NewParams(all)}, tg, time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestHTTPDefaultPort checks what a check that leaves out port or enable_tls probes: TLS on,
// port 443, as CoreDNS-GSLB; the backend's port replaces 443; enable_tls: false alone means 80.
func TestHTTPDefaultPort(t *testing.T) {
	tg := Target{Host: "example.com"}
	for _, tc := range []struct {
		params      map[string]any
		tg          Target
		addr, host  string
		serverName  string
		wantTLSConf bool
	}{
		{nil, tg, "example.com:443", "example.com", "example.com", true},
		{map[string]any{"enable_tls": true}, tg, "example.com:443", "example.com", "example.com", true},
		{map[string]any{"port": 8080}, tg, "example.com:8080", "example.com:8080", "example.com", true},
		{map[string]any{"enable_tls": false}, tg, "example.com:80", "example.com", "", false},
		{map[string]any{"enable_tls": false, "port": 8080}, tg, "example.com:8080", "example.com:8080", "", false},
		{map[string]any{"port": 8443, "enable_tls": true, "host": "api.example.com"}, tg, "example.com:8443", "api.example.com", "api.example.com", true},
		{nil, Target{Host: "2001:db8::1", Port: 8080}, "[2001:db8::1]:8080", "[2001:db8::1]:8080", "2001:db8::1", true},
		{map[string]any{"enable_tls": false}, Target{Host: "2001:db8::1", Port: 8080}, "[2001:db8::1]:8080", "[2001:db8::1]:8080", "", false},
	} {
		hp := compileProbe(t, "http", tc.params, tc.tg).(*httpProbe)
		if hp.hostPort() != tc.addr || !hostHeaderIs(hp, tc.host) || (hp.tls != nil) != tc.wantTLSConf {
			t.Errorf("%v on %v: addr %q request %q tls %v", tc.params, tc.tg, hp.hostPort(), hp.appendRequest(nil), hp.tls != nil)
		}
		if hp.tls != nil && hp.tls.config(hp.tlsHost()).ServerName != tc.serverName {
			t.Errorf("%v on %v: server name %q", tc.params, tc.tg, hp.tls.config(hp.tlsHost()).ServerName)
		}
	}
}

// privilegedListeners listens on ports 443 and 80 of one loopback address not in use, so that
// checks without a port reach them. It skips the test where binding those ports is not
// permitted (not root and no CAP_NET_BIND_SERVICE).
func privilegedListeners(t *testing.T) (https, plain net.Listener) {
	t.Helper()
	for i := range 50 {
		ip := netip.AddrFrom4([4]byte{127, 44, byte(os.Getpid() >> 8), byte(os.Getpid() + i)})
		a, err := net.Listen("tcp", netip.AddrPortFrom(ip, 443).String())
		if errors.Is(err, syscall.EACCES) {
			t.Skip("binding port 443 needs root or CAP_NET_BIND_SERVICE")
		}
		if err != nil {
			continue
		}
		b, err := net.Listen("tcp", netip.AddrPortFrom(ip, 80).String())
		if err != nil {
			a.Close()
			continue
		}
		return a, b
	}
	t.Fatal("no loopback address with ports 443 and 80 free")
	return nil, nil
}

// TestHTTPDefaultsAgainstRealServers probes real HTTPS and HTTP servers with checks that leave
// out port and enable_tls, as a CoreDNS-GSLB zone file does.
func TestHTTPDefaultsAgainstRealServers(t *testing.T) {
	lnTLS, lnPlain := privilegedListeners(t)
	tlsSrv := httptest.NewUnstartedServer(httpTestHandler())
	tlsSrv.Listener.Close()
	tlsSrv.Listener = lnTLS
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0)
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	plainSrv := httptest.NewUnstartedServer(httpTestHandler())
	plainSrv.Listener.Close()
	plainSrv.Listener = lnPlain
	plainSrv.Start()
	defer plainSrv.Close()
	ip := netip.MustParseAddrPort(lnTLS.Addr().String()).Addr()
	noPort := Target{Host: ip.String(), IP: ip}
	other := probeTarget(t, plainSrv.Listener.Addr()) // any port of a plain server
	otherTLS := httptest.NewUnstartedServer(httpTestHandler())
	otherTLS.Config.ErrorLog = log.New(io.Discard, "", 0)
	otherTLS.StartTLS()
	defer otherTLS.Close()
	tlsAt := netip.MustParseAddrPort(otherTLS.Listener.Addr().String())
	tlsNoPort := Target{Host: tlsAt.Addr().String(), IP: tlsAt.Addr()}

	for _, tc := range []struct {
		name   string
		params map[string]any
		tg     Target
		ok     bool
		reason string
	}{
		{"no port, no enable_tls: HTTPS on 443", map[string]any{"skip_tls_verify": true}, noPort, true, "http 200"},
		{"no params: the certificate of 443 is verified", nil, noPort, false, "tls: certificate is not valid for " + ip.String()},
		{"enable_tls false alone: HTTP on 80", map[string]any{"enable_tls": false}, noPort, true, "http 200"},
		{"a port alone speaks TLS", map[string]any{"port": int(tlsAt.Port()), "skip_tls_verify": true}, tlsNoPort, true, "http 200"},
		{"a port alone to a plain server fails", map[string]any{"port": int(other.Port)}, noPort, false, "tls: not a TLS server"},
		{"the backend's port, plain", map[string]any{"enable_tls": false}, other, true, "http 200"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := compileProbe(t, "http", tc.params, tc.tg)
			res, _ := probeWithin(pr, 2*time.Second)
			if res.OK != tc.ok || res.Reason != tc.reason {
				t.Fatalf("got %+v, want ok=%v reason %q", res, tc.ok, tc.reason)
			}
		})
	}
}

// hostHeaderIs reports whether the request of hp has the Host header host.
func hostHeaderIs(hp *httpProbe, host string) bool {
	return bytes.Contains(hp.appendRequest(nil), []byte("\r\nHost: "+host+"\r\n"))
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
			pr := compileHTTP(b, bc.params, bc.tg)
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

// TestHTTPChecksShareWhatTheirTargetsDoNot checks that the http checks of one Compiler that
// differ only in their target or uri keep one httpCheck, each with its own request (its Host
// header the target's), and that any other difference keeps them apart.
func TestHTTPChecksShareWhatTheirTargetsDoNot(t *testing.T) {
	base := map[string]any{"port": 9, "uri": "/healthz"}
	a := Target{Host: "127.0.0.1", IP: netip.MustParseAddr("127.0.0.1")}
	b := Target{Host: "127.0.0.2", IP: netip.MustParseAddr("127.0.0.2")}
	tests := []struct {
		name    string
		params  map[string]any
		timeout time.Duration
		shared  bool
	}{
		{"another target", base, time.Second, true},
		{"another uri", map[string]any{"port": 9, "uri": "/other"}, time.Second, true},
		{"another timeout", base, 2 * time.Second, false},
		{"HEAD", map[string]any{"port": 9, "uri": "/healthz", "method": "HEAD"}, time.Second, false},
		{"another code", map[string]any{"port": 9, "uri": "/healthz", "expected_code": 204}, time.Second, false},
		{"a body", map[string]any{"port": 9, "uri": "/healthz", "expected_body": "ok"}, time.Second, false},
		{"a metric", map[string]any{"port": 9, "uri": "/healthz", "metric": "load"}, time.Second, false},
		{"plain", map[string]any{"port": 9, "uri": "/healthz", "enable_tls": false}, time.Second, false},
		{"unverified", map[string]any{"port": 9, "uri": "/healthz", "skip_tls_verify": true}, time.Second, false},
		{"a host", map[string]any{"port": 9, "uri": "/healthz", "host": "api.example.com"}, time.Second, false},
		{"redirects", map[string]any{"port": 9, "uri": "/healthz", "follow_redirects": true}, time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCompiler()
			first, err := c.Compile(config.HealthCheck{Type: "http", Params: config.NewParams(base)}, a, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			second, err := c.Compile(config.HealthCheck{Type: "http", Params: config.NewParams(tt.params)}, b, tt.timeout)
			if err != nil {
				t.Fatal(err)
			}
			p1, p2 := first.Prober.(*httpProbe), second.Prober.(*httpProbe)
			if got := p1.httpCheck == p2.httpCheck; got != tt.shared {
				t.Errorf("shared = %v, want %v", got, tt.shared)
			}
			if !hostHeaderIs(p1, "127.0.0.1:9") || p1.tls.config(p1.tlsHost()).ServerName != "127.0.0.1" {
				t.Errorf("first check: request %q", p1.appendRequest(nil))
			}
			if host, _ := tt.params["host"].(string); host == "" && !hostHeaderIs(p2, "127.0.0.2:9") {
				t.Errorf("second check: request %q", p2.appendRequest(nil))
			}
		})
	}
}
