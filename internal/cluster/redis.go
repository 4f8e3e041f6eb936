package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/meridian-gslb/meridian/internal/config"
)

// Timeouts of Redis operations. They are short: a slow Redis must not hold up probing, which
// falls back to local probes.
const (
	dialTimeout = 2 * time.Second
	opTimeout   = 2 * time.Second
)

// TLSConfig returns the TLS configuration of the redis_tls options, nil when TLS is off. It
// reads and checks the files they name.
func TLSConfig(t config.ClusterTLS) (*tls.Config, error) {
	if !t.On() {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CA != "" {
		pem, err := os.ReadFile(t.CA)
		if err != nil {
			return nil, fmt.Errorf("redis_tls_ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("redis_tls_ca: no PEM certificate in %s", t.CA)
		}
	}
	if t.Cert != "" {
		cert, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("redis_tls_cert: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// newClient returns the go-redis client of o (with defaults applied): a Sentinel-backed
// failover client when o names a Sentinel master, a Redis Cluster client for several
// addresses, a plain client otherwise. It does not connect. go-redis's own log lines go to log
// (rate-limited, see redisLog), or to the Logger of an earlier client when log is nil.
func newClient(o config.ClusterOptions, name string, log Logger) (redis.UniversalClient, error) {
	tlsConfig, err := TLSConfig(o.TLS)
	if err != nil {
		return nil, err
	}
	logRedisTo(log)
	return redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:      o.Addrs,
		MasterName: o.SentinelMaster,
		Username:   o.Username,
		Password:   o.Password,
		DB:         o.DB,
		ClientName: name,
		TLSConfig:  tlsConfig,
		// RESP2: pub/sub, Sentinel and every Redis version since 2.8 speak it.
		Protocol:              2,
		DialTimeout:           dialTimeout,
		ReadTimeout:           opTimeout,
		WriteTimeout:          opTimeout,
		ContextTimeoutEnabled: true,
		// No retries: a failed lock or read falls back to a local probe at once, and a
		// retried SET NX whose reply was lost would read as a lost lock.
		MaxRetries:    -1,
		DialerRetries: 1,
	}), nil
}

// describe names the deployment o connects to, for the log.
func describe(o config.ClusterOptions) string {
	addrs := strings.Join(o.Addrs, ",")
	switch {
	case o.SentinelMaster != "":
		return fmt.Sprintf("primary %q of the Sentinels at %s", o.SentinelMaster, addrs)
	case len(o.Addrs) > 1:
		return "Redis Cluster at " + addrs
	default:
		return "Redis at " + addrs
	}
}
