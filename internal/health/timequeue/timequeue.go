// Package timequeue is the min-heap by due time that the health scheduler's jobs and the probe
// poller's exchanges wait in. It is a package of its own because both use it: package health
// imports package probe, so neither can hold it for the other.
package timequeue

import (
	"iter"
	"time"
)

// Item is an item of a Queue: it knows when it is due and where it sits in the queue.
type Item interface {
	// Due returns when the item is due.
	Due() time.Time
	// SetIndex records the item's position in the queue, -1 once it left it.
	SetIndex(int)
}

// Queue is a min-heap of items by due time. Each entry keeps its item's due time next to it,
// so that ordering 30,000 items compares integers in one array instead of following a pointer
// (a cache miss) and an interface call per comparison. The heap is 4-ary: half as deep as a
// binary one, so that an item moved from the top to the bottom (a job run and queued for its
// next interval) passes half as many entries, each of which must learn its new index (a
// write to an item, usually a cache miss), and compares four due times of one cache line at
// each level.
type Queue[T Item] []queued[T]

// arity is the number of children of an entry of the heap.
const arity = 4

// queued is one entry of a Queue: the item and its due time in Unix nanoseconds.
type queued[T Item] struct {
	at   int64
	item T
}

// Len returns the number of items queued.
func (q Queue[T]) Len() int { return len(q) }

// All returns every item queued, in no particular order. The queue must not change while
// they are read.
func (q Queue[T]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		for _, e := range q {
			if !yield(e.item) {
				return
			}
		}
	}
}

// First returns the item due first; the queue must not be empty.
func (q Queue[T]) First() T { return q[0].item }

func (q Queue[T]) swap(a, b int) {
	q[a], q[b] = q[b], q[a]
	q[a].item.SetIndex(a)
	q[b].item.SetIndex(b)
}

// up moves the entry at i towards the root until its parent is due no later.
func (q Queue[T]) up(i int) {
	for i > 0 {
		parent := (i - 1) / arity
		if q[parent].at <= q[i].at {
			return
		}
		q.swap(i, parent)
		i = parent
	}
}

// down moves the entry at i towards the leaves until its children are due no earlier, and
// reports whether it moved.
func (q Queue[T]) down(i int) bool {
	start, n := i, len(q)
	for {
		first := arity*i + 1
		if first >= n {
			break
		}
		child := first
		for c := first + 1; c < min(first+arity, n); c++ {
			if q[c].at < q[child].at {
				child = c
			}
		}
		if q[i].at <= q[child].at {
			break
		}
		q.swap(i, child)
		i = child
	}
	return i > start
}

// Push queues item at its due time.
func (q *Queue[T]) Push(item T) {
	*q = append(*q, queued[T]{at: item.Due().UnixNano(), item: item})
	i := len(*q) - 1
	item.SetIndex(i)
	q.up(i)
}

// Remove takes the item at index i (its own record of where it sits) out of the queue.
func (q *Queue[T]) Remove(i int) {
	if i < 0 {
		return
	}
	old := *q
	last := len(old) - 1
	if i != last {
		old.swap(i, last)
	}
	old[last].item.SetIndex(-1)
	old[last] = queued[T]{}
	*q = old[:last]
	if i != last && !q.down(i) {
		q.up(i)
	}
}

// FixFirst restores the order after the first item's due time changed.
func (q Queue[T]) FixFirst() {
	q[0].at = q[0].item.Due().UnixNano()
	q.down(0)
}
