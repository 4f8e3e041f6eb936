package health

import (
	"testing"
	"time"
	"unsafe"
)

// TestPerBackendStructuresStaySmall fails when a field makes what the manager keeps for every
// probed backend bigger: a backend, the job of its check, and the last result it keeps (sizes
// of Go's allocation classes, so that one more word does not cost the next class).
func TestPerBackendStructuresStaySmall(t *testing.T) {
	for _, tt := range []struct {
		name      string
		size, max uintptr
	}{
		{"backend", unsafe.Sizeof(backend{}), 192},
		{"job", unsafe.Sizeof(job{}), 112},
		{"lastResult", unsafe.Sizeof(lastResult{}), 40},
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
