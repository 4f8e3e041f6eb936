package overlay

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"
)

func mustApply(t *testing.T, s Store, changes ...Change) {
	t.Helper()
	if err := s.Apply(context.Background(), changes); err != nil {
		t.Fatal(err)
	}
}

func keys(overrides []Override) []string {
	out := make([]string, len(overrides))
	for i, o := range overrides {
		out[i] = o.Key
	}
	return out
}

func TestApplyGetList(t *testing.T) {
	clock := newFakeClock()
	m := NewMemory(clock)
	defer m.Close()
	until := clock.Now().Add(time.Hour)
	mustApply(t, m,
		Change{Key: "www.example.org.|192.0.2.2|0", Action: Disable, Reason: "broken disk", By: "alice"},
		Change{Key: "www.example.org.|192.0.2.1|0", Action: Drain, Expires: until},
		Change{Key: "www.example.org.|192.0.2.3|0", Action: Enable},
	)
	got := m.List()
	if want := []string{"www.example.org.|192.0.2.1|0", "www.example.org.|192.0.2.2|0", "www.example.org.|192.0.2.3|0"}; fmt.Sprint(keys(got)) != fmt.Sprint(want) {
		t.Fatalf("List keys = %v, want %v", keys(got), want)
	}
	o, ok := m.Get("www.example.org.|192.0.2.2|0")
	if !ok || o.Action != Disable || o.Reason != "broken disk" || o.By != "alice" || !o.Set.Equal(clock.Now()) || !o.Expires.IsZero() {
		t.Fatalf("Get = %+v, %v", o, ok)
	}
	if o, _ := m.Get("www.example.org.|192.0.2.1|0"); !o.Expires.Equal(until) || !o.Action.Disables() {
		t.Fatalf("drain = %+v", o)
	}
	if _, ok := m.Get("www.example.org.|192.0.2.9|0"); ok {
		t.Fatal("Get of a backend without override reports one")
	}
	if v := promtest.ToFloat64(overridesGauge.WithLabelValues("drain")); v != 1 {
		t.Errorf("overrides{action=drain} = %v, want 1", v)
	}

	// A new change replaces the override; clear removes it.
	mustApply(t, m,
		Change{Key: "www.example.org.|192.0.2.2|0", Action: Enable},
		Change{Key: "www.example.org.|192.0.2.3|0", Action: Clear},
		Change{Key: "never.set.|192.0.2.3|0", Action: Clear},
	)
	if o, _ := m.Get("www.example.org.|192.0.2.2|0"); o.Action != Enable || o.Reason != "" {
		t.Fatalf("replaced override = %+v", o)
	}
	if _, ok := m.Get("www.example.org.|192.0.2.3|0"); ok {
		t.Fatal("cleared override is still there")
	}
}

