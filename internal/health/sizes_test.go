package health

import (
	"testing"
	"time"
	"unsafe"

	"github.com/meridian-gslb/meridian/internal/health/probe"
)

// TestPerBackendStructuresStaySmall fails when a field makes what the manager keeps for every
// probed backend bigger: a backend, the job of its check, the last result it keeps, its health
// word and its history (sizes of Go's allocation classes, so that one more word does not cost
// the next class).
func TestPerBackendStructuresStaySmall(t *testing.T) {
	for _, tt := range []struct {
		name      string
		size, max uintptr
	}{
		{"backend", unsafe.Sizeof(backend{}), 192},
		{"job", unsafe.Sizeof(job{}), 112},
		{"lastResult", unsafe.Sizeof(lastResult{}), 40},
		{"State", unsafe.Sizeof(State{}), 64},
		// A history (history.go, docs/operations.md, docs/api.md): 80 bytes, 640 more from its
		// first result (the size class of the 600 of its counts), 240 more while its hour holds
		// failures or results without a latency, and 48 a change kept.
		{"history", unsafe.Sizeof(history{}), 80},
		{"measuredCounts", unsafe.Sizeof(measuredCounts{}), 640},
		{"oddCounts", unsafe.Sizeof(oddCounts{}), 240},
		{"change", unsafe.Sizeof(change{}), 48},
	} {
		if tt.size > tt.max {
			t.Errorf("%s is %d bytes, over %d", tt.name, tt.size, tt.max)
		}
	}
}

// TestLastResultKeepsLatencyAndOK checks the last result's word that holds both the latency
// and whether the result passed.
func TestLastResultKeepsLatencyAndOK(t *testing.T) {
	at := time.Unix(1700000000, 123)
	for _, tt := range []struct {
		ok      bool
		latency time.Duration
	}{
		{true, 0}, {false, 0}, {true, 5 * time.Second}, {false, time.Nanosecond}, {true, 1<<62 - 1},
	} {
		var r lastResult
		r.setCheck(at, tt.ok, "why", tt.latency)
		if r.ok() != tt.ok || r.latency() != tt.latency || r.reason != "why" || fromUnixNano(r.checked) != at {
			t.Errorf("setCheck(%v, %s): ok %v, latency %s, reason %q, at %s", tt.ok, tt.latency, r.ok(), r.latency(), r.reason, fromUnixNano(r.checked))
		}
		r.setOK(!tt.ok) // a result shared by another instance: no latency of its own
		if r.ok() == tt.ok || r.latency() != tt.latency {
			t.Errorf("setOK(%v) after (%v, %s): ok %v, latency %s", !tt.ok, tt.ok, tt.latency, r.ok(), r.latency())
		}
	}
}

// TestJobSubscribersKeepOrder checks a job's subscribers, kept in the job while there is one
// and out of line for more: in the order they subscribed, and none after unsubscribeAll, also
// once the job had several.
func TestJobSubscribersKeepOrder(t *testing.T) {
	subs := make([]subscription, 4)
	for _, n := range []int{0, 1, 2, 4} {
		var j job
		for round := range 2 { // the second round reuses the job, as a Sync does
			for i := range n {
				j.subscribe(&subs[i])
			}
			got := j.subscribers()
			if len(got) != n {
				t.Fatalf("%d subscribed (round %d): %d subscribers", n, round, len(got))
			}
			for i, s := range got {
				if s != &subs[i] {
					t.Errorf("%d subscribed (round %d): subscriber %d is not the %dth subscribed", n, round, i, i)
				}
			}
			j.unsubscribeAll()
			if got := j.subscribers(); len(got) != 0 {
				t.Errorf("%d subscribed (round %d): %d subscribers after unsubscribeAll", n, round, len(got))
			}
		}
	}
}

// TestRareStateOnlyWhenNeeded checks that a backend keeps its rare state out of line only for
// what needs it: none for one check, no history, a capacity of 0 or 1 and no load, and that
// what it keeps there reads back (a capacity set again to 1 reads 1).
func TestRareStateOnlyWhenNeeded(t *testing.T) {
	two := spec("b", &scriptedProber{}, "b1", time.Hour)
	two.Checks = append(two.Checks, &probe.Compiled{Prober: &scriptedProber{}, Type: "test", Timeout: time.Second, Key: "b2"})
	tests := []struct {
		name     string
		opts     Options
		spec     Spec
		capacity float64 // capacity() after the Sync
		rare     bool
	}{
		{"one check", Options{}, spec("a", &scriptedProber{}, "a", time.Hour), 1, false},
		{"capacity 1", Options{}, withCapacity(spec("a", &scriptedProber{}, "a", time.Hour), 1), 1, false},
		{"capacity 0", Options{}, withCapacity(spec("a", &scriptedProber{}, "a", time.Hour), 0), 1, false},
		{"capacity 3", Options{}, withCapacity(spec("a", &scriptedProber{}, "a", time.Hour), 3), 3, true},
		{"two checks", Options{}, two, 1, true},
		{"history", Options{History: true}, spec("a", &scriptedProber{}, "a", time.Hour), 1, true},
	}
	for _, tt := range tests {
		m := NewManager(tt.opts)
		m.Sync([]Spec{tt.spec}, nil)
		b := m.backendLocked(tt.spec.Key)
		if (b.rare != nil) != tt.rare || b.capacity() != tt.capacity || len(b.subscriptions()) != len(tt.spec.Checks) {
			t.Errorf("%s: rare state %v, capacity %v, %d subscriptions; want %v, %v, %d", tt.name, b.rare != nil, b.capacity(), len(b.subscriptions()), tt.rare, tt.capacity, len(tt.spec.Checks))
		}
		b.setCapacity(1)
		if b.capacity() != 1 {
			t.Errorf("%s: capacity %v after setting 1", tt.name, b.capacity())
		}
		m.Stop()
	}
}

func withCapacity(s Spec, capacity float64) Spec {
	s.Capacity = capacity
	return s
}
