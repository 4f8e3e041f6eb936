package health

import (
	"math"
	"time"
)

// The history of a probed backend covers the last HistoryBuckets intervals of HistoryBucket:
// the last hour, in buckets aligned on the wall clock (Unix time divided by the bucket).
const (
	HistoryBucket  = 30 * time.Second
	HistoryBuckets = 120
	// historyChanges is how many of its latest status changes a backend keeps for its status
	// timeline. A backend that changed more often over the hour shows the latest ones: its
	// timeline starts at the oldest kept (History.From).
	historyChanges = 16
	// DefaultMaxHistories is how many backends keep a history unless Options.MaxHistories
	// says otherwise: about 25 MB. A dashboard draws a few hundred; a configuration of
	// hundreds of thousands of checks would otherwise spend hundreds of megabytes on hours
	// nobody looks at.
	DefaultMaxHistories = 20000
)

// bucket is what the results of one interval of HistoryBucket said (10 bytes: the history of
// each of tens of thousands of backends holds HistoryBuckets of them).
type bucket struct {
	sumUS    [2]uint16 // the sum of the measured latencies, in microseconds (saturating): high, low
	measured uint16    // how many results carried a latency (saturating, as the counts below)
	results  uint16
	failures uint16
}

// sum returns the bucket's sum of latencies, in microseconds.
func (b *bucket) sum() uint32 { return uint32(b.sumUS[0])<<16 | uint32(b.sumUS[1]) }

// add adds us microseconds to the bucket's sum, saturating.
func (b *bucket) add(us uint64) {
	v := uint32(min(uint64(b.sum())+us, math.MaxUint32))
	b.sumUS = [2]uint16{uint16(v >> 16), uint16(v)}
}

// change is one status change a backend keeps: when, to what, and why.
type change struct {
	at     time.Time
	to     Status
	reason string
}

// history is one backend's last hour: its results by bucket and its latest status changes. It
// is allocated with the backend: 1264 bytes (120 buckets of 10 bytes and the fields below),
// and 48 bytes a change kept, allocated as they come up to historyChanges (most backends change
// once or twice an hour, from unknown to their state; the reasons are shared with the
// manager's transitions). The manager's lock guards it.
type history struct {
	buckets [HistoryBuckets]bucket
	changes []change // the ring of changes, grown to historyChanges
	// from is when the kept timeline starts, at status: when the history began (the backend
	// was created) or, once changes were dropped, the oldest change still known.
	from   time.Time
	status Status
	// newest is the bucket interval of the newest result (Unix time / HistoryBucket), 0 before
	// the first: the ring holds the HistoryBuckets intervals up to it, each at its interval
	// modulo HistoryBuckets, and the older ones are cleared as the newest moves on.
	newest  int32
	next, n uint8 // the ring of changes: index of the next write, how many are kept
}

// newHistory returns the history of a backend that is at status from now.
func newHistory(now time.Time, status Status) *history {
	return &history{from: now, status: status}
}

// slotOf returns the bucket interval t falls in.
func slotOf(t time.Time) int32 {
	return int32(t.Unix() / int64(HistoryBucket/time.Second))
}

// holds reports whether the ring holds interval slot: neither newer than the newest result nor
// an hour older.
func (h *history) holds(slot int32) bool {
	return h.newest != 0 && slot <= h.newest && slot > h.newest-HistoryBuckets
}

// observe adds one result at now: whether it passed, and its latency (0: not measured, as for
// results another instance probed).
func (h *history) observe(now time.Time, ok bool, latency time.Duration) {
	if h == nil {
		return // the manager keeps no history (Options.History)
	}
	slot := slotOf(now)
	switch {
	case h.newest == 0 || slot <= h.newest-HistoryBuckets || slot-h.newest >= HistoryBuckets:
		// The first result, or a clock that moved an hour or more away: nothing kept stands.
		h.buckets = [HistoryBuckets]bucket{}
		h.newest = slot
	case slot > h.newest:
		for s := h.newest + 1; s <= slot; s++ {
			h.buckets[int(s)%HistoryBuckets] = bucket{} // the intervals without results since
		}
		h.newest = slot
	}
	b := &h.buckets[int(slot)%HistoryBuckets]
	b.results = addSat16(b.results, 1)
	if !ok {
		b.failures = addSat16(b.failures, 1)
	}
	if latency > 0 {
		b.measured = addSat16(b.measured, 1)
		b.add(uint64(max(latency.Microseconds(), 1)))
	}
}

