package probe

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthsrv "google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/meridian-gslb/meridian/internal/config"
)

// grpcTestServer is a gRPC server with the standard health service on a loopback port.
type grpcTestServer struct {
	port   int
	health *healthsrv.Server
	srv    *grpc.Server

	mu        sync.Mutex
	authority string // the :authority of the last call
}

// startGRPCTestServer serves on addr ("127.0.0.1:0" for a free port) with the given extra
// options; withHealth false leaves the health service out.
func startGRPCTestServer(t *testing.T, addr string, withHealth bool, opts ...grpc.ServerOption) *grpcTestServer {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &grpcTestServer{port: l.Addr().(*net.TCPAddr).Port, health: healthsrv.NewServer()}
	record := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if md, ok := metadata.FromIncomingContext(ctx); ok && len(md[":authority"]) > 0 {
			s.mu.Lock()
			s.authority = md[":authority"][0]
			s.mu.Unlock()
		}
		return h(ctx, req)
	}
	s.srv = grpc.NewServer(append(opts, grpc.UnaryInterceptor(record))...)
	if withHealth {
		healthpb.RegisterHealthServer(s.srv, s.health)
	}
	s.health.SetServingStatus("api", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus("batch", healthpb.HealthCheckResponse_NOT_SERVING)
	go func() { _ = s.srv.Serve(l) }()
	t.Cleanup(s.srv.Stop)
	return s
}

// lastAuthority returns the :authority the server saw last.
func (s *grpcTestServer) lastAuthority() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.authority
}

// grpcTestTarget is a loopback backend with the given service port.
func grpcTestTarget(port int) Target {
	return Target{Host: "127.0.0.1", IP: netip.MustParseAddr("127.0.0.1"), Port: uint16(port)}
}

// grpcCompile compiles a grpc check the way the loader does and closes it after the test.
func grpcCompile(t *testing.T, params map[string]any, target Target) (*grpcProbe, error) {
	c, err := Compile(config.HealthCheck{Type: "grpc", Params: config.NewParams(params)}, target, 2*time.Second)
	if err != nil {
		return nil, err
	}
	pr := c.Prober.(*grpcProbe)
	t.Cleanup(func() { _ = pr.Close() })
	return pr, nil
}

// grpcProbeOnce runs one probe with a 2s deadline.
func grpcProbeOnce(pr Prober) Result {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return pr.Probe(ctx)
}

// grpcFreePort returns a loopback port with nothing listening.
func grpcFreePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestGRPCProbe checks the verdicts against a server with the standard health service.
func TestGRPCProbe(t *testing.T) {
	srv := startGRPCTestServer(t, "127.0.0.1:0", true)
	bare := startGRPCTestServer(t, "127.0.0.1:0", false)
	down := grpcFreePort(t)

	tests := []struct {
		name   string
		port   int // the backend's port
		params map[string]any
		ok     bool
		reason string // exact, or a prefix when it ends in "..."
	}{
		{"server serving", srv.port, nil, true, "grpc SERVING"},
		{"service serving", srv.port, map[string]any{"service": "api"}, true, "grpc SERVING"},
		{"service not serving", srv.port, map[string]any{"service": "batch"}, false, "grpc NOT_SERVING"},
		{"unknown service", srv.port, map[string]any{"service": "nope"}, false, "grpc SERVICE_UNKNOWN"},
		{"port param wins", down, map[string]any{"port": srv.port}, true, "grpc SERVING"},
		{"no health service", bare.port, nil, false, "grpc: the server has no grpc.health.v1 service"},
		{"no server", down, nil, false, "grpc unavailable: dial tcp 127.0.0.1:..."},
		{"plaintext to tls-less", srv.port, map[string]any{"enable_tls": true, "skip_tls_verify": true}, false, "grpc unavailable: ..."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pr, err := grpcCompile(t, tc.params, grpcTestTarget(tc.port))
			if err != nil {
				t.Fatal(err)
			}
			res := grpcProbeOnce(pr)
			t.Logf("%+v", res)
			match := res.Reason == tc.reason
			if prefix, ok := strings.CutSuffix(tc.reason, "..."); ok {
				match = strings.HasPrefix(res.Reason, prefix)
			}
			if res.OK != tc.ok || !match {
				t.Errorf("got %+v, want OK=%v %q", res, tc.ok, tc.reason)
			}
		})
	}
}

// TestGRPCProbeStatusChangesOnOneConnection flips the server's status and checks that the
// probe follows it while reusing one connection, also from concurrent probes.
func TestGRPCProbeStatusChangesOnOneConnection(t *testing.T) {
	srv := startGRPCTestServer(t, "127.0.0.1:0", true)
	pr, err := grpcCompile(t, map[string]any{"service": "api"}, grpcTestTarget(srv.port))
	if err != nil {
		t.Fatal(err)
	}
	if pr.conn != nil {
		t.Fatal("the connection was made at load time, want on the first probe")
	}
	if res := grpcProbeOnce(pr); !res.OK {
		t.Fatalf("first probe: %+v", res)
	}
	conn := pr.conn

	srv.health.SetServingStatus("api", healthpb.HealthCheckResponse_NOT_SERVING)
	if res := grpcProbeOnce(pr); res.OK || res.Reason != "grpc NOT_SERVING" {
		t.Errorf("after NOT_SERVING: %+v", res)
	}
	srv.health.SetServingStatus("api", healthpb.HealthCheckResponse_SERVING)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if res := grpcProbeOnce(pr); !res.OK {
				t.Errorf("concurrent probe: %+v", res)
			}
		})
	}
	wg.Wait()
	if pr.conn != conn {
		t.Error("probes made a new connection, want the first one reused")
	}
}

