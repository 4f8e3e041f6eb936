package gslb

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin/pkg/transport"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
)

// securityOptions is the table of the options of a server on the open internet: response rate
// limiting (rrl, rrl_*), DNS cookies (cookies, cookie_*), and the certificate of the encrypted
// addresses (tls_cert, tls_key); relative files are resolved against root.
func securityOptions(o *config.Options, root string) optionTable {
	r := &o.RRL
	return optionTable{
		"rrl":                      setFlag(&r.Enable, true),
		"rrl_responses_per_second": setParsed(&r.ResponsesPerSecond, intFrom(0, 100000)),
		"rrl_nodata_per_second":    setParsed(&r.NoDataPerSecond, intFrom(0, 100000)),
		"rrl_nxdomains_per_second": setParsed(&r.NXDomainsPerSecond, intFrom(0, 100000)),
		"rrl_referrals_per_second": setParsed(&r.ReferralsPerSecond, intFrom(0, 100000)),
		"rrl_errors_per_second":    setParsed(&r.ErrorsPerSecond, intFrom(0, 100000)),
		"rrl_window":               setDuration(&r.Window, time.Second),
		"rrl_slip":                 setParsed(&r.Slip, intFrom(0, 10)),
		"rrl_ipv4_prefix_length":   setParsed(&r.IPv4Prefix, intFrom(1, 32)),
		"rrl_ipv6_prefix_length":   setParsed(&r.IPv6Prefix, intFrom(1, 64)),
		"rrl_exempt":               func(c *caddy.Controller) error { return exemptOption(c, r) },
		"rrl_log_only":             setFlag(&r.LogOnly, true),
		"rrl_table_size":           setParsed(&r.TableSize, intFrom(64, 1<<28)),
		"cookies":                  setFlag(&o.Cookies.Enable, true),
		"cookie_secret_file":       setPath(root, &o.Cookies.SecretFile),
		"cookie_require":           setFlag(&o.Cookies.Require, true),
		"tls_cert":                 setPath(root, &o.TLS.Cert),
		"tls_key":                  setPath(root, &o.TLS.Key),
	}
}

// intFrom parses an integer from lo to hi.
func intFrom(lo, hi int) func(string) (int, error) {
	return func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return 0, fmt.Errorf("%q is not a number from %d to %d", v, lo, hi)
		}
		return n, nil
	}
}

// exemptOption reads "rrl_exempt PREFIX...": networks (or addresses) never limited; it may
// repeat.
func exemptOption(c *caddy.Controller, r *config.RRLOptions) error {
	args := c.RemainingArgs()
	if len(args) == 0 {
		return c.Err("rrl_exempt: want one or more networks (192.0.2.0/24, 2001:db8::/48) or addresses")
	}
	for _, a := range args {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			ip, aerr := netip.ParseAddr(a)
			if aerr != nil {
				return c.Errf("rrl_exempt: %q is not a network or an address", a)
			}
			p = netip.PrefixFrom(ip, ip.BitLen())
		}
		r.Exempt = append(r.Exempt, p.Masked())
	}
	return nil
}

// checkSecurity checks what the security options say together: the rrl_* options need rrl
// (given, even as false), and tls_cert and tls_key go together.
func (b *Block) checkSecurity() error {
	if _, ok := b.Written["rrl"]; !ok {
		for name, line := range b.Written {
			if strings.HasPrefix(name, "rrl_") {
				return b.errorAt(line, fmt.Errorf("%s: rate limiting is off: turn it on with rrl (and rrl_log_only to size it first)", name))
			}
		}
	}
	if (b.Options.TLS.Cert == "") != (b.Options.TLS.Key == "") {
		line := max(b.Written["tls_cert"], b.Written["tls_key"])
		return b.errorAt(line, fmt.Errorf("tls_cert and tls_key must be given together"))
	}
	return nil
}

// plainDNS reports whether every one of a server block's keys is a plain DNS address (no
// scheme, or dns://): no query of the block comes over TLS, QUIC, HTTPS or gRPC.
func plainDNS(keys []string) bool {
	for _, k := range keys {
		if scheme, _, found := strings.Cut(k, "://"); found && scheme != transport.DNS {
			return false
		}
	}
	return true
}

// serverTLS gives the server block of cfg, whose keys are keys, the certificate of eng
// (tls_cert, tls_key) for its encrypted addresses: DNS over TLS (tls://) and DNS over QUIC
// (quic://) need one, DNS over HTTPS and gRPC use it when given.
func serverTLS(keys []string, cfg *dnsserver.Config, eng *engine.Engine, log engine.Logger) error {
	tc := eng.ServerTLS()
	var needs, uses []string
	for _, k := range keys {
		scheme, _, found := strings.Cut(k, "://")
		switch {
		case !found || scheme == transport.DNS:
		case scheme == transport.TLS || scheme == transport.QUIC:
			needs, uses = append(needs, k), append(uses, k)
		default:
			uses = append(uses, k)
		}
	}
	switch {
	case tc == nil && len(needs) > 0:
		return fmt.Errorf("%s needs a certificate: give tls_cert and tls_key in the gslb block", strings.Join(needs, ", "))
	case tc == nil:
		return nil
	case len(uses) == 0:
		log.Warningf("tls_cert: the server block has no tls://, quic://, https:// or grpc:// address: the certificate is not used")
	}
	cfg.TLSConfig = tc
	return nil
}
