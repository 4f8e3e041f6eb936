package fastpath

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestBusyLoopsYield: a loop that serves yields its processor every yieldEvery (see
// loop.run); after one query alone, at most once.
func TestBusyLoopsYield(t *testing.T) {
	var yields atomic.Int32
	defer func(f func()) { yield = f }(yield)
	yield = func() {
		yields.Add(1)
		runtime.Gosched()
	}
	addr := freeUDP(t)
	s := startEcho(t, addr)
	defer s.Close(nil)
	ask(t, addr, "fwake") // one query: a yield is due once yieldEvery has passed in serving
	if n := yields.Load(); n > 1 {
		t.Errorf("%d yields after one query, want at most 1", n)
	}
	stop := loadFast(t, addr, 2, 0)
	deadline := time.Now().Add(5 * time.Second)
	for yields.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if lost, _ := stop(); lost > 0 {
		t.Errorf("%d queries lost", lost)
	}
	if n := yields.Load(); n < 3 {
		t.Errorf("%d yields in 5 s of serving, want one every %v", n, yieldEvery)
	}
}
