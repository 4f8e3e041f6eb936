package config

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestChunkedParseKeepsNoTrees parses a zone of many chunks and watches the live heap after
// every collection meanwhile: what a parse may keep is the records it made, not the YAML trees
// of the chunks behind it (a parser's buffer that held on to them made the live heap of a
// 30,000-check load grow to 140 MB through it, where it stays near 30 MB).
func TestChunkedParseKeepsNoTrees(t *testing.T) {
	if testing.Short() {
		t.Skip("parses 30,000 backends")
	}
	var zone strings.Builder
	zone.WriteString("records:\n")
	for r := range 10000 {
		fmt.Fprintf(&zone, "  r%d.example.org.:\n    scrape_interval: 10s\n    backends:\n", r)
		for b := range 3 {
			i := r*3 + b
			fmt.Fprintf(&zone, "      - {address: 127.0.0.1, port: %d, healthchecks: [{type: tcp, params: {port: %d, send: \"c%d\", expect: pong}}]}\n", 10000+i%50000, 20000+i%200, i)
		}
	}
	data := []byte(zone.String())
	defer debug.SetGCPercent(debug.SetGCPercent(20)) // collections every few megabytes
	runtime.GC()
	base := liveHeap()
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // polls the live heap of the last collection while the parse runs
		defer close(done)
		for {
			if l := liveHeap(); l > peak.Load() {
				peak.Store(l)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	z, err := ParseZone("big.yml", data, "example.org.", nil, 1)
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	kept := liveHeap() - base
	runtime.KeepAlive(z)
	grew := peak.Load() - min(peak.Load(), base)
	t.Logf("live heap during the parse up to %d MB over the start, %d MB kept", grew>>20, kept>>20)
	// The records keep about 1.4 KB each (docs/benchmarks.md); a chunk's trees in flight, a
	// few MB. 4.8 KB a record is room for both on any build, and half of what the parse grew
	// to while it kept the trees behind it.
	if limit := uint64(10000 * 4800); grew > limit {
		t.Errorf("the live heap grew by %d MB during the parse (limit %d MB), for %d MB of records kept: the parse keeps what it is done with", grew>>20, limit>>20, kept>>20)
	}
}

// liveHeap returns the live heap the last collection found.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
