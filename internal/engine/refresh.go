package engine

import (
	"runtime"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/parts"
)

// minRefreshPart is the fewest records that a part of refreshAll has: fewer are refreshed
// sooner than a goroutine starts.
const minRefreshPart = 8192

// refreshAll refreshes the views of recs (catalog.Record.Refresh, safe for concurrent use), in
// as many parts as there are cores; all are refreshed when it returns.
func refreshAll(recs []*catalog.Record) {
	n := max(1, min(runtime.GOMAXPROCS(0), len(recs)/minRefreshPart))
	parts.Run(n, func(i int) {
		for _, r := range recs[i*len(recs)/n : (i+1)*len(recs)/n] {
			r.Refresh()
		}
	})
}
