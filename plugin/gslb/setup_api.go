package gslb

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/meridian-gslb/meridian/internal/config"
)

// apiOptions is the table of the api_* options, which set o; relative files are resolved
// against root.
func apiOptions(o *config.APIOptions, root string) optionTable {
	return optionTable{
		"api_enable":                setFlag(&o.Enable, true),
		"api_allow_unauthenticated": setFlag(&o.AllowUnauthenticated, true),
		"api_listen_addr":           setParsed(&o.ListenAddr, listenAddr),
		"api_listen_port":           setParsed(&o.ListenPort, tcpPort),
		"api_tls_cert":              setPath(root, &o.TLSCert),
		"api_tls_key":               setPath(root, &o.TLSKey),
		"api_overrides_file":        setPath(root, &o.OverridesFile),
		"api_basic_user":            setString(&o.BasicUser),
		"api_basic_pass":            setString(&o.BasicPass),
		"api_token":                 setString(&o.Token),
		"api_credentials":           setPath(root, &o.CredentialsFile),
		"api_audit_file":            setPath(root, &o.AuditFile),
		"api_audit_max_size":        setSize(&o.AuditMaxSize),
		"api_audit_keep":            setPositive(&o.AuditKeep),
	}
}

// listenAddr parses an address to listen on, without port: an IP address or a host name.
func listenAddr(v string) (string, error) {
	host := strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
	if _, err := netip.ParseAddr(host); err != nil && (host == "" || strings.ContainsAny(host, ":/[]")) {
		return "", fmt.Errorf("%q is not an address or a host name (the port is api_listen_port)", v)
	}
	return host, nil
}

// tcpPort parses a TCP port, 1 to 65535.
func tcpPort(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("%q is not a port from 1 to 65535", v)
	}
	return n, nil
}
