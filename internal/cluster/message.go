package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/meridian-gslb/meridian/internal/health"
)

// keyspace names the Redis keys and the channel under one key prefix. docs/cluster.md documents
// them for external agents: change both together.
type keyspace struct{ prefix string }

// result is the key holding the newest raw result of a check.
func (k keyspace) result(check string) string { return k.prefix + "health:" + check }

// lock is the key an instance sets to probe cycle n of a check.
func (k keyspace) lock(check string, n int64) string {
	return k.prefix + "lock:" + check + ":" + strconv.FormatInt(n, 10)
}

// channel is the pub/sub channel of raw results.
func (k keyspace) channel() string { return k.prefix + "health:updates" }

// votes is the hash holding the votes of cycle n of a check (quorum mode), one field per
// instance.
func (k keyspace) votes(check string, n int64) string {
	return k.prefix + "votes:" + check + ":" + strconv.FormatInt(n, 10)
}

// voteChannel is the pub/sub channel of votes (quorum mode).
func (k keyspace) voteChannel() string { return k.prefix + "votes:updates" }

// message is the JSON form of a raw result, the value of the result keys and the payload of the
// channel's messages.
type message struct {
	// Check is the check's id (for a passive backend, the backend's key).
	Check string `json:"check"`
	// Backends are the keys of the backends the check covers, for people reading Redis.
	Backends []string `json:"backends,omitempty"`
	// Status is, by backend key, the status ("up", "down", "unknown") of the check for the
	// backend at the instance that probed, after this result: what a starting instance takes
	// over. Optional.
	Status map[string]string `json:"status,omitempty"`
	// Cycle is the check's cycle, Unix time / interval; 0 lets the receiver derive it from Time.
	Cycle int64 `json:"cycle,omitempty"`
	OK    bool  `json:"ok"`
	// Reason is the probe's short explanation ("connect: connection refused").
	Reason string `json:"reason,omitempty"`
	// Time is when the probe finished, in Unix milliseconds.
	Time int64 `json:"time"`
	// Instance names who probed: a Meridian instance's id, or an agent's name.
	Instance string `json:"instance"`
	// Site is the voter's label (redis_site), in votes.
	Site string `json:"site,omitempty"`
	// Isolated marks a vote of an instance that failed most of its canaries: it counts in no
	// verdict.
	Isolated bool `json:"isolated,omitempty"`
	// Load is the backend's load the probe read (an http check's metric, a lua number), in
	// the backend's units; absent when it read none. An agent may publish one.
	Load *float64 `json:"load,omitempty"`
	// RTT is, in votes, the voter's probe round-trip time in milliseconds; absent when not
	// measured.
	RTT float64 `json:"rtt_ms,omitempty"`
}

// voteInfo is what a vote says beyond a result.
type voteInfo struct {
	site     string
	isolated bool
}

// encode returns the JSON message of s probed by instance; vi is empty for a result that is no
// vote.
func encode(s health.Shared, instance string, vi voteInfo) ([]byte, error) {
	m := message{Check: s.Check, Cycle: s.Cycle, OK: s.OK, Reason: s.Reason, Time: s.At.UnixMilli(), Instance: instance,
		Site: vi.site, Isolated: vi.isolated}
	if s.HasLoad && !math.IsNaN(s.Load) && !math.IsInf(s.Load, 0) {
		m.Load = &s.Load
	}
	if s.Latency > 0 {
		m.RTT = float64(s.Latency) / float64(time.Millisecond)
	}
	if len(s.Status) > 0 {
		m.Backends = slices.Sorted(maps.Keys(s.Status))
		m.Status = make(map[string]string, len(s.Status))
		for k, st := range s.Status {
			m.Status[k] = st.String()
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode the result of %s: %w", s.Check, err)
	}
	return b, nil
}

var errIncomplete = errors.New("check, time and instance are required")

// decode parses a message, a result or a vote. A missing cycle is derived from the time, with
// the check's interval (interval).
func decode(data []byte, interval func(check string) (time.Duration, bool)) (health.Shared, voteInfo, error) {
	var m message
	if err := json.Unmarshal(data, &m); err != nil {
		return health.Shared{}, voteInfo{}, fmt.Errorf("decode a result: %w", err)
	}
	if m.Check == "" || m.Time <= 0 || m.Instance == "" {
		return health.Shared{}, voteInfo{}, fmt.Errorf("decode a result of %q: %w", m.Check, errIncomplete)
	}
	s := health.Shared{Check: m.Check, Cycle: m.Cycle, OK: m.OK, Reason: m.Reason, At: time.UnixMilli(m.Time), Instance: m.Instance}
	if m.RTT > 0 && m.RTT < float64(time.Hour/time.Millisecond) {
		s.Latency = time.Duration(m.RTT * float64(time.Millisecond))
	}
	if m.Load != nil {
		s.HasLoad, s.Load = true, *m.Load
		if *m.Load < 0 {
			s.Load = math.NaN() // not a load: unknown, as a check that read one treats it
		}
	}
	if len(m.Status) > 0 {
		s.Status = make(map[string]health.Status, len(m.Status))
		for k, v := range m.Status {
			switch v {
			case "up":
				s.Status[k] = health.Up
			case "down":
				s.Status[k] = health.Down
			}
		}
	}
	if s.Cycle <= 0 {
		if d, ok := interval(m.Check); ok {
			s.Cycle = s.At.UnixNano() / int64(d)
		}
	}
	return s, voteInfo{site: m.Site, isolated: m.Isolated}, nil
}
