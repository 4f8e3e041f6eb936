package gslb

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
)

// clusterOptions is the table of the redis_* options, and of probe_source (this instance's
// vantage point), which set o. Relative TLS file names are resolved against root; the TLS files
// are read here, so that a bad one is reported with its Corefile line.
func clusterOptions(o *config.ClusterOptions, root string) optionTable {
	return optionTable{
		"redis_enable":          setFlag(&o.Enable, true),
		"redis_addr":            func(c *caddy.Controller) error { return redisAddrs(c, o) },
		"redis_password":        setString(&o.Password),
		"redis_username":        setString(&o.Username),
		"redis_db":              setParsed(&o.DB, redisDB),
		"redis_key_prefix":      setNonEmpty(&o.KeyPrefix, "prefix"),
		"redis_sync_mode":       setParsed(&o.SyncMode, syncMode),
		"redis_sentinel_master": setNonEmpty(&o.SentinelMaster, "name"),
		"redis_tls":             setFlag(&o.TLS.Enable, true),
		"redis_tls_ca":          func(c *caddy.Controller) error { return tlsCA(c, root, o) },
		"redis_tls_cert":        func(c *caddy.Controller) error { return clientCert(c, root, o) },
		"redis_tls_server_name": func(c *caddy.Controller) error { return tlsServerName(c, o) },
		"redis_quorum":          setParsed(&o.Quorum.Threshold, quorumThreshold),
		"redis_min_voters":      setPositive(&o.Quorum.MinVoters),
		"redis_site":            setNonEmpty(&o.Quorum.Site, "label"),
		"redis_canary":          func(c *caddy.Controller) error { return canaries(c, &o.Quorum) },
		"redis_canary_interval": setDuration(&o.Quorum.CanaryInterval, minCanaryInterval),
		"probe_source":          func(c *caddy.Controller) error { return probeSources(c, o) },
	}
}

// redisAddrs reads "redis_addr HOST:PORT..."; every line adds its addresses.
func redisAddrs(c *caddy.Controller, o *config.ClusterOptions) error {
	args, err := hostPorts(c)
	o.Addrs = append(o.Addrs, args...)
	return err
}

// canaries reads "redis_canary HOST:PORT..."; every line adds its addresses.
func canaries(c *caddy.Controller, q *config.QuorumOptions) error {
	addrs, err := hostPorts(c)
	q.Canaries = append(q.Canaries, addrs...)
	return err
}

// hostPorts reads the HOST:PORT arguments of the option at c, at least one.
func hostPorts(c *caddy.Controller) ([]string, error) {
	name := c.Val()
	args := c.RemainingArgs()
	if len(args) == 0 {
		return nil, c.Errf("%s: want at least one HOST:PORT", name)
	}
	for _, a := range args {
		host, port, err := net.SplitHostPort(a)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return nil, c.Errf("%s: %q is not HOST:PORT", name, a)
		}
	}
	return args, nil
}

// minCanaryInterval is the shortest redis_canary_interval.
const minCanaryInterval = 100 * time.Millisecond

// quorumThreshold parses redis_quorum's "majority|N|P%".
func quorumThreshold(v string) (config.Threshold, error) {
	if v == "majority" {
		return config.Threshold{}, nil
	}
	if p, ok := strings.CutSuffix(v, "%"); ok {
		if n, err := strconv.Atoi(p); err == nil && n >= 1 && n <= 100 {
			return config.Threshold{Percent: n}, nil
		}
		return config.Threshold{}, fmt.Errorf("%q is not a percentage from 1%% to 100%%", v)
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 1 {
		return config.Threshold{Count: n}, nil
	}
	return config.Threshold{}, fmt.Errorf("%q is not majority, a number of voters or a percentage", v)
}

// probeSources reads "probe_source ADDRESS [ADDRESS]": IP addresses of this host, at most one
// per address family.
func probeSources(c *caddy.Controller, o *config.ClusterOptions) error {
	args := c.RemainingArgs()
	if len(args) == 0 || len(args) > 2 {
		return c.Errf("probe_source: want one address, or one IPv4 and one IPv6 address, got %d arguments", len(args))
	}
	var out []netip.Addr
	for _, a := range args {
		ip, err := netip.ParseAddr(a)
		if err != nil || ip.Zone() != "" {
			return c.Errf("probe_source: %q is not an IP address", a)
		}
		ip = ip.Unmap()
		for _, prev := range out {
			if prev.Is4() == ip.Is4() {
				return c.Errf("probe_source: %s and %s are of the same address family", prev, ip)
			}
		}
		out = append(out, ip)
	}
	o.ProbeSources = out
	return nil
}

// redisDB parses a Redis database number, 0 or more.
func redisDB(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a database number (0 or more)", v)
	}
	return n, nil
}

// syncMode parses redis_sync_mode's lock, none or quorum.
func syncMode(v string) (config.SyncMode, error) {
	switch m := config.SyncMode(v); m {
	case config.SyncLock, config.SyncNone, config.SyncQuorum:
		return m, nil
	}
	return "", fmt.Errorf("%q is not lock, none or quorum", v)
}

// clientCert reads "redis_tls_cert CERT KEY": the pair is named, and checked, on one line.
func clientCert(c *caddy.Controller, root string, o *config.ClusterOptions) error {
	args := c.RemainingArgs()
	if len(args) != 2 {
		return c.Errf("redis_tls_cert: want 'redis_tls_cert CERT_FILE KEY_FILE', got %d arguments", len(args))
	}
	o.TLS.Cert, o.TLS.Key = resolve(root, args[0]), resolve(root, args[1])
	return checkTLS(c, o.TLS)
}

// tlsCA reads "redis_tls_ca FILE", and checks the TLS files named so far.
func tlsCA(c *caddy.Controller, root string, o *config.ClusterOptions) error {
	f, err := single(c)
	if err != nil {
		return err
	}
	o.TLS.CA = resolve(root, f)
	return checkTLS(c, o.TLS)
}

// tlsServerName reads "redis_tls_server_name NAME", and checks the TLS files named so far.
func tlsServerName(c *caddy.Controller, o *config.ClusterOptions) error {
	name, err := single(c)
	if err != nil {
		return err
	}
	o.TLS.ServerName = name
	return checkTLS(c, o.TLS)
}

// checkTLS reads the TLS files named so far, reporting a problem at the current line.
func checkTLS(c *caddy.Controller, t config.ClusterTLS) error {
	if err := engine.CheckRedisTLS(t); err != nil {
		return c.Errf("%v", err)
	}
	return nil
}
