package config

// Defaults of the cluster options, applied by ClusterOptions.WithDefaults.
const (
	DefaultRedisAddr      = "127.0.0.1:6379"
	DefaultRedisKeyPrefix = "gslb:"
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
	// SyncQuorum is reserved for quorum health (a later feature) and rejected for now.
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
	return o
}
