// Package gctune keeps the garbage collector's headroom near a fixed number of bytes instead of
// a fixed share of the live heap.
//
// GOGC's headroom is a share of the live heap: at 100 the heap may double between collections.
// What the headroom buys is room for the allocations made between collections, and Meridian's
// allocation rate (query responses, probe results) does not grow with its live heap, which is
// mostly configuration and health state. A small deployment can afford to double its heap and
// collect less often; one with tens of thousands of health checks holds a live heap of about
// 80 MB that needs neither doubling nor growing by half. After every collection the tuner sets
// the GC percentage to Headroom divided by the live heap, within [MinPercent, MaxPercent].
//
// A configuration's load is the exception (Loading): it allocates several times the heap it
// leaves, and a percentage of 10 marked the growing heap every few megabytes, so while a load
// runs the percentage is LoadPercent.
package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// Headroom is the growth between collections the tuner aims for. Meridian allocates a few
	// megabytes a second with 30,000 health checks (probe results, metric scrapes), and about
	// 15 MB a second answering 50,000 queries a second: 16 MiB is a collection every few
	// seconds at most, each marking the live heap once.
	Headroom = 16 << 20
	// MinPercent and MaxPercent bound the GC percentage it sets: at most Go's default of 100,
	// at least 10 for very large heaps.
	MinPercent = 10
	MaxPercent = 100
	// LoadPercent is the GC percentage while a configuration loads (see Loading). Measured on
	// 100,000 records (bench/bigzone.sh), a start at the headroom's 10 % took 1.6 to 1.7
	// times as long as at 50, for 2 to 8 % less peak RSS; 100 saved a little more time for
	// 5 to 15 % more memory. After the load the percentage follows the live heap again, and
	// the load's garbage is returned to the system (Settle).
	LoadPercent = 50
)

// Percent returns the GC percentage that gives a live heap of live bytes headroom bytes of
// growth, within [lo, hi].
func Percent(live, headroom uint64, lo, hi int) int {
	if live == 0 {
		return hi
	}
	p := headroom * 100 / live
	switch {
	case p < uint64(lo):
		return lo
	case p > uint64(hi):
		return hi
	}
	return int(p)
}

// tuner re-arms itself after every collection until stopped.
type tuner struct {
	mu      sync.Mutex
	stopped bool
	percent int // the last percentage set; 0 before the first
	sample  []metrics.Sample
}

// sentinel is allocated unreachable so that its cleanup runs after the next collection.
type sentinel struct{ _ *int }

// Start sets the GC percentage now and after every collection, from the live heap the last
// collection found; the returned function stops it. The caller should not start it when the
// operator set GOGC.
func Start() (stop func()) {
	t := &tuner{sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.adjust()
	t.arm()
	running.Store(t)
	return func() {
		running.CompareAndSwap(t, nil)
		t.mu.Lock()
		t.stopped = true
		t.mu.Unlock()
	}
}

// running is the tuner Start started, nil when none runs (the operator set GOGC).
var running atomic.Pointer[tuner]

// loads counts the loads in flight (see Loading).
var loads atomic.Int32

// Loading sets the GC percentage to LoadPercent until done is called, at the end of a
// configuration's load; loads may overlap (the percentage follows the live heap again when the
// last one is done). It changes nothing when the tuner is not running.
func Loading() (done func()) {
	loads.Add(1)
	adjustRunning()
	var once sync.Once
	return func() {
		once.Do(func() {
			loads.Add(-1)
			adjustRunning()
		})
	}
}

// adjustRunning adjusts the running tuner's percentage, if a tuner runs.
func adjustRunning() {
	if t := running.Load(); t != nil {
		t.adjust()
	}
}

func (t *tuner) arm() {
	runtime.AddCleanup(&sentinel{}, func(t *tuner) {
		if t.adjust() {
			t.arm()
		}
	}, t)
}

// adjust sets the percentage for the current live heap; it reports false once stopped.
func (t *tuner) adjust() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	metrics.Read(t.sample)
	var live uint64
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	p := Percent(live, Headroom, MinPercent, MaxPercent)
	if loads.Load() > 0 {
		p = LoadPercent
	}
	if p != t.percent {
		debug.SetGCPercent(p)
		t.percent = p
	}
	return true
}

// settleDelay is how long after the last reload Settle returns memory to the system: reloads
// that come in bursts (an operator's edits, a deployment's files) return it once.
const settleDelay = 5 * time.Second

// settle is the timer of the pending return of memory.
var settle struct {
	sync.Mutex
	timer *time.Timer
}

// Settle returns the memory that the collector freed to the system settleDelay after the last
// call. A reload builds a whole new configuration and drops the old one: the heap shrinks back,
// but the runtime keeps the pages it grew into for a while, and after many reloads the
// process's RSS stayed half as large again as at its start. Calling it after each reload
// returns them once the reloads settle.
func Settle() {
	settle.Lock()
	defer settle.Unlock()
	if settle.timer != nil {
		settle.timer.Reset(settleDelay)
		return
	}
	settle.timer = time.AfterFunc(settleDelay, debug.FreeOSMemory)
}