func addSat16(v, d uint16) uint16 {
	if v > math.MaxUint16-d {
		return math.MaxUint16
	}
	return v + d
}

// change records a change of the backend's status to next at now, for reason. When the ring
// is full, the oldest change is dropped and the timeline starts at the next oldest.
func (h *history) change(now time.Time, next Status, reason string) {
	if h == nil {
		return
	}
	if h.n == historyChanges {
		oldest := h.changes[h.next]
		h.from, h.status = oldest.at, oldest.to
	}
	if c := (change{at: now, to: next, reason: reason}); len(h.changes) < historyChanges {
		h.changes = append(h.changes, c) // the ring is not full: h.next is its length
	} else {
		h.changes[h.next] = c
	}
	h.next = (h.next + 1) % historyChanges
	h.n = min(h.n+1, historyChanges)
}

// restart returns h for the backend that replaces its own at now, at status, because its
// checks changed: the hour goes on, with a change to status when it differs.
func (h *history) restart(now time.Time, status Status) *history {
	if h == nil {
		return nil
	}
	if last := h.last(); last != status {
		h.change(now, status, checksChanged)
	}
	return h
}

// checksChanged is the reason of the change of a backend whose checks changed: it starts over.
const checksChanged = "its checks changed"

// last returns the status of the latest change, or the status the timeline starts at.
func (h *history) last() Status {
	if h.n == 0 {
		return h.status
	}
	return h.changes[(int(h.next)-1+historyChanges)%historyChanges].to
}

// Sample is what the results of one bucket of a backend's history said.
type Sample struct {
	// Results is how many results arrived (0: none, the bucket is empty), and Failures how many
	// of them failed.
	Results, Failures int
	// Latency is the mean latency of the results that measured one (0 when none did).
	Latency time.Duration
}

// Change is one status change of a backend's history.
type Change struct {
	Time   time.Time
	To     Status
	Reason string
}

// History is a backend's last hour, for the dashboard: the results of its checks by bucket and
// its status timeline.
type History struct {
	// Record and Backend name the backend, as its Spec does.
	Record, Backend string
	// Start is the start of the first bucket; Samples hold HistoryBuckets buckets of
	// HistoryBucket from it, oldest first, the last one holding now.
	Start   time.Time
	Samples []Sample
	// From is where the status timeline starts, at Status, with Changes after it, oldest first:
	// Start, or later when the backend is younger than the hour or changed so often that its
	// older changes were not kept.
	From    time.Time
	Status  Status
	Changes []Change
}

// HistoryStart returns the start of the first bucket of the hour that ends at now.
func HistoryStart(now time.Time) time.Time {
	return time.Unix(int64(slotOf(now)-HistoryBuckets+1)*int64(HistoryBucket/time.Second), 0)
}

// view returns the hour of h that ends at now.
func (h *history) view(now time.Time) History {
	first := slotOf(now) - HistoryBuckets + 1
	out := History{Start: HistoryStart(now), Samples: make([]Sample, HistoryBuckets)}
	for i := range out.Samples {
		slot := first + int32(i)
		if !h.holds(slot) {
			continue
		}
		b := h.buckets[int(slot)%HistoryBuckets]
		s := Sample{Results: int(b.results), Failures: int(b.failures)}
		if b.measured > 0 {
			s.Latency = time.Duration(b.sum()/uint32(b.measured)) * time.Microsecond
		}
		out.Samples[i] = s
	}
	out.From, out.Status = h.from, h.status
	for i := range int(h.n) {
		c := h.changes[(int(h.next)-int(h.n)+i+historyChanges)%historyChanges]
		if c.at.Before(out.Start) {
			out.From, out.Status = c.at, c.to
			continue
		}
		out.Changes = append(out.Changes, Change{Time: c.at, To: c.to, Reason: c.reason})
	}
	if out.From.Before(out.Start) {
		out.From = out.Start
	}
	return out
}

// History returns the last hour of every probed backend, ending at now, by key (see
// SetHistory turns Options.History on or off for the next Sync, which gives the backends a
// history from then on or drops theirs: the admin API, the one reader, is enabled or disabled
// by a Corefile reload without making a new manager.
func (m *Manager) SetHistory(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.opts.History = on
}

// Details for which backends are probed).
func (m *Manager) History(now time.Time) map[string]History {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]History, len(m.backends))
	for _, b := range m.backends {
		hist := b.history()
		if hist == nil {
			continue
		}
		h := hist.view(now)
		h.Record, h.Backend = b.record, b.name
		out[b.key()] = h
	}
	return out
}
