package answerlog

import "sync/atomic"

// ring is a bounded queue of reused slots for many producers (the fast path's loops) and one
// consumer (the writer), after Dmitry Vyukov's bounded MPMC queue: a producer claims the slot
// at the head with one compare-and-swap, fills it and publishes it; the consumer takes the
// slot at the tail once published and releases it for the producers' next lap. Neither side
// takes a lock, and a full queue fails a claim at once.
type ring struct {
	_     [64]byte // the head on a cache line of its own: the loops contend for it
	head  atomic.Uint64
	_     [56]byte
	tail  uint64 // the consumer's position (one consumer)
	mask  uint64
	slots []slot
}

// slot is one place of the ring. seq says whose turn it is: pos for a producer claiming
// position pos, pos+1 once published for the consumer, pos+len for the next lap's producer.
type slot struct {
	seq   atomic.Uint64
	entry Entry
}

// newRing returns a ring of at least size slots (a power of two).
func newRing(size int) *ring {
	n := 1
	for n < size {
		n <<= 1
	}
	r := &ring{mask: uint64(n - 1), slots: make([]slot, n)}
	for i := range r.slots {
		r.slots[i].seq.Store(uint64(i))
	}
	return r
}

// claim returns the slot at the head for the caller to fill, or nil when the ring is full.
func (r *ring) claim() *slot {
	pos := r.head.Load()
	for {
		s := &r.slots[pos&r.mask]
		switch seq := s.seq.Load(); {
		case seq == pos:
			if r.head.CompareAndSwap(pos, pos+1) {
				return s
			}
			pos = r.head.Load()
		case seq < pos:
			return nil // the consumer has not released it yet: full
		default:
			pos = r.head.Load() // another producer claimed it
		}
	}
}

// publish hands s, claimed and filled, to the consumer.
func (r *ring) publish(s *slot) { s.seq.Add(1) }

// next returns the slot at the tail once it is published, or nil when there is none.
func (r *ring) next() *slot {
	s := &r.slots[r.tail&r.mask]
	if s.seq.Load() != r.tail+1 {
		return nil
	}
	return s
}

// release gives s, which next returned, back to the producers for their next lap.
func (r *ring) release(s *slot) {
	s.seq.Store(r.tail + r.mask + 1)
	r.tail++
}
