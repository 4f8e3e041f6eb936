package gslb

import (
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
		"redis_db":              func(c *caddy.Controller) error { return redisDB(c, o) },
		"redis_key_prefix":      setNonEmpty(&o.KeyPrefix, "prefix"),
		"redis_sync_mode":       func(c *caddy.Controller) error { return syncMode(c, o) },
		"redis_sentinel_master": setNonEmpty(&o.SentinelMaster, "name"),
		"redis_tls":             setFlag(&o.TLS.Enable, true),
		"redis_tls_ca":          func(c *caddy.Controller) error { return tlsCA(c, root, o) },
		"redis_tls_cert":        func(c *caddy.Controller) error { return clientCert(c, root, o) },
		"redis_tls_server_name": func(c *caddy.Controller) error { return tlsServerName(c, o) },
		"redis_quorum":          func(c *caddy.Controller) error { return quorumThreshold(c, &o.Quorum) },
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

// quorumThreshold reads "redis_quorum majority|N|P%".
func quorumThreshold(c *caddy.Controller, q *config.QuorumOptions) error {
	v, err := single(c)
	if err != nil {
		return err
	}
	if v == "majority" {
		q.Threshold = config.Threshold{}
		return nil
	}
	if p, ok := strings.CutSuffix(v, "%"); ok {
		if n, err := strconv.Atoi(p); err == nil && n >= 1 && n <= 100 {
			q.Threshold = config.Threshold{Percent: n}
			return nil
		}
		return c.Errf("redis_quorum: %q is not a percentage from 1%% to 100%%", v)
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 1 {
		q.Threshold = config.Threshold{Count: n}
		return nil
	}
	return c.Errf("redis_quorum: %q is not majority, a number of voters or a percentage", v)
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

func redisDB(c *caddy.Controller, o *config.ClusterOptions) error {
	v, err := single(c)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return c.Errf("redis_db: %q is not a database number (0 or more)", v)
	}
	o.DB = n
	return nil
}

func syncMode(c *caddy.Controller, o *config.ClusterOptions) error {
	v, err := single(c)
	if err != nil {
		return err
	}
	switch m := config.SyncMode(v); m {
	case config.SyncLock, config.SyncNone, config.SyncQuorum:
		o.SyncMode = m
		return nil
	default:
		return c.Errf("redis_sync_mode: %q is not lock, none or quorum", v)
	}
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
