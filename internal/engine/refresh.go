package engine

import (
	"runtime"
	"sync"

	"github.com/meridian-gslb/meridian/internal/catalog"
)

// minRefreshPart is the fewest records that a part of refreshAll has: fewer are refreshed
// sooner than a goroutine starts.
const minRefreshPart = 8192

// refreshAll refreshes the views of recs (catalog.Record.Refresh, safe for concurrent use), in
// as many parts as there are cores; all are refreshed when it returns.
func refreshAll(recs []*catalog.Record) {
	parts := max(1, min(runtime.GOMAXPROCS(0), len(recs)/minRefreshPart))
	inParts(parts, func(i int) {
		for _, r := range recs[i*len(recs)/parts : (i+1)*len(recs)/parts] {
			r.Refresh()
		}
	})
}

// inParts runs part(i) for every i below parts, the last on this goroutine and the others on
// goroutines of their own, and returns when all have returned.
func inParts(parts int, part func(i int)) {
	var wg sync.WaitGroup
	for i := range parts - 1 {
		wg.Go(func() { part(i) })
	}
	part(parts - 1)
	wg.Wait()
}