func TestApplyIsAllOrNothing(t *testing.T) {
	clock := newFakeClock()
	m := NewMemory(clock)
	defer m.Close()
	mustApply(t, m, Change{Key: "a|192.0.2.1|0", Action: Disable})
	var notified atomic.Int32
	defer m.Subscribe(func() { notified.Add(1) })()

	good := Change{Key: "b|192.0.2.2|0", Action: Drain}
	for name, bad := range map[string]Change{
		"empty key":         {Action: Disable},
		"unknown action":    {Key: "c|192.0.2.3|0", Action: "maintenance"},
		"no action":         {Key: "c|192.0.2.3|0"},
		"twice":             {Key: "b|192.0.2.2|0", Action: Disable},
		"past expiry":       {Key: "c|192.0.2.3|0", Action: Drain, Expires: clock.Now().Add(-time.Second)},
		"expiry now":        {Key: "c|192.0.2.3|0", Action: Drain, Expires: clock.Now()},
		"clear with expiry": {Key: "a|192.0.2.1|0", Action: Clear, Expires: clock.Now().Add(time.Hour)},
	} {
		err := m.Apply(context.Background(), []Change{good, bad})
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if got := keys(m.List()); fmt.Sprint(got) != "[a|192.0.2.1|0]" {
		t.Fatalf("after invalid changes, overrides = %v", got)
	}
	if notified.Load() != 0 {
		t.Fatalf("subscriber told %d times of changes that were refused", notified.Load())
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Apply(ctx, []Change{good}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Apply with a cancelled context: %v", err)
	}
}

func TestDrainExpires(t *testing.T) {
	clock := newFakeClock()
	m := NewMemory(clock)
	defer m.Close()
	var notified atomic.Int32
	cancel := m.Subscribe(func() { notified.Add(1) })
	defer cancel()

	mustApply(t, m,
		Change{Key: "short|192.0.2.1|0", Action: Drain, Expires: clock.Now().Add(10 * time.Minute)},
		Change{Key: "long|192.0.2.2|0", Action: Drain, Expires: clock.Now().Add(time.Hour)},
		Change{Key: "forever|192.0.2.3|0", Action: Disable},
	)
	if notified.Load() != 1 {
		t.Fatalf("notified %d times after one Apply", notified.Load())
	}
	clock.Advance(10*time.Minute - time.Second)
	if _, ok := m.Get("short|192.0.2.1|0"); !ok {
		t.Fatal("drain gone before its expiry")
	}
	clock.Advance(time.Second)
	if _, ok := m.Get("short|192.0.2.1|0"); ok {
		t.Fatal("drain still there at its expiry")
	}
	if notified.Load() != 2 {
		t.Fatalf("notified %d times, want 2 (the Apply and the expiry)", notified.Load())
	}
	if got := keys(m.List()); fmt.Sprint(got) != "[forever|192.0.2.3|0 long|192.0.2.2|0]" {
		t.Fatalf("after the first expiry: %v", got)
	}
	clock.Advance(time.Hour)
	if got := keys(m.List()); fmt.Sprint(got) != "[forever|192.0.2.3|0]" {
		t.Fatalf("after the second expiry: %v", got)
	}
	if clock.pending() != 0 {
		t.Fatalf("%d timers pending with no expiry left", clock.pending())
	}

	// Clearing a drain before it expires also stops its timer.
	mustApply(t, m, Change{Key: "again|192.0.2.4|0", Action: Drain, Expires: clock.Now().Add(time.Minute)})
	mustApply(t, m, Change{Key: "again|192.0.2.4|0", Action: Clear})
	if clock.pending() != 0 {
		t.Fatalf("%d timers pending after the drain was cleared", clock.pending())
	}
}

func TestSubscribeCancelAndClose(t *testing.T) {
	clock := newFakeClock()
	m := NewMemory(clock)
	var a, b atomic.Int32
	cancelA := m.Subscribe(func() { a.Add(1) })
	defer m.Subscribe(func() { b.Add(1) })()
	mustApply(t, m, Change{Key: "k|192.0.2.1|0", Action: Disable})
	cancelA()
	mustApply(t, m, Change{Key: "k|192.0.2.1|0", Action: Clear})
	if a.Load() != 1 || b.Load() != 2 {
		t.Fatalf("notifications a=%d b=%d, want 1 and 2", a.Load(), b.Load())
	}

	// A subscriber may read the store: it is called without the store's lock.
	m.Subscribe(func() { _ = m.List() })
	mustApply(t, m, Change{Key: "k|192.0.2.1|0", Action: Drain, Expires: clock.Now().Add(time.Minute)})
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour) // the stopped timer does not fire
	if b.Load() != 3 {
		t.Fatalf("notified after Close: b=%d", b.Load())
	}
}

func TestConcurrentApply(t *testing.T) {
	m := NewMemory(SystemClock{})
	defer m.Close()
	var notified atomic.Int32
	defer m.Subscribe(func() { notified.Add(1); _ = m.List() })()
	const workers, each = 8, 40
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				key := fmt.Sprintf("r%d|192.0.2.%d|0", w, i)
				if err := m.Apply(context.Background(), []Change{{Key: key, Action: Disable}, {Key: key + "x", Action: Enable}}); err != nil {
					t.Error(err)
				}
				if _, ok := m.Get(key); !ok {
					t.Errorf("%s not visible after its Apply returned", key)
				}
			}
		})
	}
	wg.Wait()
	if n := len(m.List()); n != workers*each*2 {
		t.Fatalf("%d overrides, want %d", n, workers*each*2)
	}
	if notified.Load() != workers*each {
		t.Fatalf("notified %d times, want %d", notified.Load(), workers*each)
	}
}
