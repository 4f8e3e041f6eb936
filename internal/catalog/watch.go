package catalog

import (
	"sync"
	"sync/atomic"
	"time"
)

// AnswerWatch follows a change of a record to the answers: when the first view that holds it
// was swapped in (Refresh), when the first answer was given from such a view, and when a peer
// site first read the record's localtargets from one. A failover timeline (package timeline)
// sets one on the record before the record is refreshed, and takes it off once answered.
type AnswerWatch struct {
	// Family is the address family whose answers count.
	Family                      Family
	swapped, answered, peerRead atomic.Int64 // Unix nanoseconds, 0 until it happened
}

// Swapped returns when the first view holding the change was swapped in; zero before.
func (w *AnswerWatch) Swapped() time.Time { return unixNano(w.swapped.Load()) }

// Answered returns when the first answer of Family was given from such a view; zero before.
func (w *AnswerWatch) Answered() time.Time { return unixNano(w.answered.Load()) }

// PeerRead returns when a peer site first read the record's localtargets from such a view;
// zero before.
func (w *AnswerWatch) PeerRead() time.Time { return unixNano(w.peerRead.Load()) }

// NoteAnswer notes an answer of family f from a view that carries w. After the first, it costs
// one atomic load: the query path calls it.
func (w *AnswerWatch) NoteAnswer(f Family) {
	if f == w.Family && w.answered.Load() == 0 {
		w.answered.CompareAndSwap(0, time.Now().UnixNano())
	}
}

// NotePeerRead notes a read of the record's localtargets by a peer site.
func (w *AnswerWatch) NotePeerRead() {
	if w.peerRead.Load() == 0 {
		w.peerRead.CompareAndSwap(0, time.Now().UnixNano())
	}
}

func unixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// watches are the AnswerWatches set on a zone's records, which their next views carry.
type watches struct {
	n  atomic.Int32 // how many are set: Refresh looks in the map only when some are
	mu sync.Mutex
	m  map[*Record]*AnswerWatch
}

// Watch sets w on the record: from its next Refresh, its views carry w (ViewExtra.Watch) until
// Unwatch, replacing a watch set before.
func (r *Record) Watch(w *AnswerWatch) {
	ws := &r.Zone.watches
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.m == nil {
		ws.m = make(map[*Record]*AnswerWatch)
	}
	if _, ok := ws.m[r]; !ok {
		ws.n.Add(1)
	}
	ws.m[r] = w
}

// Unwatch takes w off the record, if it is the record's watch; the view in place keeps it
// until the next Refresh.
func (r *Record) Unwatch(w *AnswerWatch) {
	ws := &r.Zone.watches
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.m[r] == w {
		delete(ws.m, r)
		ws.n.Add(-1)
	}
}

// watch returns the record's watch, nil for none.
func (r *Record) watch() *AnswerWatch {
	ws := &r.Zone.watches
	if ws.n.Load() == 0 {
		return nil
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.m[r]
}
