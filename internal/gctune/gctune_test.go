package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, MaxPercent},             // nothing measured yet
		{4 * mib, MaxPercent},       // small heaps may double
		{16 * mib, MaxPercent},      // exactly the headroom
		{32 * mib, 50},              // half
		{100 * mib, 16},             // 30,000 health checks
		{1024 * mib, MinPercent},    // very large heaps keep a tenth
		{1 << 40, MinPercent},       // no overflow
		{Headroom * 100 / 40, 40},   // in between
		{Headroom*100/40 + 1, 39},   // rounds down
		{Headroom * 100 / 11, 11},   // just above the floor
		{Headroom*100/10 + mib, 10}, // at the floor
		{Headroom * 100 / 99, 99},   // just below the ceiling
		{Headroom*100/101 + 1, 100}, // at the ceiling
	} {
		if got := Percent(tc.live, Headroom, MinPercent, MaxPercent); got != tc.want {
			t.Errorf("Percent(%d MiB) = %d, want %d", tc.live/mib, got, tc.want)
		}
	}
}

// gogc reads the GC percentage in effect.
func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// liveHeap is kept reachable by the tests that grow the live heap.
var liveHeap [][]byte

// growLiveHeap makes the live heap about 128 MiB larger (the tuner then wants about 12%),
// until the test drops liveHeap.
func growLiveHeap() {
	for range 128 {
		liveHeap = append(liveHeap, make([]byte, 1<<20))
	}
}

func TestStartFollowsTheLiveHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	stop := Start()
	defer stop()
	// A live heap of about 128 MiB wants about 12%; dropped again, the ceiling.
	growLiveHeap()
	waitPercent(t, func(p uint64) bool { return p <= 15 })
	liveHeap = nil
	waitPercent(t, func(p uint64) bool { return p == MaxPercent })

	// Stopped, it no longer changes the percentage.
	stop()
	runtime.GC()
	debug.SetGCPercent(77)
	for range 128 {
		liveHeap = append(liveHeap, make([]byte, 1<<20))
	}
	runtime.GC()
	runtime.GC()
	liveHeap = nil
	if p := gogc(); p != 77 {
		t.Fatalf("a stopped tuner set GOGC to %d", p)
	}
}

// TestLoadingRaisesThePercentage: while loads run the percentage is LoadPercent, whatever the
// live heap; after the last one it follows the heap again; without a tuner nothing changes.
func TestLoadingRaisesThePercentage(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	stop := Start()
	defer stop()
	growLiveHeap()
	defer func() { liveHeap = nil }()
	waitPercent(t, func(p uint64) bool { return p <= 15 })

	first, second := Loading(), Loading()
	if p := gogc(); p != LoadPercent {
		t.Fatalf("GC percentage %d while loading, want %d", p, LoadPercent)
	}
	runtime.GC() // the tuner's adjustment after a collection keeps it too
	waitPercent(t, func(p uint64) bool { return p == LoadPercent })
	first()
	first() // done twice counts once
	if p := gogc(); p != LoadPercent {
		t.Fatalf("GC percentage %d while a load still runs, want %d", p, LoadPercent)
	}
	second()
	if p := gogc(); p > 15 {
		t.Fatalf("GC percentage %d after the loads, want the live heap's (at most 15)", p)
	}

	stop()
	debug.SetGCPercent(77)
	Loading()()
	if p := gogc(); p != 77 {
		t.Fatalf("Loading without a tuner set GOGC to %d", p)
	}
}

// waitPercent collects until the GC percentage satisfies ok; cleanups run after a collection,
// on their own goroutine, so it polls with a deadline.
func waitPercent(t *testing.T, ok func(uint64) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(gogc()) {
		if time.Now().After(deadline) {
			t.Fatalf("GC percentage stayed at %d", gogc())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSettleDebounces: calls in a burst arm one timer, which a later call pushes back.
func TestSettleDebounces(t *testing.T) {
	Settle()
	settle.Lock()
	first := settle.timer
	settle.Unlock()
	Settle()
	settle.Lock()
	second := settle.timer
	settle.Unlock()
	if first == nil || first != second {
		t.Errorf("a burst of Settle calls armed %p then %p, want one timer", first, second)
	}
}
