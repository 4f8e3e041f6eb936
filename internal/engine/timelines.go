package engine

import (
	"time"

	"github.com/meridian-gslb/meridian/internal/cluster"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/timeline"
)

// learnedWindow is how far from a change another instance's learning of the same change may
// be and still count as that change's: a result reaches the fleet within milliseconds, a
// cycle later is another change.
const learnedWindow = time.Minute

// fleet returns what the failover timelines ask of the block's cluster, nil without cluster
// mode.
func (e *Engine) fleet() timeline.Fleet {
	if e.shared.cluster == nil {
		return nil
	}
	return clusterFleet{e.shared.cluster}
}

// clusterFleet is the cluster client as the failover timelines' Fleet.
type clusterFleet struct{ c *cluster.Client }

// NoteLearned implements timeline.Fleet.
func (f clusterFleet) NoteLearned(tr health.Transition) {
	f.c.NoteLearned(tr.Key, tr.To.String(), tr.Time)
}

// LearnedBy implements timeline.Fleet.
func (f clusterFleet) LearnedBy(key string, to health.Status, changed time.Time) []timeline.Learned {
	var out []timeline.Learned
	for id, l := range f.c.LearnedBy(key) {
		if d := l.At.Sub(changed); l.To == to.String() && d > -learnedWindow && d < learnedWindow {
			out = append(out, timeline.Learned{By: "instance " + id, At: l.At})
		}
	}
	return out
}
