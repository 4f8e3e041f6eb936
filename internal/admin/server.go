package admin

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/reuseport"
)

// Logger is where the server reports the changes operators make, and its errors. CoreDNS's
// plugin logger satisfies it.
type Logger interface {
	Infof(format string, args ...any)
	Errorf(format string, args ...any)
}

// Config is what a Server may change while it runs: its credentials, TLS and audit log.
type Config struct {
	// BasicUser and BasicPass enable HTTP basic authentication, with the role admin; both or
	// neither.
	BasicUser, BasicPass string
	// Token enables bearer authentication ("Authorization: Bearer TOKEN"), with the role admin;
	// the audit log calls it "token".
	Token string
	// CredentialsFile names users and tokens, each with its role (see LoadCredentials).
	CredentialsFile string
	// AuditFile is the audit log; empty keeps it in memory only. AuditMaxSize and AuditKeep
	// are its size before rotation and the rotated files kept (the defaults when 0).
	AuditFile    string
	AuditMaxSize int64
	AuditKeep    int
	// TLSCert and TLSKey are PEM files; both or neither. With them, the server speaks HTTPS.
	TLSCert, TLSKey string
	// AllowUnauthenticated lets an address that is not loopback serve without authentication.
	AllowUnauthenticated bool
}

// settings is a validated Config and the store, ready for requests.
type settings struct {
	cfg   Config
	store overlay.Store // keeps the backend overrides
	creds credentials
	tls   *tls.Config // nil for plain HTTP
}

// Server is one admin API listener. Several gslb blocks may register with it.
type Server struct {
	addr     string
	log      Logger
	ln       net.Listener
	http     *http.Server
	settings atomic.Pointer[settings]

	mu     sync.Mutex
	audit  *AuditLog       // replaced by Configure
	regs   []*registration // in order of registration
	serve  sync.Once       // starts serving, or marks a server closed before it served
	served chan struct{}   // closed when serving ended
}

// registration is one Provider and the zones it serves.
type registration struct {
	zones []string
	p     Provider
}

// Listen checks cfg for addr (host:port) and binds addr, keeping the overrides in store. The
// server answers once Serve is called, until Close.
func Listen(addr string, cfg Config, store overlay.Store, log Logger) (*Server, error) {
	s := &Server{addr: addr, log: log, served: make(chan struct{})}
	if err := s.Configure(cfg, store); err != nil {
		return nil, err
	}
	// SO_REUSEPORT, as CoreDNS binds its DNS sockets: the process that replaces this one in a
	// binary upgrade (SIGUSR2) binds the address while this one still serves it.
	ln, err := reuseport.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin API: %w", err)
	}
	s.ln = &switchingListener{Listener: ln, settings: &s.settings}
	s.http = &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      time.Minute,
		IdleTimeout:       2 * time.Minute,
	}
	return s, nil
}

// Serve starts answering on the bound listener, in the background. Calls after the first do
// nothing.
func (s *Server) Serve() {
	s.serve.Do(func() {
		go func() {
			defer close(s.served)
			if err := s.http.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Errorf("admin API on %s stopped: %v", s.addr, err)
			}
		}()
	})
}

// Configure replaces the server's credentials, TLS certificate, audit log and store. Requests
// and connections from then on use them; the listener stays. An invalid cfg changes nothing.
func (s *Server) Configure(cfg Config, store overlay.Store) error {
	if store == nil {
		return errors.New("admin API: no overrides store")
	}
	st, err := cfg.settings(s.addr)
	if err != nil {
		return err
	}
	st.store = store
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.audit; old == nil || old.path != cfg.AuditFile || old.maxSize != cmp.Or(cfg.AuditMaxSize, DefaultAuditMaxSize) || old.keep != cmp.Or(cfg.AuditKeep, DefaultAuditKeep) {
		log, err := OpenAuditLog(cfg.AuditFile, cfg.AuditMaxSize, cfg.AuditKeep)
		if err != nil {
			return fmt.Errorf("admin API on %s: api_audit_file: %w", s.addr, err)
		}
		if old != nil {
			_ = old.Close()
		}
		s.audit = log
	}
	s.settings.Store(st)
	return nil
}

