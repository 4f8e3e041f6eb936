package cluster

// Quorum mode: every instance probes every cycle of every check and publishes its raw result as
// a vote. Each instance keeps the fresh votes of each check and, once a cycle's vote window has
// ended (the check's phase, its probe timeout and voteMargin into the cycle), derives one
// verdict from them, which the manager applies through its rise/fall machines. Instances that
// see the same votes take the same verdicts, and so reach the same states.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// voteMargin is how long a cycle's verdict waits for votes beyond the probe timeout: the
// voters' publications and the messages' way here.
const voteMargin = waitMargin

// ballot is what this instance knows of the votes on one check.
type ballot struct {
	check health.Check
	// votes holds each voter's votes of the newest cycle decided and the later ones, oldest
	// first, by instance.
	votes   map[string][]ballotVote
	decided int64                 // the newest cycle decided
	timers  map[int64]*time.Timer // the verdicts waiting for the end of their vote window
}

// ballotVote is one vote on one cycle of a check.
type ballotVote struct {
	cycle int64
	vote  health.Vote
	// status holds the voter's statuses of the check's backends when it voted, which an
	// instance that starts takes over.
	status map[string]health.Status
}

// decideAt returns when the vote window of cycle n ends.
func (b *ballot) decideAt(n int64) time.Time {
	ch := b.check
	return time.Unix(0, n*int64(ch.Interval)+int64(ch.Phase+ch.Timeout+voteMargin))
}

