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
	// says otherwise: about 15 MB. A dashboard draws a few hundred; a configuration of
	// hundreds of thousands of checks would otherwise spend hundreds of megabytes on hours
	// nobody looks at.
	DefaultMaxHistories = 20000
)

// maxCount is where the counts of a bucket saturate: 255 results of each kind in an interval
// of HistoryBucket, a probe every 118 ms.
const maxCount = math.MaxUint8

// measuredCounts are the measured results of a history by bucket: the sum of their latencies
// in microseconds (saturating), and how many there are (saturating at maxCount: the sum then
// stops, so that the mean stays that of the results counted). A history allocates them at its
// first result, after the load that made the backend.
type measuredCounts struct {
	sums  [HistoryBuckets]uint32
	count [HistoryBuckets]uint8
}

// oddCounts are the counts of the results that are not measured passes, by bucket: the results
// without a latency (those another instance probed) and the failures. A history allocates them
// at the first such result and drops them once none is left in the hour: a backend that passes
// every probe it makes has none.
type oddCounts struct {
	unmeasured, failures [HistoryBuckets]uint8
}

// odd reports whether bucket i holds odd counts.
func (o *oddCounts) odd(i int) bool { return o.unmeasured[i]|o.failures[i] != 0 }

// change is one status change a backend keeps: when, to what, and why.
type change struct {
	at     time.Time
	to     Status
	reason string
}

// history is one backend's last hour: its results by bucket and its latest status changes. It
// is allocated with the backend (80 bytes: the fields below); its results take 640 bytes from
// its first (measuredCounts), 240 more while the hour holds results without a latency or
// failures (oddCounts), and 48 bytes a change kept, allocated as they come up to
// historyChanges (most backends change once or twice an hour, from unknown to their state; the
// reasons are shared with the manager's transitions). The manager's lock guards it.
type history struct {
	// measured are the counts of the measured results, nil before the first result; odd those
	// of the others, nil while the hour holds none, and oddBuckets how many buckets hold some.
	measured *measuredCounts
	odd      *oddCounts
	changes  []change // the ring of changes, grown to historyChanges
	// from is when the kept timeline starts, at status: when the history began (the backend
	// was created) or, once changes were dropped, the oldest change still known.
	from   time.Time
	status Status
	// newest is the bucket interval of the newest result (Unix time / HistoryBucket), 0 before
	// the first: the ring holds the HistoryBuckets intervals up to it, each at its interval
	// modulo HistoryBuckets, and the older ones are cleared as the newest moves on.
	newest     int32
	next, n    uint8 // the ring of changes: index of the next write, how many are kept
	oddBuckets uint8
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
		if h.measured == nil {
			h.measured = &measuredCounts{}
		} else {
			*h.measured = measuredCounts{}
		}
		h.odd, h.oddBuckets = nil, 0
		h.newest = slot
	case slot > h.newest:
		for s := h.newest + 1; s <= slot; s++ {
			h.clear(int(s) % HistoryBuckets) // the intervals without results since
		}
		h.newest = slot
	}
	i := int(slot) % HistoryBuckets
	if latency > 0 {
		if m := h.measured; m.count[i] < maxCount {
			m.count[i]++
			m.sums[i] = uint32(min(uint64(m.sums[i])+uint64(max(latency.Microseconds(), 1)), math.MaxUint32))
		}
	} else {
		h.count(i, false)
	}
	if !ok {
		h.count(i, true)
	}
}

// clear empties bucket i, and drops the odd counts when it held the last of them.
func (h *history) clear(i int) {
	h.measured.sums[i], h.measured.count[i] = 0, 0
	if h.odd == nil || !h.odd.odd(i) {
		return
	}
	h.odd.unmeasured[i], h.odd.failures[i] = 0, 0
	if h.oddBuckets--; h.oddBuckets == 0 {
		h.odd = nil
	}
}

// count adds one to bucket i's failures, or else to its results without a latency, saturating.
func (h *history) count(i int, failure bool) {
	if h.odd == nil {
		h.odd = &oddCounts{}
	}
	if !h.odd.odd(i) {
		h.oddBuckets++
	}
	c := &h.odd.unmeasured[i]
	if failure {
		c = &h.odd.failures[i]
	}
	if *c < maxCount {
		*c++
	}
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
		j := int(slot) % HistoryBuckets
		m := h.measured // not nil: the ring holds the slot
		s := Sample{Results: int(m.count[j])}
		if m.count[j] > 0 {
			s.Latency = time.Duration(m.sums[j]/uint32(m.count[j])) * time.Microsecond
		}
		if h.odd != nil {
			s.Results += int(h.odd.unmeasured[j])
			s.Failures = int(h.odd.failures[j])
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
