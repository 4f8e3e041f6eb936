package catalog

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/meridian-gslb/meridian/internal/health"
)

// What queries count of a record (answers, their selection times, the backends they carry;
// CoreDNS-GSLB's metrics read them), and what a reload carries from the old snapshot's
// records to the new one's: those counts and the last-known-good backends.

// queryCounts are the counters of one record that queries write.
type queryCounts struct {
	answered [2]resolutions  // by failed: answered, answered with the fail-closed rcode
	selected []atomic.Uint64 // by the backend's index in Record.Backends: answers carrying it
	// ttl is, by backend, the TTLs of the answers carrying it, summed; countries the same by
	// client country and backend, allocated at the first answer whose country is known
	// (traffic.go).
	ttl       []atomic.Uint64
	countries atomic.Pointer[[]atomic.Uint64]
}

// queryCounts returns the record's counters, allocating them at the first call.
func (r *Record) queryCounts() *queryCounts {
	if c := r.counts.Load(); c != nil {
		return c
	}
	c := &queryCounts{selected: make([]atomic.Uint64, len(r.Backends)), ttl: make([]atomic.Uint64, len(r.Backends))}
	if r.counts.CompareAndSwap(nil, c) {
		return c
	}
	return r.counts.Load()
}

// resolutionBounds are the upper bounds of the resolution histogram: health.CheckBuckets
// (Prometheus's default buckets, CoreDNS-GSLB's), as durations.
var resolutionBounds = func() (b [11]time.Duration) {
	secs := health.CheckBuckets()
	if len(secs) != len(b) {
		panic("catalog: the resolution buckets are not health.CheckBuckets")
	}
	for i, s := range secs {
		b[i] = time.Duration(s * float64(time.Second))
	}
	return b
}()

// resolutions is the histogram of one result's address answers: each answer counted once, in
// the first bucket whose bound is not below the time its selection took (the last one counts
// the longer ones), and the sum of those times.
type resolutions struct {
	buckets [len(resolutionBounds) + 1]atomic.Uint64
	nanos   atomic.Uint64
}

// observe counts one answer whose selection took d.
func (h *resolutions) observe(d time.Duration) {
	i := 0
	for i < len(resolutionBounds) && d > resolutionBounds[i] {
		i++
	}
	h.buckets[i].Add(1)
	h.nanos.Add(uint64(max(d, 0)))
}

// count returns the answers counted.
func (h *resolutions) count() uint64 {
	var n uint64
	for i := range h.buckets {
		n += h.buckets[i].Load()
	}
	return n
}

// add adds o's counts to h.
func (h *resolutions) add(o *resolutions) {
	for i := range h.buckets {
		h.buckets[i].Add(o.buckets[i].Load())
	}
	h.nanos.Add(o.nanos.Load())
}

// CountAnswer counts one address answer of the record, whose selection took d: failed when
// fail-closed answered with its rcode. Two atomic adds (and, the first time, the counters'
// allocation): the query path calls it.
func (r *Record) CountAnswer(failed bool, d time.Duration) {
	i := 0
	if failed {
		i = 1
	}
	r.queryCounts().answered[i].observe(d)
}

// Answers returns the counts of CountAnswer: answered, and failed.
func (r *Record) Answers() (answered, failed uint64) {
	c := r.counts.Load()
	if c == nil {
		return 0, 0
	}
	return c.answered[0].count(), c.answered[1].count()
}

// Resolutions returns the histogram of the answers that failed or not: the count of each
// bucket of health.CheckBuckets (not cumulative; one more counts the longer ones), and the sum
// of the selection times in seconds.
func (r *Record) Resolutions(failed bool) (buckets []uint64, seconds float64) {
	var h *resolutions
	if c := r.counts.Load(); c == nil {
		h = &resolutions{}
	} else if h = &c.answered[0]; failed {
		h = &c.answered[1]
	}
	buckets = make([]uint64, len(h.buckets))
	for i := range h.buckets {
		buckets[i] = h.buckets[i].Load()
	}
	return buckets, time.Duration(h.nanos.Load()).Seconds()
}

// CountSelected counts one address answer of the record that carried b, one of its backends,
// with the TTL ttl, for a client of country (an ISO code; "" when not known): in b's answers
// and its traffic (traffic.go).
func (r *Record) CountSelected(b *Backend, ttl uint32, country string) {
	if c := r.queryCounts(); int(b.index) < len(c.selected) && r.Backends[b.index] == b {
		c.selected[b.index].Add(1)
		c.countTraffic(r, b, ttl, country)
	}
}

// Selected returns the count of CountSelected for b, one of the record's backends.
func (r *Record) Selected(b *Backend) uint64 {
	if c := r.counts.Load(); c != nil && int(b.index) < len(c.selected) && r.Backends[b.index] == b {
		return c.selected[b.index].Load()
	}
	return 0
}

// CarryCounts adds the query counts of old's records and backends to those of s with the same
// name and key, so that a reload does not reset them, and each record's last-known-good
// backends. Queries that old answers after the call are not carried.
func (s *Snapshot) CarryCounts(old *Snapshot) {
	if old == nil {
		return
	}
	records := make(map[string]*Record, len(old.records))
	selected := make(map[string][2]uint64) // by backend key, the answers and traffic that are not 0
	for _, r := range old.records {
		records[r.Name()] = r
		for _, b := range r.Backends {
			if n := r.Selected(b); n > 0 {
				selected[b.Key()] = [2]uint64{n, r.Traffic(b)}
			}
		}
	}
	for _, r := range s.records {
		if o := records[r.Name()]; o != nil {
			if oc := o.counts.Load(); oc != nil {
				c := r.queryCounts()
				c.answered[0].add(&oc.answered[0])
				c.answered[1].add(&oc.answered[1])
			}
			r.carryLastGood(o)
		}
		if len(selected) > 0 {
			r.carrySelected(selected)
		}
	}
}

// carrySelected adds to the counts of CountSelected of r's backends (answers and traffic)
// those of selected, by key.
func (r *Record) carrySelected(selected map[string][2]uint64) {
	var buf [128]byte
	for _, b := range r.Backends {
		if n := selected[string(b.AppendKey(buf[:0]))]; n[0] > 0 {
			c := r.queryCounts()
			c.selected[b.index].Add(n[0])
			c.ttl[b.index].Add(n[1])
		}
	}
}

// carryLastGood gives r, when none of its backends was healthy yet, the last-known-good
// backends of o, its previous version, that r still has; and refreshes r when that changed
// its answer.
func (r *Record) carryLastGood(o *Record) {
	if r.extra == nil || o.extra == nil {
		return // one of them has no last-known-good backends to carry or to take
	}
	r.refreshMu.Lock()
	carried := false
	for f := range r.extra.lastGood {
		if len(r.extra.lastGood[f]) > 0 {
			continue
		}
		o.refreshMu.Lock()
		old := o.extra.lastGood[f]
		o.refreshMu.Unlock()
		for _, ob := range old {
			if i := slices.IndexFunc(r.Backends, func(b *Backend) bool { return sameKey(b, ob) }); i >= 0 {
				r.extra.lastGood[f] = append(r.extra.lastGood[f], r.Backends[i])
				carried = true
			}
		}
	}
	r.refreshMu.Unlock()
	if carried {
		r.Refresh()
	}
}