// fresh returns the votes that count in the verdict of cycle n, sorted by instance: each
// voter's newest vote on cycle n or n-1, so that a vote expires two intervals after its cycle
// began.
func (b *ballot) fresh(n int64) []ballotVote {
	var out []ballotVote
	for _, list := range b.votes {
		for i := len(list) - 1; i >= 0; i-- {
			if v := list[i]; v.cycle <= n {
				if v.cycle >= n-1 {
					out = append(out, v)
				}
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b ballotVote) int { return strings.Compare(a.vote.Instance, b.vote.Instance) })
	return out
}

// prune forgets the votes on cycles before n, which count in no verdict after n's.
func (b *ballot) prune(n int64) {
	for id, list := range b.votes {
		i, _ := slices.BinarySearchFunc(list, n, func(v ballotVote, n int64) int { return cmp.Compare(v.cycle, n) })
		if i == len(list) {
			delete(b.votes, id) // a voter that stopped, or lost Redis
			continue
		}
		b.votes[id] = list[i:]
	}
}

// tally derives the verdict on cycle n of check from its fresh votes. Votes of isolated
// instances do not count. With at least minVoters usable votes, the backend is down when at
// least t.Needed of them say down, up otherwise. With fewer, the verdict is degraded: this
// instance's own vote (self) decides, or when it has none that counts, the same rule over the
// usable votes. Without a usable vote the check is unknown. It reports whether the verdict is
// degraded.
func tally(check string, n int64, fresh []ballotVote, self string, t config.Threshold, minVoters int) (health.Verdict, bool) {
	v := health.Verdict{Check: check, Cycle: n, Status: health.Up}
	usable, down := 0, 0
	var own *health.Vote
	var downReason string
	for i, bv := range fresh {
		v.Votes = append(v.Votes, bv.vote)
		if bv.vote.Isolated {
			continue
		}
		usable++
		if bv.vote.Instance == self {
			own = &fresh[i].vote
		}
		if !bv.vote.OK {
			down++
			if downReason == "" {
				downReason = bv.vote.Reason
			}
		}
	}
	switch {
	case len(fresh) == 0:
		v.Status, v.Reason = health.Unknown, "no fresh vote"
		return v, true
	case usable == 0:
		v.Status, v.Reason = health.Unknown, fmt.Sprintf("no usable vote: the %d fresh voters are isolated", len(fresh))
		return v, true
	case usable < minVoters && own != nil:
		if !own.OK {
			v.Status = health.Down
		}
		v.Reason = fmt.Sprintf("too few voters (%d of %d), own result: %s", usable, minVoters, own.Reason)
		return v, true
	}
	need := t.Needed(usable)
	v.Reason = fmt.Sprintf("%d of %d voters down (%d needed)", down, usable, need)
	if down >= need {
		v.Status = health.Down
		if downReason != "" {
			v.Reason += ": " + downReason
		}
	}
	if usable < minVoters {
		v.Reason = fmt.Sprintf("too few voters (%d of %d), ", usable, minVoters) + v.Reason
		return v, true
	}
	return v, false
}

// isVote reports whether a result of check is a vote: in quorum mode, of a probed check run
// here.
func (c *Client) isVote(check string) bool {
	if !c.quorum() {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.checks[check]
	return ok && !ch.Passive
}

// vote records this instance's vote s, and has the writer publish it: into this instance's
// field of the cycle's hash, which lives three intervals, and on the votes channel. Without
// Redis the vote counts here only.
func (c *Client) vote(s health.Shared) {
	vi := voteInfo{site: c.opts.Quorum.Site, isolated: c.isolated.Load()}
	s.Instance = c.id
	if !c.record(s, vi) || !c.up.Load() {
		return
	}
	payload, err := encode(s, c.id, vi)
	if err != nil {
		errorsTotal.WithLabelValues(opVote).Inc()
		return
	}
	select {
	case c.ops <- op{key: c.keys.votes(s.Check, s.Cycle), payload: payload, ttl: 3 * c.interval(s.Check), vote: true}:
	default:
		errorsTotal.WithLabelValues(opVote).Inc()
	}
}

// record keeps a vote on a watched probed check, and schedules the verdict on its cycle at the
// end of the cycle's vote window (at once when that has passed). It reports false for a vote
// that is known already, or too old to count in any verdict still to come.
func (c *Client) record(s health.Shared, vi voteInfo) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.checks[s.Check]
	if !ok || ch.Passive || c.ctx.Err() != nil {
		return false
	}
	b := c.ballots[s.Check]
	if b == nil {
		b = &ballot{check: ch, votes: make(map[string][]ballotVote), timers: make(map[int64]*time.Timer)}
		c.ballots[s.Check] = b
	}
	if s.Cycle < b.decided {
		return false
	}
	bv := ballotVote{cycle: s.Cycle, status: s.Status,
		vote: health.Vote{Instance: s.Instance, Site: vi.site, OK: s.OK, Reason: s.Reason, At: s.At, Isolated: vi.isolated, Latency: s.Latency}}
	list := b.votes[s.Instance]
	i, found := slices.BinarySearchFunc(list, s.Cycle, func(v ballotVote, n int64) int { return cmp.Compare(v.cycle, n) })
	if found {
		if !s.At.After(list[i].vote.At) {
			return false
		}
		list[i] = bv
	} else {
		list = slices.Insert(list, i, bv)
	}
	b.votes[s.Instance] = list
	if n, id := s.Cycle, s.Check; n > b.decided && b.timers[n] == nil {
		b.timers[n] = time.AfterFunc(time.Until(b.decideAt(n)), func() { c.decide(id, n) })
	}
	return true
}

// decide takes the verdict on cycle n of check, and has the manager apply it.
func (c *Client) decide(check string, n int64) {
	c.mu.Lock()
	b := c.ballots[check]
	if b == nil || n <= b.decided {
		if b != nil {
			delete(b.timers, n)
		}
		c.mu.Unlock()
		return
	}
	b.decided = n
	for m, t := range b.timers {
		if m <= n {
			t.Stop()
			delete(b.timers, m)
		}
	}
	v, degraded := tally(check, n, b.fresh(n), c.id, c.opts.Quorum.Threshold, c.opts.Quorum.MinVoters)
	b.prune(n)
	c.setDegradedLocked(check, degraded, v.Reason)
	c.mu.Unlock()
	verdictsTotal.WithLabelValues(v.Status.String()).Inc()
	c.recv.Decide(v)
}

// setDegradedLocked notes whether the newest verdict on check had too few voters. The first
// degraded check of a series is logged, and the end of the series.
func (c *Client) setDegradedLocked(check string, degraded bool, reason string) {
	if c.degraded[check] == degraded {
		return
	}
	if degraded {
		c.degraded[check] = true
		degradedGauge.Inc()
		if len(c.degraded) == 1 {
			c.log.Warningf("quorum: check %s: %s; checks with fewer than %d fresh voters are decided from this instance's own results (further ones are only counted)",
				check, reason, c.opts.Quorum.MinVoters)
		}
		return
	}
	delete(c.degraded, check)
	degradedGauge.Dec()
	if len(c.degraded) == 0 {
		c.log.Infof("quorum: every check has enough voters again")
	}
}

// dropBallotsLocked forgets the votes and verdicts of the checks not in keep (of every check
// when keep is nil).
func (c *Client) dropBallotsLocked(keep map[string]health.Check) {
	for id, b := range c.ballots {
		if _, ok := keep[id]; ok {
			continue
		}
		for _, t := range b.timers {
			t.Stop()
		}
		delete(c.ballots, id)
		if c.degraded[id] {
			delete(c.degraded, id)
			degradedGauge.Dec()
		}
	}
}

// readVotes reads the votes on the current and the previous cycle of each of the checks ids
// (readChunk hashes per round trip) and records them. It returns how many it recorded.
func (c *Client) readVotes(ids []string, source string) int {
	recorded := 0
	for chunk := range slices.Chunk(ids, readChunk/2) {
		now := time.Now()
		ctx, cancel := context.WithTimeout(c.ctx, opTimeout)
		pipe := c.rdb.Pipeline()
		var keys []string
		var cmds []*redis.MapStringStringCmd
		for _, id := range chunk {
			interval := c.interval(id)
			if interval == 0 {
				continue
			}
			n := now.UnixNano() / int64(interval)
			for _, cycle := range []int64{n - 1, n} {
				keys = append(keys, c.keys.votes(id, cycle))
				cmds = append(cmds, pipe.HGetAll(ctx, keys[len(keys)-1]))
			}
		}
		if len(cmds) > 0 {
			_, _ = pipe.Exec(ctx)
		}
		cancel()
		operationsTotal.WithLabelValues(opRead).Add(float64(len(cmds)))
		for i, cmd := range cmds {
			fields, err := cmd.Result()
			if err != nil {
				c.failed(opRead, fmt.Errorf("%s: %w", keys[i], err))
				continue
			}
			c.succeeded()
			for _, payload := range fields {
				if s, vi, ok := c.decode([]byte(payload), source); ok && c.record(s, vi) {
					recorded++
				}
			}
		}
	}
	return recorded
}

// seedVotes returns, for each of the checks ids that has one, the newest usable vote that
// carries its voter's statuses: a starting instance takes them over, as of the cycle before the
// vote's (whose verdict the voter had applied when it voted).
func (c *Client) seedVotes(ids []string) []health.Shared {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []health.Shared
	for _, id := range ids {
		b := c.ballots[id]
		if b == nil {
			continue
		}
		var best *ballotVote
		for _, list := range b.votes {
			for i := range list {
				bv := &list[i]
				if bv.vote.Isolated || len(bv.status) == 0 {
					continue
				}
				if best == nil || bv.cycle > best.cycle || (bv.cycle == best.cycle && bv.vote.At.After(best.vote.At)) {
					best = bv
				}
			}
		}
		if best != nil {
			out = append(out, health.Shared{Check: id, Status: best.status, Cycle: best.cycle - 1, OK: best.vote.OK,
				Reason: best.vote.Reason, At: best.vote.At, Instance: best.vote.Instance})
		}
	}
	return out
}

// describeVantage describes the quorum options and the probe sources, for the start-up log.
func (c *Client) describeVantage() string {
	var b strings.Builder
	if c.quorum() {
		q := c.opts.Quorum
		fmt.Fprintf(&b, ", quorum %s of at least %d fresh voters", q.Threshold, q.MinVoters)
		if q.Site != "" {
			fmt.Fprintf(&b, ", site %q", q.Site)
		}
		if len(q.Canaries) > 0 {
			fmt.Fprintf(&b, ", %d canaries every %s", len(q.Canaries), q.CanaryInterval)
		}
	}
	if len(c.opts.ProbeSources) > 0 {
		fmt.Fprintf(&b, ", probes from %v", c.opts.ProbeSources)
	}
	return b.String()
}
