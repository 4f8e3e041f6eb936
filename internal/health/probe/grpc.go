package probe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// grpcProbe calls the standard gRPC health service (grpc.health.v1.Health/Check) and is
// healthy only when the answer is SERVING.
//
// Parameters:
//
//	port             the port to call; defaults to the backend's port, and one of the two
//	                 is required
//	service          the service name to ask about (default "": the server as a whole)
//	enable_tls       speak TLS (default false: plaintext HTTP/2)
//	skip_tls_verify  accept any server certificate (only with enable_tls)
//	host             the TLS server name and the :authority sent; default the backend's host
//
// A grpcProbe keeps one *grpc.ClientConn, created on the first probe and shared by every
// later (and concurrent) probe, since gRPC multiplexes calls on it. The scheduler should call
// Close when it drops the prober, to release the connection.
type grpcProbe struct {
	target  string            // host:port for grpc.NewClient
	service string            // the service asked about; "" for the whole server
	timeout time.Duration     // the check's timeout, used when the context has no deadline
	opts    []grpc.DialOption // credentials, backoff and authority

	mu     sync.Mutex            // guards the fields below
	conn   *grpc.ClientConn      // nil until the first probe, and after Close
	client healthpb.HealthClient // the health stub on conn
	closed bool                  // set by Close
}

// grpcBackoff paces reconnection while the backend is down. gRPC's default backs off up to
// two minutes, which would make a recovered backend look down long after it came back; a
// health check wants to notice within about a second. Probe also resets the backoff when it
// finds the connection failed.
var grpcBackoff = backoff.Config{
	BaseDelay:  200 * time.Millisecond,
	Multiplier: 1.6,
	Jitter:     0.2,
	MaxDelay:   time.Second,
}

// newGRPCProbe compiles a grpc check for target t. It does not connect: the connection is
// made by the first probe.
func newGRPCProbe(p *params, t Target, timeout time.Duration) (Prober, error) {
	port := p.Port(t, 0)
	if port == 0 {
		p.Errorf("port", "is required: a gRPC check needs a port and the backend has none")
	}
	pr := &grpcProbe{target: t.HostPort(port), timeout: timeout}
	pr.service = p.String("service", "")
	useTLS := p.Bool("enable_tls", false)
	skipVerify := p.Bool("skip_tls_verify", false)
	host := strings.TrimSpace(p.String("host", ""))
	if skipVerify && !useTLS {
		p.Errorf("skip_tls_verify", "only applies with enable_tls: true")
	}

	creds := insecure.NewCredentials()
	if useTLS {
		// ServerName left empty makes gRPC verify against the authority: host, else the
		// backend's host.
		creds = credentials.NewTLS(&tls.Config{
			ServerName:         host,
			InsecureSkipVerify: skipVerify, //nolint:gosec // the operator asked for it
			MinVersion:         tls.VersionTLS12,
		})
	}
	minConnect := max(timeout, time.Second)
	pr.opts = []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: grpcBackoff, MinConnectTimeout: minConnect}),
		grpc.WithUserAgent("meridian-health"),
	}
	if host != "" {
		pr.opts = append(pr.opts, grpc.WithAuthority(host))
	}
	return pr, nil
}

// errGRPCClosed is the reason given by probes after Close.
var errGRPCClosed = errors.New("prober closed")

// healthClient returns the shared client, creating the connection on first use.
func (pr *grpcProbe) healthClient() (*grpc.ClientConn, healthpb.HealthClient, error) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.closed {
		return nil, nil, errGRPCClosed
	}
	if pr.conn == nil {
		conn, err := grpc.NewClient(pr.target, pr.opts...)
		if err != nil {
			return nil, nil, err
		}
		pr.conn, pr.client = conn, healthpb.NewHealthClient(conn)
	}
	return pr.conn, pr.client, nil
}

// Probe calls Health/Check on the shared connection.
func (pr *grpcProbe) Probe(ctx context.Context) Result {
	start := time.Now()
	conn, client, err := pr.healthClient()
	if err != nil {
		return Fail("grpc: %v", err)
	}
	if conn.GetState() == connectivity.TransientFailure {
		// Try again now rather than when the backoff ends; this call still sees the
		// last failure if the new attempt has not finished, the next one sees its outcome.
		conn.ResetConnectBackoff()
	}
	if _, ok := ctx.Deadline(); !ok && pr.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, pr.timeout)
		defer cancel()
	}
	resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: pr.service})
	if err != nil {
		return pr.failure(ctx, start, err)
	}
	switch st := resp.GetStatus(); st {
	case healthpb.HealthCheckResponse_SERVING:
		return Pass("grpc SERVING")
	default:
		return Fail("grpc %s", st)
	}
}

// failure turns a failed Check call into a result.
func (pr *grpcProbe) failure(ctx context.Context, start time.Time, err error) Result {
	s, ok := status.FromError(err)
	if !ok {
		return Fail("grpc: %v", err)
	}
	switch s.Code() {
	case codes.NotFound:
		// The health server's answer for a service it does not know.
		return Fail("grpc %s", healthpb.HealthCheckResponse_SERVICE_UNKNOWN)
	case codes.Unavailable:
		return Fail("grpc unavailable: %s", terseGRPCMessage(s.Message()))
	case codes.DeadlineExceeded, codes.Canceled:
		if ctx.Err() != nil {
			return budgetFail(ctx, start, pr.timeout)
		}
	case codes.Unimplemented:
		return Fail("grpc: the server has no grpc.health.v1 service")
	}
	return Fail("grpc %s: %s", s.Code(), terseGRPCMessage(s.Message()))
}

// terseGRPCMessage drops the layers gRPC wraps around a connection error:
// `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect:
// connection refused"` becomes "dial tcp 127.0.0.1:1: connect: connection refused".
func terseGRPCMessage(msg string) string {
	for _, prefix := range []string{"connection error: desc = ", `"`, "transport: ", "Error while dialing: ", "error while dialing: "} {
		msg = strings.TrimPrefix(msg, prefix)
	}
	return strings.TrimSuffix(msg, `"`)
}

// Close releases the prober's connection. The scheduler calls it when it stops using the
// prober (a reload that drops or changes the check); probes after Close fail at once. Close
// is safe to call more than once and concurrently with Probe.
func (pr *grpcProbe) Close() error {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.closed = true
	if pr.conn == nil {
		return nil
	}
	conn := pr.conn
	pr.conn, pr.client = nil, nil
	if err := conn.Close(); err != nil {
		return fmt.Errorf("grpc: closing the connection to %s: %w", pr.target, err)
	}
	return nil
}
