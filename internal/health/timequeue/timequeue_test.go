package timequeue

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// item is a timed test item.
type item struct {
	at    time.Time
	index int
}

func (i *item) Due() time.Time { return i.at }
func (i *item) SetIndex(n int) { i.index = n }

// TestTimeQueueOrdersByDueTime pushes, removes and reschedules random items and checks that
// the queue hands them out in due order and that every item knows where it sits.
func TestTimeQueueOrdersByDueTime(t *testing.T) {
	base := time.Now()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		var q Queue[*item]
		var live []*item
		for range 200 {
			switch op := rng.IntN(4); {
			case op < 2 || len(live) == 0:
				it := &item{at: base.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)}
				q.Push(it)
				live = append(live, it)
			case op == 2:
				k := rng.IntN(len(live))
				q.Remove(live[k].index)
				if live[k].index != -1 {
					t.Fatalf("round %d: a removed item keeps index %d", round, live[k].index)
				}
				live = slices.Delete(live, k, k+1)
			default:
				q.First().at = base.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
				q.FixFirst()
			}
			for i, e := range q {
				if e.item.index != i {
					t.Fatalf("round %d: item at %d thinks it is at %d", round, i, e.item.index)
				}
			}
		}
		if q.Len() != len(live) {
			t.Fatalf("round %d: %d queued, want %d", round, q.Len(), len(live))
		}
		var last time.Time
		for q.Len() > 0 {
			it := q.First()
			if it.at.Before(last) {
				t.Fatalf("round %d: %v came after %v", round, it.at, last)
			}
			last = it.at
			q.Remove(0)
		}
	}
}

func BenchmarkTimeQueue(b *testing.B) {
	var q Queue[*item]
	base := time.Now()
	for i := range 30000 {
		q.Push(&item{at: base.Add(time.Duration(i*7919%30000) * time.Millisecond)})
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		q.First().at = q.First().at.Add(10 * time.Second)
		q.FixFirst()
	}
}
