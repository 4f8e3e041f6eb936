package gslb

import (
	"net"
	"strconv"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/cluster"
	"github.com/meridian-gslb/meridian/internal/config"
)

// parseClusterOption parses the redis_* option at c into o. It reports false for an option
// that is not one of them. Relative TLS file names are resolved against root; the TLS files are
// read here, so that a bad one is reported with its Corefile line.
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
	default:
		return false, nil
	}
	return true, err
}

// redisAddrs reads "redis_addr HOST:PORT..."; every line adds its addresses.
func redisAddrs(c *caddy.Controller, o *config.ClusterOptions) error {
	args := c.RemainingArgs()
	if len(args) == 0 {
		return c.Err("redis_addr: want at least one HOST:PORT")
	}
	for _, a := range args {
		host, port, err := net.SplitHostPort(a)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return c.Errf("redis_addr: %q is not HOST:PORT", a)
		}
	}
	o.Addrs = append(o.Addrs, args...)
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
	case config.SyncLock, config.SyncNone:
		o.SyncMode = m
		return nil
	case config.SyncQuorum:
		return c.Err("redis_sync_mode: quorum is reserved for quorum health, which this version does not have; use lock or none")
	default:
		return c.Errf("redis_sync_mode: %q is not lock or none", v)
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
	if _, err := cluster.TLSConfig(t); err != nil {
		return c.Errf("%v", err)
	}
	return nil
}
