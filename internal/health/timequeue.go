package health

import (
	"time"
)

// timed is an item of a timeQueue: it knows when it is due and where it sits in the queue.
type timed interface {
	due() time.Time
	setIndex(int)
}

// timeQueue is a min-heap of items by due time; the scheduler's jobs and the poller's
// exchanges both wait in one. Each entry keeps its item's due time next to it, so that
// ordering 30,000 items compares integers in one array instead of following a pointer (a cache
// miss) and an interface call per comparison.
type timeQueue[T timed] []queued[T]

// queued is one entry of a timeQueue: the item and its due time in Unix nanoseconds.
type queued[T timed] struct {
	at   int64
	item T
}

// Len returns the number of items queued.
func (q timeQueue[T]) Len() int { return len(q) }

// first returns the item due first; the queue must not be empty.
func (q timeQueue[T]) first() T { return q[0].item }

func (q timeQueue[T]) swap(a, b int) {
	q[a], q[b] = q[b], q[a]
	q[a].item.setIndex(a)
	q[b].item.setIndex(b)
}

// up moves the entry at i towards the root until its parent is due no later.
func (q timeQueue[T]) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if q[parent].at <= q[i].at {
			return
		}
		q.swap(i, parent)
		i = parent
	}
}

// down moves the entry at i towards the leaves until its children are due no earlier, and
// reports whether it moved.
func (q timeQueue[T]) down(i int) bool {
	start, n := i, len(q)
	for {
		child := 2*i + 1
		if child >= n {
			break
		}
		if right := child + 1; right < n && q[right].at < q[child].at {
			child = right
		}
		if q[i].at <= q[child].at {
			break
		}
		q.swap(i, child)
		i = child
	}
	return i > start
}

// push queues item at its due time.
func (q *timeQueue[T]) push(item T) {
	*q = append(*q, queued[T]{at: item.due().UnixNano(), item: item})
	i := len(*q) - 1
	item.setIndex(i)
	q.up(i)
}

// remove takes the item at index i (its own record of where it sits) out of the queue.
func (q *timeQueue[T]) remove(i int) {
	if i < 0 {
		return
	}
	old := *q
	last := len(old) - 1
	if i != last {
		old.swap(i, last)
	}
	old[last].item.setIndex(-1)
	old[last] = queued[T]{}
	*q = old[:last]
	if i != last && !q.down(i) {
		q.up(i)
	}
}

// fixFirst restores the order after the first item's due time changed.
func (q timeQueue[T]) fixFirst() {
	q[0].at = q[0].item.due().UnixNano()
	q.down(0)
}