// Check reports whether a server on addr may use cfg: credentials come in pairs, the TLS
// certificate and key load, and an address that is not loopback requires authentication
// unless cfg allows it explicitly.
func (cfg Config) Check(addr string) error {
	_, err := cfg.settings(addr)
	return err
}

// settings validates cfg for a server on addr.
func (cfg Config) settings(addr string) (*settings, error) {
	refuse := func(format string, args ...any) (*settings, error) {
		return nil, fmt.Errorf("admin API on %s: "+format, append([]any{addr}, args...)...)
	}
	if (cfg.BasicUser == "") != (cfg.BasicPass == "") {
		return refuse("api_basic_user and api_basic_pass must be given together")
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return refuse("api_tls_cert and api_tls_key must be given together")
	}
	var list []Credential
	if cfg.CredentialsFile != "" {
		var err error
		if list, err = LoadCredentials(cfg.CredentialsFile); err != nil {
			return refuse("%w", err)
		}
		if slices.ContainsFunc(list, func(c Credential) bool { return !c.isToken() && c.Name == cfg.BasicUser }) {
			return refuse("user %s is both api_basic_user and in api_credentials %s", cfg.BasicUser, cfg.CredentialsFile)
		}
	}
	creds, err := newCredentials(cfg, list)
	if err != nil {
		return refuse("%w", err)
	}
	st := &settings{cfg: cfg, creds: creds}
	if !st.creds.required() && !cfg.AllowUnauthenticated && !isLoopback(addr) {
		return refuse("refusing to serve on an address that is not loopback without authentication: " +
			"set api_basic_user and api_basic_pass, api_token or api_credentials, or api_allow_unauthenticated to accept the risk")
	}
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return refuse("load api_tls_cert %s and api_tls_key %s: %w", cfg.TLSCert, cfg.TLSKey, err)
		}
		st.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	}
	return st, nil
}

// isLoopback reports whether the host of addr is a loopback address or localhost. An empty
// host (every interface) and other names are not.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// Addr returns the address the server listens on, with the port it got when asked for 0.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Register adds p, which serves zones, and returns the function that removes it. When two
// registrations list the same zone, as during a Corefile reload, the later one answers for it.
func (s *Server) Register(zones []string, p Provider) (unregister func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &registration{p: p}
	for _, z := range zones {
		r.zones = append(r.zones, config.CanonicalName(z))
	}
	s.regs = append(s.regs, r)
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.regs = slices.DeleteFunc(s.regs, func(x *registration) bool { return x == r })
	}
}

// active returns the registrations that answer for at least one zone, each with only the zones
// it answers for, newest first.
func (s *Server) active() []registration {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make(map[string]bool)
	var out []registration
	for _, r := range slices.Backward(s.regs) {
		var zones []string
		for _, z := range r.zones {
			if !seen[z] {
				seen[z] = true
				zones = append(zones, z)
			}
		}
		if len(zones) > 0 {
			out = append(out, registration{zones: zones, p: r.p})
		}
	}
	return out
}

// Close stops the server: it stops accepting, lets requests in progress finish for up to five
// seconds, then closes every connection.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.http.Shutdown(ctx)
	if err != nil {
		err = s.http.Close()
	}
	s.serve.Do(func() { // never served: close the listener that Shutdown did not know of
		_ = s.ln.Close()
		close(s.served)
	})
	<-s.served
	s.mu.Lock()
	if s.audit != nil {
		_ = s.audit.Close()
	}
	s.mu.Unlock()
	return err
}

// switchingListener serves TLS when the server has a certificate, and plain HTTP otherwise,
// deciding for each connection, so that a Corefile reload can turn TLS on or off, or change the
// certificate, without closing the listener.
type switchingListener struct {
	net.Listener
	settings *atomic.Pointer[settings]
}

// Accept implements net.Listener.
func (l *switchingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if cfg := l.settings.Load().tls; cfg != nil {
		return tls.Server(c, cfg), nil
	}
	return c, nil
}
