package gslb

import (
	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/config"
)

// parseClusterOption parses the redis_* option at c into o. It reports false for an option
// that is not one of them.
func parseClusterOption(c *caddy.Controller, root string, o *config.ClusterOptions) (bool, error) {
	_, _, _ = c, root, o
	return false, nil
}
