package gslb

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/config"
)

// parseAPIOption parses the api_* option at c into o. It reports false for an option that is
// not one of them. Relative files are resolved against root.
func parseAPIOption(c *caddy.Controller, root string, o *config.APIOptions) (bool, error) {
	var err error
	switch c.Val() {
	case "api_enable":
		err = flag(c, &o.Enable, true)
	case "api_allow_unauthenticated":
		err = flag(c, &o.AllowUnauthenticated, true)
	case "api_listen_addr":
		err = listenAddr(c, &o.ListenAddr)
	case "api_listen_port":
		err = tcpPort(c, &o.ListenPort)
	case "api_tls_cert":
		err = filePath(c, root, &o.TLSCert)
	case "api_tls_key":
		err = filePath(c, root, &o.TLSKey)
	case "api_overrides_file":
		err = filePath(c, root, &o.OverridesFile)
	case "api_basic_user":
		o.BasicUser, err = single(c)
	case "api_basic_pass":
		o.BasicPass, err = single(c)
	case "api_token":
		o.Token, err = single(c)
	default:
		return false, nil
	}
	return true, err
}

// filePath parses a file name, resolved against root when it is relative.
func filePath(c *caddy.Controller, root string, dst *string) error {
	v, err := single(c)
	if err != nil {
		return err
	}
	*dst = resolve(root, v)
	return nil
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
