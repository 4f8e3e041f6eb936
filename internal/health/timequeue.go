package health

import (
	"container/heap"
	"time"
)

// timed is an item of a timeQueue: it knows when it is due and where it sits in the queue.
type timed interface {
	due() time.Time
	setIndex(int)
}

// timeQueue is a min-heap of items by due time; the scheduler's jobs and the poller's
// exchanges both wait in one.
type timeQueue[T timed] []T

func (q timeQueue[T]) Len() int           { return len(q) }
func (q timeQueue[T]) Less(a, b int) bool { return q[a].due().Before(q[b].due()) }
func (q timeQueue[T]) Swap(a, b int) {
	q[a], q[b] = q[b], q[a]
	q[a].setIndex(a)
	q[b].setIndex(b)
}

// Push implements heap.Interface; use push.
func (q *timeQueue[T]) Push(x any) {
	item := x.(T)
	item.setIndex(len(*q))
	*q = append(*q, item)
}

// Pop implements heap.Interface; use remove.
func (q *timeQueue[T]) Pop() any {
	old := *q
	item := old[len(old)-1]
	var zero T
	old[len(old)-1] = zero
	*q = old[:len(old)-1]
	item.setIndex(-1)
	return item
}

func (q *timeQueue[T]) push(item T) { heap.Push(q, item) }

// remove takes the item at index i (its own record of where it sits) out of the queue.
func (q *timeQueue[T]) remove(i int) {
	if i >= 0 {
		heap.Remove(q, i)
	}
}

// fix restores the order after the first item's due time changed.
func (q *timeQueue[T]) fixFirst() { heap.Fix(q, 0) }
