package source

import (
	"maps"
	"slices"
	"sync"
)

// Watchers are the callbacks a source that outlives Corefile reloads calls when what its
// Merge returns changed: the engine of each load adds its own (Backends.Watch), and the
// engines of two loads overlap. The zero value is empty; it is safe for concurrent use.
type Watchers struct {
	mu   sync.Mutex
	next int
	fns  map[int]func()
}

// Add adds changed and returns the function that removes it.
func (w *Watchers) Add(changed func()) (remove func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fns == nil {
		w.fns = map[int]func(){}
	}
	id := w.next
	w.next++
	w.fns[id] = changed
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.fns, id)
	}
}

// Call calls every callback, without holding the lock (a callback rebuilds a snapshot, which
// merges the source again). The caller must not hold its own lock either.
func (w *Watchers) Call() {
	w.mu.Lock()
	fns := slices.Collect(maps.Values(w.fns))
	w.mu.Unlock()
	for _, f := range fns {
		f()
	}
}
