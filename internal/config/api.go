package config

import (
	"net"
	"path/filepath"
	"strconv"
)

// Defaults of the admin API.
const (
	DefaultAPIListenAddr    = "127.0.0.1"
	DefaultAPIListenPort    = 8080
	DefaultAPIOverridesFile = "/var/lib/meridian/overrides.json"
	// DefaultAPIAuditFileName is the audit log's name in the overrides file's directory.
	DefaultAPIAuditFileName = "audit.log"
)

// APIOptions are the Corefile's api_* options: the admin API and dashboard. Empty fields take
// the defaults above.
type APIOptions struct {
	// Enable turns the admin API on (api_enable).
	Enable bool
	// ListenAddr is the address to listen on, without port (api_listen_addr).
	ListenAddr string
	// ListenPort is the TCP port (api_listen_port); 0 for the default.
	ListenPort int
	// TLSCert and TLSKey are PEM files that make the API speak HTTPS (api_tls_cert, api_tls_key).
	TLSCert, TLSKey string
	// BasicUser and BasicPass require HTTP basic authentication (api_basic_user, api_basic_pass).
	BasicUser, BasicPass string
	// Token requires a bearer token, an alternative to basic authentication (api_token).
	Token string
	// AllowUnauthenticated lets the API listen on an address that is not loopback without
	// authentication (api_allow_unauthenticated).
	AllowUnauthenticated bool
	// OverridesFile is where the backend overrides are kept (api_overrides_file).
	OverridesFile string
	// CredentialsFile names users and tokens with their roles (api_credentials).
	CredentialsFile string
	// AuditFile is the audit log (api_audit_file); AuditMaxSize the size it is rotated at
	// (api_audit_max_size) and AuditKeep how many rotated files are kept (api_audit_keep).
	AuditFile    string
	AuditMaxSize int64
	AuditKeep    int
}

// Addr returns the host:port the API listens on.
func (a APIOptions) Addr() string {
	host := a.ListenAddr
	if host == "" {
		host = DefaultAPIListenAddr
	}
	port := a.ListenPort
	if port == 0 {
		port = DefaultAPIListenPort
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// AuditPath returns the audit log's file: api_audit_file, or audit.log beside the overrides
// file.
func (a APIOptions) AuditPath() string {
	if a.AuditFile == "" {
		return filepath.Join(filepath.Dir(a.OverridesPath()), DefaultAPIAuditFileName)
	}
	return a.AuditFile
}

// OverridesPath returns the file the overrides are kept in.
func (a APIOptions) OverridesPath() string {
	if a.OverridesFile == "" {
		return DefaultAPIOverridesFile
	}
	return a.OverridesFile
}
