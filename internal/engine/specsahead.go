package engine

import (
	"iter"
	"runtime"
	"sync"

	"github.com/meridian-gslb/meridian/internal/health"
)

// specBatch is how many specs specsAhead makes at a time: two batches (a few hundred KB) are
// all it holds.
const specBatch = 1024

// specsAhead yields the specs of seq (at most n), in order, made on another goroutine a batch
// ahead of the caller: a load's Sync takes the specs of hundreds of thousands of backends on
// one core, and making them (their names, their keys) is a part of its work that the other
// cores can do meanwhile; so is prepare (health.Manager.Prepare, nil for none), called with
// each spec there. With one core, or fewer specs than two batches, it is seq, and prepare is
// not called. Each spec is valid until the next is asked for, as seq's.
func specsAhead(n int, seq iter.Seq[*health.Spec], prepare func(*health.Spec)) iter.Seq[*health.Spec] {
	if n < 2*specBatch || runtime.GOMAXPROCS(0) < 2 {
		return seq
	}
	return func(yield func(*health.Spec) bool) {
		full := make(chan []health.Spec, 1)
		free := make(chan []health.Spec, 2) // every batch fits: returning one never blocks
		free <- make([]health.Spec, 0, specBatch)
		free <- make([]health.Spec, 0, specBatch)
		stop := make(chan struct{}) // closed when the caller stops early, or has all of them
		var wg sync.WaitGroup
		defer wg.Wait()
		defer close(stop)
		wg.Go(func() {
			defer close(full)
			batch := <-free
			for spec := range seq {
				batch = append(batch, *spec)
				if prepare != nil {
					prepare(&batch[len(batch)-1])
				}
				if len(batch) < specBatch {
					continue
				}
				select {
				case full <- batch:
				case <-stop:
					return
				}
				select {
				case batch = <-free:
				case <-stop:
					return
				}
			}
			if len(batch) > 0 {
				select {
				case full <- batch:
				case <-stop:
				}
			}
		})
		for batch := range full {
			for i := range batch {
				if !yield(&batch[i]) {
					return
				}
			}
			free <- batch[:0]
		}
	}
}
