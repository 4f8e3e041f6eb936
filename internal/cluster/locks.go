package cluster

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/meridian-gslb/meridian/internal/health"
)

const (
	// opQueue bounds the claims and publications waiting for the writer.
	opQueue = 8192
	// opBatch is the most operations the writer sends in one round trip.
	opBatch = 512
	// waitMargin is what a loser waits for the winner's result beyond the probe timeout: the
	// winner's claim, publication and the message's way here.
	waitMargin = 250 * time.Millisecond
	// minLockTTL is the shortest lock: a lock of a short interval must not expire before its
	// winner's probe has started.
	minLockTTL = 2 * time.Second
)

// op is one operation for the writer: a claim of a turn's lock, or the publication of a result
// or a vote.
type op struct {
	turn *health.Turn
	// The publication: the result key (or the vote hash), its value (also the message) and TTL.
	key     string
	payload []byte
	ttl     time.Duration
	// vote marks a vote: the value goes to this instance's field of the hash, and the message
	// to the votes channel.
	vote bool
}

// wait is a lost turn waiting for the winner's result.
type wait struct {
	turn  *health.Turn
	timer *time.Timer
}

// lockTTL returns the TTL of the lock of a cycle: half the interval, at least minLockTTL.
func lockTTL(interval time.Duration) time.Duration { return max(interval/2, minLockTTL) }

// write sends the claims and publications, those queued at the same moment in one pipeline.
func (c *Client) write() {
	defer c.wg.Done()
	batch := make([]op, 0, opBatch)
	for {
		select {
		case <-c.ctx.Done():
			return
		case o := <-c.ops:
			batch = append(batch[:0], o)
		}
	drain:
		for len(batch) < opBatch {
			select {
			case o := <-c.ops:
				batch = append(batch, o)
			default:
				break drain
			}
		}
		c.exec(batch)
		clear(batch)
	}
}

// exec runs one batch in one round trip and acts on each reply.
func (c *Client) exec(batch []op) {
	ctx, cancel := context.WithTimeout(c.ctx, opTimeout)
	defer cancel()
	ctx, span := otel.Tracer("meridian/cluster").Start(ctx, "redis pipeline",
		trace.WithAttributes(attribute.Int("gslb.operations", len(batch))))
	defer span.End()
	pipe := c.rdb.Pipeline()
	claims := make([]*redis.BoolCmd, len(batch))
	writes := make([][]redis.Cmder, len(batch))
	for i, o := range batch {
		switch {
		case o.turn != nil:
			claims[i] = pipe.SetNX(ctx, c.keys.lock(o.turn.Check.ID, o.turn.Cycle), c.id, lockTTL(o.turn.Check.Interval))
		case o.vote:
			writes[i] = []redis.Cmder{
				pipe.HSet(ctx, o.key, c.id, o.payload),
				pipe.PExpire(ctx, o.key, o.ttl),
				pipe.Publish(ctx, c.keys.voteChannel(), o.payload),
			}
		default:
			writes[i] = []redis.Cmder{pipe.Set(ctx, o.key, o.payload, o.ttl), pipe.Publish(ctx, c.keys.channel(), o.payload)}
		}
	}
	_, _ = pipe.Exec(ctx) // every command carries its own error
	for i, o := range batch {
		if o.turn != nil {
			operationsTotal.WithLabelValues(opClaim).Inc()
			c.claimed(o.turn, claims[i])
			continue
		}
		kind := opPublish
		if o.vote {
			kind = opVote
		}
		operationsTotal.WithLabelValues(kind).Inc()
		if err := firstErr(writes[i]); err != nil {
			c.failed(kind, err)
		} else {
			c.succeeded()
		}
	}
}

// firstErr returns the first error of cmds, nil when all succeeded.
func firstErr(cmds []redis.Cmder) error {
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			return err
		}
	}
	return nil
}

// claimed acts on the reply to a turn's claim: the winner probes and publishes, a loser waits
// for the winner's result, and a failed claim probes here without publishing.
func (c *Client) claimed(t *health.Turn, cmd *redis.BoolCmd) {
	won, err := cmd.Result()
	switch {
	case err != nil:
		c.failed(opClaim, err)
		localProbesTotal.WithLabelValues("claim_error").Inc()
		t.Probe(false)
	case won:
		c.succeeded()
		locksTotal.WithLabelValues("won").Inc()
		t.Probe(true)
	default:
		c.succeeded()
		locksTotal.WithLabelValues("lost").Inc()
		c.wait(t)
	}
}

// wait holds a lost turn open until the winner's result of its cycle arrives, by pub/sub or
// reconcile, or until the probe timeout and waitMargin pass; then expire reads the key.
func (c *Client) wait(t *health.Turn) {
	w := &wait{turn: t}
	c.mu.Lock()
	if c.ctx.Err() != nil { // closing: Close ends the turns it finds, not this one
		c.mu.Unlock()
		t.End()
		return
	}
	c.waits[t.Check.ID] = w
	w.timer = time.AfterFunc(t.Check.Timeout+waitMargin, func() { c.expire(w) })
	c.mu.Unlock()
	// The result may have come before the wait was registered.
	if t.Settled() && c.take(w) {
		w.timer.Stop()
		t.End()
	}
}

// take removes w from the waits; it reports false when someone else did first.
func (c *Client) take(w *wait) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waits[w.turn.Check.ID] != w {
		return false
	}
	delete(c.waits, w.turn.Check.ID)
	return true
}

// settle ends the wait of check when a result of its cycle or a later one was received.
func (c *Client) settle(check string, cycle int64) {
	c.mu.Lock()
	w := c.waits[check]
	if w == nil || cycle < w.turn.Cycle {
		c.mu.Unlock()
		return
	}
	delete(c.waits, check)
	c.mu.Unlock()
	w.timer.Stop()
	w.turn.End()
}

// expire ends a wait that no message settled: it reads the result key once (a message may have
// been missed) and probes here when the cycle's result is not there either.
func (c *Client) expire(w *wait) {
	if !c.take(w) {
		return
	}
	c.read([]string{w.turn.Check.ID}, sourceKey, func(s health.Shared) { c.recv.Receive(s) })
	if w.turn.Settled() {
		w.turn.End()
		return
	}
	localProbesTotal.WithLabelValues("no_result").Inc()
	w.turn.Probe(false)
}
