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

// parseClusterOption parses the redis_* option (or probe_source, this instance's vantage point)
// at c into o. It reports false for an option that is not one of them. Relative TLS file names
// are resolved against root; the TLS files are read here, so that a bad one is reported with
// its Corefile line.
func parseClusterOption(c *caddy.Controller, root string, o *config.ClusterOptions) (bool, error) {
	name := c.Val()
	var err error
	switch name {
	case "redis_enable":
		err = flag(c, &o.Enable, true)
	case "redis_addr":
		err = redisAddrs(c, o)
	case "redis_password":
		o.Password, err = single(c)
	case "redis_username":
		o.Username, err = single(c)
	case "redis_db":
		err = redisDB(c, o)
	case "redis_key_prefix":
		if o.KeyPrefix, err = single(c); err == nil && o.KeyPrefix == "" {
			err = c.Err("redis_key_prefix: the prefix must not be empty")
		}
	case "redis_sync_mode":
		err = syncMode(c, o)
	case "redis_sentinel_master":
		if o.SentinelMaster, err = single(c); err == nil && o.SentinelMaster == "" {
			err = c.Err("redis_sentinel_master: the name must not be empty")
		}
	case "redis_tls":
		err = flag(c, &o.TLS.Enable, true)
	case "redis_tls_ca":
		var f string
		if f, err = single(c); err == nil {
			o.TLS.CA = resolve(root, f)
			err = checkTLS(c, o.TLS)
		}
	case "redis_tls_cert":
		err = clientCert(c, root, o)
	case "redis_tls_server_name":
		if o.TLS.ServerName, err = single(c); err == nil {
			err = checkTLS(c, o.TLS)
		}
	case "redis_quorum":
		err = quorumThreshold(c, &o.Quorum)
	case "redis_min_voters":
		err = positive(c, &o.Quorum.MinVoters)
	case "redis_site":
		if o.Quorum.Site, err = single(c); err == nil && o.Quorum.Site == "" {
			err = c.Err("redis_site: the label must not be empty")
		}
	case "redis_canary":
		var addrs []string
		if addrs, err = hostPorts(c); err == nil {
			o.Quorum.Canaries = append(o.Quorum.Canaries, addrs...)
		}
	case "redis_canary_interval":
		err = duration(c, &o.Quorum.CanaryInterval, minCanaryInterval)
	case "probe_source":
		err = probeSources(c, o)
	default:
		return false, nil
	}
	return true, err
}

// redisAddrs reads "redis_addr HOST:PORT..."; every line adds its addresses.
func redisAddrs(c *caddy.Controller, o *config.ClusterOptions) error {
	args, err := hostPorts(c)
	o.Addrs = append(o.Addrs, args...)
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

// checkTLS reads the TLS files named so far, reporting a problem at the current line.
func checkTLS(c *caddy.Controller, t config.ClusterTLS) error {
	if err := engine.CheckRedisTLS(t); err != nil {
		return c.Errf("%v", err)
	}
	return nil
}
