package cluster

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// learnedTTL is how long the fleet keeps when each instance learned a backend's last change.
const learnedTTL = time.Hour

// learned is the hash of when each instance learned a backend's last change (one field per
// instance: "STATUS UNIXNANOS"), which the failover timelines read.
func (k keyspace) learned(backend string) string { return k.prefix + "learned:" + backend }

// Learned is when one instance learned a backend's change, and to what.
type Learned struct {
	To string
	At time.Time
}

// NoteLearned writes to the fleet that this instance changed the backend with key to status
// to at at. It waits for Redis (at most the operation timeout): call it beside the health
// manager, never in it.
func (c *Client) NoteLearned(key, to string, at time.Time) {
	ctx, cancel := context.WithTimeout(c.ctx, opTimeout)
	defer cancel()
	k := c.keys.learned(key)
	pipe := c.rdb.TxPipeline()
	pipe.HSet(ctx, k, c.id, to+" "+strconv.FormatInt(at.UnixNano(), 10))
	pipe.Expire(ctx, k, learnedTTL)
	operationsTotal.WithLabelValues(opLearned).Inc()
	if _, err := pipe.Exec(ctx); err != nil {
		c.failed(opLearned, err)
	}
}

// LearnedBy returns when each other instance last learned a change of the backend with key,
// and to what, by instance id.
func (c *Client) LearnedBy(key string) map[string]Learned {
	ctx, cancel := context.WithTimeout(c.ctx, opTimeout)
	defer cancel()
	operationsTotal.WithLabelValues(opLearned).Inc()
	fields, err := c.rdb.HGetAll(ctx, c.keys.learned(key)).Result()
	if err != nil {
		c.failed(opLearned, err)
		return nil
	}
	out := make(map[string]Learned, len(fields))
	for id, v := range fields {
		to, nanos, ok := strings.Cut(v, " ")
		n, err := strconv.ParseInt(nanos, 10, 64)
		if id == c.id || !ok || err != nil {
			continue
		}
		out[id] = Learned{To: to, At: time.Unix(0, n)}
	}
	return out
}