// TestGRPCProbeRecovers checks that a backend that comes back is seen within a few probes,
// not after gRPC's default reconnection backoff of up to two minutes.
func TestGRPCProbeRecovers(t *testing.T) {
	port := grpcFreePort(t)
	pr, err := grpcCompile(t, nil, grpcTestTarget(port))
	if err != nil {
		t.Fatal(err)
	}
	// Fail for a while, so that gRPC's own backoff would have grown past a second.
	for start := time.Now(); time.Since(start) < 1500*time.Millisecond; time.Sleep(100 * time.Millisecond) {
		if res := grpcProbeOnce(pr); res.OK || !strings.HasPrefix(res.Reason, "grpc unavailable: ") {
			t.Fatalf("probe with no server: %+v", res)
		}
	}
	startGRPCTestServer(t, "127.0.0.1:"+strconv.Itoa(port), true)
	started := time.Now()
	for {
		res := grpcProbeOnce(pr)
		if res.OK {
			t.Logf("passed %s after the server started", time.Since(started).Round(time.Millisecond))
			break
		}
		if time.Since(started) > time.Second {
			t.Fatalf("still failing 1s after the server started: %+v", res)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestGRPCProbeClose checks that Close releases the connection and later probes fail.
func TestGRPCProbeClose(t *testing.T) {
	srv := startGRPCTestServer(t, "127.0.0.1:0", true)
	pr, err := grpcCompile(t, nil, grpcTestTarget(srv.port))
	if err != nil {
		t.Fatal(err)
	}
	if err := pr.Close(); err != nil { // before any probe: nothing to close
		t.Fatal(err)
	}
	if res := grpcProbeOnce(pr); res.OK || res.Reason != "grpc: prober closed" {
		t.Errorf("probe after Close: %+v", res)
	}

	pr2, err := grpcCompile(t, nil, grpcTestTarget(srv.port))
	if err != nil {
		t.Fatal(err)
	}
	if res := grpcProbeOnce(pr2); !res.OK {
		t.Fatalf("probe: %+v", res)
	}
	if err := pr2.Close(); err != nil {
		t.Fatal(err)
	}
	if pr2.conn != nil {
		t.Error("Close kept the connection")
	}
	if err := pr2.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestGRPCProbeTLS runs the check against a TLS server with a self-signed certificate.
func TestGRPCProbeTLS(t *testing.T) {
	srv := startGRPCTestServer(t, "127.0.0.1:0", true, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{grpcTestCert(t)}})))
	tests := []struct {
		name      string
		params    map[string]any
		ok        bool
		reason    string // prefix
		authority string
	}{
		{"skip verify", map[string]any{"enable_tls": true, "skip_tls_verify": "true"}, true, "grpc SERVING", "127.0.0.1:"},
		{"host sets authority", map[string]any{"enable_tls": true, "skip_tls_verify": true, "host": "api.example.test"}, true, "grpc SERVING", "api.example.test"},
		{"unknown authority", map[string]any{"enable_tls": true}, false, "grpc unavailable: ", ""},
		{"plaintext to tls", nil, false, "grpc unavailable: ", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pr, err := grpcCompile(t, tc.params, grpcTestTarget(srv.port))
			if err != nil {
				t.Fatal(err)
			}
			res := grpcProbeOnce(pr)
			t.Logf("%+v", res)
			if res.OK != tc.ok || !strings.HasPrefix(res.Reason, tc.reason) {
				t.Errorf("got %+v, want OK=%v %q...", res, tc.ok, tc.reason)
			}
			if tc.authority != "" && !strings.HasPrefix(srv.lastAuthority(), tc.authority) {
				t.Errorf("server saw :authority %q, want %q...", srv.lastAuthority(), tc.authority)
			}
		})
	}
}

// TestGRPCProbeParamErrors checks that bad parameters fail at load with the parameter named.
func TestGRPCProbeParamErrors(t *testing.T) {
	tests := []struct {
		name   string
		port   int
		params map[string]any
		want   string
	}{
		{"no port", 0, nil, "params.port: is required"},
		{"skip verify without tls", 50051, map[string]any{"skip_tls_verify": true}, "params.skip_tls_verify: only applies with enable_tls: true"},
		{"bad bool", 50051, map[string]any{"enable_tls": "maybe"}, "params.enable_tls: must be true or false"},
		{"unknown param", 50051, map[string]any{"servcie": "api"}, "params.servcie: unknown parameter"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := grpcCompile(t, tc.params, grpcTestTarget(tc.port))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// grpcTestCert makes a self-signed certificate for 127.0.0.1.
func grpcTestCert(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "meridian test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
