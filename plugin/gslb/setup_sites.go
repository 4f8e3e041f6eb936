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

// parseSitesOption parses the sites option at c (site, peers, peers_from_ns, peer_interval,
// peer_timeout, split_brain_threshold, peer_tsig, measure_remote) into o. It reports false for an option that
// is not one of them. port is the port this server block listens on, which the peers found
// from the NS set are asked on (0: unknown, the default port).
func parseSitesOption(c *caddy.Controller, o *config.SitesOptions, port int) (bool, error) {
	var err error
	switch c.Val() {
	case "site":
		if o.Site, err = single(c); err == nil {
			if cerr := config.CheckSiteName(o.Site); cerr != nil {
				err = c.Errf("%v", cerr)
			}
		}
	case "peers":
		var addrs []string
		if addrs, err = defaultPortAddrs(c, config.DefaultPeerPort, false); err == nil {
			o.Peers = append(o.Peers, addrs...)
		}
	case "peers_from_ns":
		var addrs []string
		if addrs, err = defaultPortAddrs(c, dnsPort, true); err == nil {
			o.PeersFromNS, o.PeerPort = true, port
			o.NSServers = append(o.NSServers, addrs...)
		}
	case "peer_interval":
		err = duration(c, &o.PeerInterval, minPeerInterval)
	case "peer_timeout":
		err = duration(c, &o.PeerTimeout, minPeerTimeout)
	case "split_brain_threshold":
		err = duration(c, &o.SplitBrainThreshold, minPeerInterval)
	case "peer_tsig":
		o.TSIG, err = tsigKey(c)
	case "measure_remote":
		err = flag(c, &o.MeasureRemote, true)
	default:
		return false, nil
	}
	return true, err
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
