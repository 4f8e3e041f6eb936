package overlay

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"
	"time"
)

// Memory is a Store that keeps the overrides in memory only: they are lost when the process
// ends. File is a Memory that writes every change to a file before it takes effect.
type Memory struct {
	clock Clock
	// commit stores the next overrides before they become visible; nil stores nothing.
	commit func([]Override) error

	mu     sync.Mutex
	byKey  map[string]Override
	timer  Timer // fires at the earliest expiry
	closed bool
	subs   map[int]func()
	nextID int
}

// NewMemory returns an empty Memory store that reads the time from clock.
func NewMemory(clock Clock) *Memory { return newMemory(clock, nil, nil) }

// newMemory returns a store holding initial (without the overrides that expired already),
// that calls commit with the whole next state before every change.
func newMemory(clock Clock, initial []Override, commit func([]Override) error) *Memory {
	m := &Memory{clock: clock, commit: commit, byKey: make(map[string]Override, len(initial)), subs: make(map[int]func())}
	now := clock.Now()
	for _, o := range initial {
		if !o.expired(now) {
			m.byKey[o.Key] = o
		}
	}
	m.mu.Lock()
	m.changed(now)
	m.mu.Unlock()
	return m
}

// Get implements Store.
func (m *Memory) Get(key string) (Override, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.byKey[key]
	if !ok || o.expired(m.clock.Now()) {
		return Override{}, false
	}
	return o, true
}

// List implements Store.
func (m *Memory) List() []Override {
	m.mu.Lock()
	defer m.mu.Unlock()
	return live(m.byKey, m.clock.Now())
}

// Apply implements Store.
func (m *Memory) Apply(ctx context.Context, changes []Change) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	now := m.clock.Now()
	if err := validate(changes, now); err != nil {
		m.mu.Unlock()
		return err
	}
	next := maps.Clone(m.byKey)
	maps.DeleteFunc(next, func(_ string, o Override) bool { return o.expired(now) })
	for _, c := range changes {
		if c.Action == Clear {
			delete(next, c.Key)
			continue
		}
		next[c.Key] = c.override(now)
	}
	if m.commit != nil {
		if err := m.commit(live(next, now)); err != nil {
			m.mu.Unlock()
			return err
		}
	}
	m.byKey = next
	subs := m.changed(now)
	m.mu.Unlock()
	notify(subs)
	return nil
}

// Subscribe implements Store.
func (m *Memory) Subscribe(fn func()) (cancel func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := m.nextID
	m.nextID++
	m.subs[id] = fn
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.subs, id)
	}
}

// Start implements Store: a store of this process alone has nothing to follow.
func (m *Memory) Start() {}

// Close implements Store.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	if m.timer != nil {
		m.timer.Stop()
	}
	return nil
}

// expire removes the overrides whose expiry has passed, and tells the subscribers, who also
// learn that a scheduled drain started (the timer fires at starts too). It does not store the
// result: a stored override that has expired is dropped when it is read back.
func (m *Memory) expire() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	now := m.clock.Now()
	maps.DeleteFunc(m.byKey, func(_ string, o Override) bool { return o.expired(now) })
	subs := m.changed(now)
	m.mu.Unlock()
	notify(subs) // the timer fired at an expiry or at a start
}

// changed follows a change of byKey, with m.mu held: it sets the timer for the next expiry or
// drain start,
// updates the metrics, and returns the subscribers to tell once the lock is released.
func (m *Memory) changed(now time.Time) []func() {
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
	var next time.Time
	for _, o := range m.byKey {
		if !o.Expires.IsZero() && (next.IsZero() || o.Expires.Before(next)) {
			next = o.Expires
		}
		if o.Pending(now) && (next.IsZero() || o.Starts.Before(next)) {
			next = o.Starts
		}
	}
	if !next.IsZero() && !m.closed {
		m.timer = m.clock.AfterFunc(next.Sub(now), m.expire)
	}
	publish(m.byKey)
	return slices.Collect(maps.Values(m.subs))
}

func notify(subs []func()) {
	for _, fn := range subs {
		fn()
	}
}

// live returns the overrides of byKey that have not expired at now, sorted by key.
func live(byKey map[string]Override, now time.Time) []Override {
	out := make([]Override, 0, len(byKey))
	for _, o := range byKey {
		if !o.expired(now) {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b Override) int { return cmp.Compare(a.Key, b.Key) })
	return out
}
