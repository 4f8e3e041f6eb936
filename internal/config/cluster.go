package config

// ClusterOptions are the Corefile's redis_* options: the Redis that instances of one
// deployment share health through.
type ClusterOptions struct {
	// Enable turns cluster mode on (redis_enable).
	Enable bool
}
