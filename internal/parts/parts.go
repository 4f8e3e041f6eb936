// Package parts runs the parts of a big load's step on every core: the catalog's records, the
// health checks' compiling and the records' first views are each split into one part a core.
package parts

import "sync"

// Run runs part(i) for every i below n, the last on this goroutine and the others on
// goroutines of their own, and returns when all have returned. With n of 1 or less it runs
// part(0) alone, on this goroutine.
func Run(n int, part func(i int)) {
	var wg sync.WaitGroup
	for i := range n - 1 {
		wg.Go(func() { part(i) })
	}
	part(max(n, 1) - 1)
	wg.Wait()
}
