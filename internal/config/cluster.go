package config

import (
	"fmt"
	"net/netip"
	"time"
)

// Defaults of the cluster options, applied by ClusterOptions.WithDefaults.
const (
	DefaultRedisAddr      = "127.0.0.1:6379"
	DefaultRedisKeyPrefix = "gslb:"
	// DefaultMinVoters is redis_min_voters: with fewer fresh voters, an instance in quorum
	// mode decides from its own results.
	DefaultMinVoters = 2
	// DefaultCanaryInterval is redis_canary_interval: how often the canaries are checked.
	DefaultCanaryInterval = 5 * time.Second
)

// SyncMode is how the instances of a cluster share the probing of each check.
type SyncMode string

// The sync modes.
const (
	// SyncLock: per check and cycle, the instance that takes a Redis lock probes and publishes;
	// the others apply its result.
	SyncLock SyncMode = "lock"
	// SyncNone: every instance probes every cycle and publishes its result.
	SyncNone SyncMode = "none"
	// SyncQuorum: every instance probes every cycle and publishes its result as a vote; each
	// derives the same verdict from the fleet's fresh votes.
	SyncQuorum SyncMode = "quorum"
)

// ClusterOptions are the Corefile's redis_* options: the Redis that instances of one
// deployment share health through. Zero values mean the defaults (see WithDefaults).
type ClusterOptions struct {
	// Enable turns cluster mode on (redis_enable).
	Enable bool
	// Addrs are Redis addresses, host:port (redis_addr): one server, the Sentinels when
	// SentinelMaster is set, or the seed nodes of a Redis Cluster when there are several.
	Addrs []string
	// SentinelMaster names the primary the Sentinels at Addrs watch (redis_sentinel_master).
	SentinelMaster string
	// Username and Password authenticate (redis_username for an ACL user, redis_password).
	Username, Password string
	// DB is the database number (redis_db); Redis Cluster has only 0.
	DB int
	// KeyPrefix starts every key and the channel name (redis_key_prefix).
	KeyPrefix string
	// SyncMode is redis_sync_mode.
	SyncMode SyncMode
	// TLS encrypts the connections to Redis (and to the Sentinels).
	TLS ClusterTLS
	// Quorum tunes quorum mode (redis_quorum, redis_min_voters, redis_site, redis_canary...).
	Quorum QuorumOptions
	// ProbeSources are the local addresses this instance's probes and canaries leave from
	// (probe_source), at most one per address family; none lets the system choose.
	ProbeSources []netip.Addr
}

// QuorumOptions are the options of quorum mode. Zero values mean the defaults.
type QuorumOptions struct {
	// Threshold is how many fresh voters must say down for a down verdict (redis_quorum).
	Threshold Threshold
	// MinVoters is the fewest fresh voters a verdict needs (redis_min_voters); with fewer,
	// the instance falls back to its own result.
	MinVoters int
	// Site labels this instance's votes (redis_site), for people reading them.
	Site string
	// Canaries are HOST:PORT targets this instance connects to, to check its own vantage
	// point (redis_canary); when most fail it is isolated and its votes do not count.
	Canaries []string
	// CanaryInterval is how often the canaries are checked (redis_canary_interval).
	CanaryInterval time.Duration
}

// Threshold is redis_quorum: a majority of the fresh voters (the zero value), a number of
// them, or a percentage of them.
type Threshold struct {
	// Count is a number of voters; Percent a percentage (1 to 100). Both 0: a majority.
	Count, Percent int
}

// Needed returns how many of voters must say down for a down verdict: more than half of
// them, Count (or all of them when there are fewer), or Percent of them rounded up. It is at
// least 1.
func (t Threshold) Needed(voters int) int {
	switch {
	case t.Count > 0:
		return max(min(t.Count, voters), 1)
	case t.Percent > 0:
		return max((voters*t.Percent+99)/100, 1)
	default:
		return voters/2 + 1
	}
}

// String returns the threshold as redis_quorum writes it.
func (t Threshold) String() string {
	switch {
	case t.Count > 0:
		return fmt.Sprint(t.Count)
	case t.Percent > 0:
		return fmt.Sprintf("%d%%", t.Percent)
	default:
		return "majority"
	}
}

// ClusterTLS are the redis_tls options. Files are read when the client starts.
type ClusterTLS struct {
	// Enable turns TLS on (redis_tls); any other field implies it.
	Enable bool
	// CA is a PEM bundle of the authorities that sign the server's certificate
	// (redis_tls_ca); empty means the system's.
	CA string
	// Cert and Key are the client's certificate and key, PEM, for mutual TLS (redis_tls_cert
	// CERT KEY).
	Cert, Key string
	// ServerName is the name the server's certificate must have (redis_tls_server_name);
	// empty means the host of the address dialed.
	ServerName string
}

// On reports whether TLS is in use.
func (t ClusterTLS) On() bool {
	return t.Enable || t.CA != "" || t.Cert != "" || t.ServerName != ""
}

// WithDefaults returns o with the defaults of unset fields filled in.
func (o ClusterOptions) WithDefaults() ClusterOptions {
	if len(o.Addrs) == 0 {
		o.Addrs = []string{DefaultRedisAddr}
	}
	if o.KeyPrefix == "" {
		o.KeyPrefix = DefaultRedisKeyPrefix
	}
	if o.SyncMode == "" {
		o.SyncMode = SyncLock
	}
	if o.Quorum.MinVoters == 0 {
		o.Quorum.MinVoters = DefaultMinVoters
	}
	if o.Quorum.CanaryInterval == 0 {
		o.Quorum.CanaryInterval = DefaultCanaryInterval
	}
	return o
}
