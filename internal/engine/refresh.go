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
// as many parts as there are cores, the last on this goroutine; all are refreshed when it
// returns.
func refreshAll(recs []*catalog.Record) {
	parts := max(1, min(runtime.GOMAXPROCS(0), len(recs)/minRefreshPart))
	var wg sync.WaitGroup
	for i := range parts {
		part := recs[i*len(recs)/parts : (i+1)*len(recs)/parts]
		refresh := func() {
			for _, r := range part {
				r.Refresh()
			}
		}
		if i < parts-1 {
			wg.Go(refresh)
		} else {
			refresh()
		}
	}
	wg.Wait()
}
