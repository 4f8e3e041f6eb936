package parts

import (
	"sync/atomic"
	"testing"
)

// TestRunRunsEveryPartOnce runs n parts and counts each: every index below n once, and part 0
// alone for n of 0 or 1; all have returned when Run does.
func TestRunRunsEveryPartOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7} {
		counts := make([]atomic.Int32, max(n, 1))
		Run(n, func(i int) { counts[i].Add(1) })
		for i := range counts {
			if got := counts[i].Load(); got != 1 {
				t.Errorf("n=%d: part %d ran %d times, want once", n, i, got)
			}
		}
	}
}
