package gslb

import (
	"encoding/base64"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/coredns/caddy"
	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
)

// The floors of the sites durations.
const (
	minPeerInterval = 100 * time.Millisecond
	minPeerTimeout  = 10 * time.Millisecond
)

// dnsPort is the DNS port: a peers_from_ns server's when it is written without one.
const dnsPort = 53

// tsigAlgorithms maps each peer_tsig algorithm to its name as miekg/dns spells it.
var tsigAlgorithms = map[string]string{
	"hmac-sha1":   dns.HmacSHA1,
	"hmac-sha224": dns.HmacSHA224,
	"hmac-sha256": dns.HmacSHA256,
	"hmac-sha384": dns.HmacSHA384,
	"hmac-sha512": dns.HmacSHA512,
}

// sitesOptions is the table of the sites options (site, peers, peers_from_ns, peer_interval,
// peer_timeout, split_brain_threshold, peer_tsig, measure_remote), which set o. port is the
// port this server block listens on, which the peers found from the NS set are asked on (0:
// unknown, the default port).
func sitesOptions(o *config.SitesOptions, port int) optionTable {
	return optionTable{
		"site": setChecked(&o.Site, config.CheckSiteName),
		"peers": func(c *caddy.Controller) error {
			addrs, err := defaultPortAddrs(c, config.DefaultPeerPort, false)
			if err == nil {
				o.Peers = append(o.Peers, addrs...)
			}
			return err
		},
		"peers_from_ns": func(c *caddy.Controller) error {
			addrs, err := defaultPortAddrs(c, dnsPort, true)
			if err == nil {
				o.PeersFromNS, o.PeerPort = true, port
				o.NSServers = append(o.NSServers, addrs...)
			}
			return err
		},
		"peer_interval":         setDuration(&o.PeerInterval, minPeerInterval),
		"peer_timeout":          setDuration(&o.PeerTimeout, minPeerTimeout),
		"split_brain_threshold": setDuration(&o.SplitBrainThreshold, minPeerInterval),
		"peer_tsig":             setTSIGKey(&o.TSIG),
		"measure_remote":        setFlag(&o.MeasureRemote, true),
	}
}

// defaultPortAddrs reads the ADDR[:PORT] arguments of the option at c: IP addresses (IPv6 in
// brackets) or host names, each with an optional port, port if none. They are returned as
// host:port. With none, the option takes no argument, otherwise at least one.
func defaultPortAddrs(c *caddy.Controller, port int, none bool) ([]string, error) {
	name := c.Val()
	args := c.RemainingArgs()
	if len(args) == 0 && !none {
		return nil, c.Errf("%s: want at least one ADDRESS[:PORT]", name)
	}
	out := make([]string, 0, len(args))
	for _, a := range args {
		hp, err := withDefaultPort(a, port)
		if err != nil {
			return nil, c.Errf("%s: %q: %v", name, a, err)
		}
		out = append(out, hp)
	}
	return out, nil
}

// withDefaultPort returns a, an ADDR[:PORT], as host:port, with port when it has none.
func withDefaultPort(a string, port int) (string, error) {
	host, p := a, strconv.Itoa(port)
	if h, hp, err := net.SplitHostPort(a); err == nil {
		host, p = h, hp
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", errors.New("the port is not a number from 1 to 65535")
		}
	} else if strings.HasPrefix(a, "[") && strings.HasSuffix(a, "]") {
		host = a[1 : len(a)-1]
	} else if strings.Contains(a, ":") {
		return "", errors.New("not ADDRESS[:PORT] (write an IPv6 address in brackets: [2001:db8::1]:53)")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return "", errors.New("an address with a zone is not accepted")
		}
	} else if host == "" || config.CheckHostName(host) != nil {
		return "", errors.New("not an IP address or a host name")
	}
	return net.JoinHostPort(host, p), nil
}

// setTSIGKey is the row of a TSIG key (peer_tsig, heartbeat_tsig).
func setTSIGKey(dst **config.TSIGKey) optionFunc {
	return func(c *caddy.Controller) error {
		k, err := tsigKey(c)
		if err == nil {
			*dst = k
		}
		return err
	}
}

// tsigKey reads "OPTION NAME ALGORITHM SECRET" (peer_tsig, heartbeat_tsig).
func tsigKey(c *caddy.Controller) (*config.TSIGKey, error) {
	opt := c.Val()
	args := c.RemainingArgs()
	if len(args) != 3 {
		return nil, c.Errf("%s: want '%s NAME ALGORITHM SECRET', got %d arguments", opt, opt, len(args))
	}
	name, alg, secret := args[0], args[1], args[2]
	if err := config.CheckHostName(name); err != nil {
		return nil, c.Errf("%s: %q is not a key name: %v", opt, name, err)
	}
	algorithm, ok := tsigAlgorithms[strings.TrimSuffix(strings.ToLower(alg), ".")]
	if !ok {
		return nil, c.Errf("%s: unknown algorithm %q (valid: hmac-sha1, hmac-sha224, hmac-sha256, hmac-sha384, hmac-sha512)", opt, alg)
	}
	if b, err := base64.StdEncoding.DecodeString(secret); err != nil || len(b) == 0 {
		return nil, c.Errf("%s: the secret is not base64 (as 'tsig-keygen' or 'openssl rand -base64 32' write one)", opt)
	}
	return &config.TSIGKey{Name: config.CanonicalName(name), Algorithm: algorithm, Secret: secret}, nil
}
