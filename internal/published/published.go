// Package published holds what the sites of one service tell each other over DNS, and how a
// site judges what it read: the names a site publishes (localtargets-<record>,
// localrtt-<record>, heartbeat-<site>), the formats of their TXT strings, the rule that turns
// a site's freshness and its lists into backend statuses, and the view of the other sites
// that the admin API shows. The catalog and the answers serve these names; the sites and
// heartbeats sources read them. It imports nothing of Meridian's but the health words.
package published

import "github.com/meridian-gslb/meridian/internal/health"

// The first labels of the names a site publishes, followed by a record's name or the site's.
const (
	// LocalTargetsPrefix starts the name that serves the A and AAAA records of a record's
	// healthy backends of this site: localtargets-<record name>, k8gb's name.
	LocalTargetsPrefix = "localtargets-"
	// LocalRTTPrefix starts the name under which a site publishes its RTTs to a record's
	// backends (measure_remote): localrtt-<record name>, TXT, one string per backend.
	LocalRTTPrefix = "localrtt-"
	// HeartbeatPrefix starts the label of a site's heartbeat name: heartbeat-<site>.
	HeartbeatPrefix = "heartbeat-"
)

// Status is the status of another site's backend from what its site published, the rule of
// the sites' transports (peers and heartbeats): while the site is fresh, up when it lists the
// backend and down otherwise; once it is stale, stale when it last listed the backend (served
// only when nothing else is) and down otherwise.
func Status(fresh, listed bool) health.Status {
	switch {
	case fresh && listed:
		return health.Up
	case !fresh && listed:
		return health.Stale
	}
	return health.Down
}
