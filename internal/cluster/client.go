package cluster

import (
	"github.com/redis/go-redis/v9"

	"github.com/meridian-gslb/meridian/internal/config"
)

// NewRedisClient returns a go-redis client of the cluster options o (defaults applied), named
// name in Redis's CLIENT LIST, with the same deployment kind, TLS, timeouts and retries as the
// health client's. It is for the other users of cluster mode's Redis, such as the overrides
// store. It does not connect; it fails when the TLS files of o cannot be used. go-redis's own
// log lines, of every client, go to log from then on (rate-limited, see redisLog).
func NewRedisClient(o config.ClusterOptions, name string, log Logger) (redis.UniversalClient, error) {
	return newClient(o.WithDefaults(), name, log)
}
