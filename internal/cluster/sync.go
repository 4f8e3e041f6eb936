package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/meridian-gslb/meridian/internal/health"
)

const (
	// pingEvery is how long the subscription may be silent before a PING checks it; a PING
	// without answer for as long again drops the connection.
	pingEvery = 3 * time.Second
	// Reconnection attempts back off from minBackoff to maxBackoff.
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
	// readChunk is the most keys read in one round trip.
	readChunk = 500
)

// group is the checks of one interval, reconciled together once per interval.
type group struct {
	ids  []string
	next time.Time
}

// listen receives the channel's messages. It notices a lost connection (an error, or a PING
// left unanswered), retries with backoff, and re-reads every result key once the subscription
// is back, since messages were missed meanwhile.
func (c *Client) listen(subscribed bool) {
	defer c.wg.Done()
	c.mu.Lock()
	ps := c.ps
	c.mu.Unlock()
	pinged := false
	backoff := minBackoff
	for {
		msg, err := ps.ReceiveTimeout(c.ctx, pingEvery)
		if c.ctx.Err() != nil {
			return
		}
		if err != nil {
			if subscribed && isTimeout(err) {
				if !pinged && ps.Ping(c.ctx) == nil {
					pinged = true
					continue
				}
				if pinged { // silent for two periods: the connection is gone without saying so
					ps = c.resubscribe(ps)
				}
			}
			subscribed, pinged = false, false
			c.setDown(err)
			select {
			case <-c.ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			subscribed, pinged, backoff = true, false, minBackoff
			if c.setUp() {
				n := c.resync()
				c.log.Infof("cluster: Redis is back: subscribed again, re-read %d results", n)
			}
		case *redis.Pong:
			pinged = false
		case *redis.Message:
			pinged = false
			if s, vi, ok := c.decode([]byte(m.Payload), sourcePubSub); ok && c.apply(s, vi) {
				propagationDelay.Observe(time.Since(s.At).Seconds())
			}
		}
	}
}

// resubscribe replaces a subscription whose connection went silent.
func (c *Client) resubscribe(old *redis.PubSub) *redis.PubSub {
	_ = old.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ps = c.rdb.Subscribe(c.ctx, c.channels()...)
	return c.ps
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// resync reads the result key (in quorum mode the votes) of every watched check and applies
// what is newer. It returns how many results and votes it found.
func (c *Client) resync() int {
	c.mu.Lock()
	ids := slices.Collect(maps.Keys(c.checks))
	c.mu.Unlock()
	return c.fetch(ids, sourceReconcile, func(s health.Shared) { c.apply(s, voteInfo{}) })
}

// fetch reads what Redis holds for checks ids: their result keys, whose results it hands to
// fn, and in quorum mode the vote hashes of the probed checks instead, whose votes it records.
// It returns how many results and votes it found.
func (c *Client) fetch(ids []string, source string, fn func(health.Shared)) int {
	var votes []string
	if c.quorum() {
		results := ids[:0:0]
		for _, id := range ids {
			if c.isVote(id) {
				votes = append(votes, id)
			} else {
				results = append(results, id)
			}
		}
		ids = results
	}
	n := 0
	c.read(ids, source, func(s health.Shared) { n++; fn(s) })
	return n + c.readVotes(votes, source)
}

// reconcile re-reads the result keys (in quorum mode the votes) of each interval's checks once
// per interval, to heal messages lost on the way (pub/sub delivers at most once).
func (c *Client) reconcile() {
	defer c.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := time.Now()
		var due []string
		next := now.Add(time.Hour)
		c.mu.Lock()
		for interval, g := range c.groups {
			if !g.next.After(now) {
				due = append(due, g.ids...)
				g.next = now.Add(interval)
			}
			if g.next.Before(next) {
				next = g.next
			}
		}
		c.mu.Unlock()
		if len(due) > 0 && c.up.Load() {
			c.fetch(due, sourceReconcile, func(s health.Shared) { c.apply(s, voteInfo{}) })
		}
		timer.Reset(time.Until(next))
		select {
		case <-c.ctx.Done():
			return
		case <-c.poke:
		case <-timer.C:
		}
	}
}

// read gets the result keys of checks ids, readChunk per round trip, and calls fn with each
// result found that decode accepts.
func (c *Client) read(ids []string, source string, fn func(health.Shared)) {
	for chunk := range slices.Chunk(ids, readChunk) {
		ctx, cancel := context.WithTimeout(c.ctx, opTimeout)
		pipe := c.rdb.Pipeline()
		cmds := make([]*redis.StringCmd, len(chunk))
		for i, id := range chunk {
			cmds[i] = pipe.Get(ctx, c.keys.result(id))
		}
		_, _ = pipe.Exec(ctx)
		cancel()
		operationsTotal.WithLabelValues(opRead).Add(float64(len(chunk)))
		for i, cmd := range cmds {
			payload, err := cmd.Bytes()
			switch {
			case errors.Is(err, redis.Nil):
				continue // no result in the last two intervals
			case err != nil:
				c.failed(opRead, fmt.Errorf("%s: %w", c.keys.result(chunk[i]), err))
				continue
			}
			c.succeeded()
			if s, _, ok := c.decode(payload, source); ok {
				fn(s)
			}
		}
	}
}
