package health

import (
	"sync/atomic"
	"time"
)

// Activity is whether a record is queried, for the probes of idle records (Options.IdleTimeout,
// IdleMultiplier): queries mark it (Mark), and the scheduler takes the mark and keeps when it
// last saw one, in the same word. It lives in the record (catalog.Record) rather than in a map
// of the manager's: a big zone has hundreds of thousands of records, and the word fills the
// padding the record's flag left. Its zero value is unmarked and not seen yet.
type Activity struct {
	// v holds the mark in its lowest bit, and above it when the scheduler last saw a mark (or
	// was first given the record): nanoseconds since clockBase, plus one, so that 0 is never.
	v atomic.Int64
}

// clockBase is the origin of the times Activity keeps: a reading of the monotonic clock, which
// idleness is measured on.
var clockBase = time.Now()

// Mark notes that the record was queried. It writes only when the mark is clear, so that
// queries on every core do not contend for the cache line.
func (a *Activity) Mark() {
	if a.v.Load()&1 == 0 {
		a.v.Or(1)
	}
}

// Queried reports whether the record was queried since the scheduler last looked.
func (a *Activity) Queried() bool { return a.v.Load()&1 != 0 }

// since returns now as an Activity keeps times.
func since(now time.Time) int64 { return int64(now.Sub(clockBase)) + 1 }

// start notes that the manager was given the record at now, unless it was before.
func (a *Activity) start(now time.Time) {
	for {
		v := a.v.Load()
		if v>>1 != 0 || a.v.CompareAndSwap(v, since(now)<<1|v&1) {
			return
		}
	}
}

// idleFor returns how long before now the record was last seen queried: it takes the mark, if
// any (the record was queried: seen now), and returns 0 then.
func (a *Activity) idleFor(now time.Time) time.Duration {
	for {
		v := a.v.Load()
		if v&1 == 0 {
			return time.Duration(since(now) - v>>1)
		}
		if a.v.CompareAndSwap(v, since(now)<<1) {
			return 0
		}
	}
}
