package gslb

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/config"
)

// apiOptions is the table of the api_* options, which set o; relative files are resolved
// against root.
func apiOptions(o *config.APIOptions, root string) optionTable {
	return optionTable{
		"api_enable":                setFlag(&o.Enable, true),
		"api_allow_unauthenticated": setFlag(&o.AllowUnauthenticated, true),
		"api_listen_addr":           func(c *caddy.Controller) error { return listenAddr(c, &o.ListenAddr) },
		"api_listen_port":           func(c *caddy.Controller) error { return tcpPort(c, &o.ListenPort) },
		"api_tls_cert":              setPath(root, &o.TLSCert),
		"api_tls_key":               setPath(root, &o.TLSKey),
		"api_overrides_file":        setPath(root, &o.OverridesFile),
		"api_basic_user":            setString(&o.BasicUser),
		"api_basic_pass":            setString(&o.BasicPass),
		"api_token":                 setString(&o.Token),
	}
}

// listenAddr parses an address to listen on, without port: an IP address or a host name.
func listenAddr(c *caddy.Controller, dst *string) error {
	v, err := single(c)
	if err != nil {
		return err
	}
	host := strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
	if _, err := netip.ParseAddr(host); err != nil && (host == "" || strings.ContainsAny(host, ":/[]")) {
		return c.Errf("api_listen_addr: %q is not an address or a host name (the port is api_listen_port)", v)
	}
	*dst = host
	return nil
}

// tcpPort parses a TCP port, 1 to 65535.
func tcpPort(c *caddy.Controller, dst *int) error {
	v, err := single(c)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 65535 {
		return c.Errf("%s: %q is not a port from 1 to 65535", c.Val(), v)
	}
	*dst = n
	return nil
}
