package probe

import (
	"testing"
	"time"
	"unsafe"
)

func TestConnTimeoutReason(t *testing.T) {
	for _, tc := range []struct {
		budget time.Duration
		want   string
	}{
		{5 * time.Second, "timeout after 5s"},
		{5 * time.Second, "timeout after 5s"},
		{1500 * time.Millisecond, "timeout after 1.5s"},
		{5 * time.Second, "timeout after 5s"},
	} {
		if got := connTimeoutReason(tc.budget); got != tc.want {
			t.Errorf("connTimeoutReason(%v) = %q, want %q", tc.budget, got, tc.want)
		}
	}
	// Repeated budgets share one string: silent backends keep it as their last reason.
	a, b := connTimeoutReason(2*time.Second), connTimeoutReason(2*time.Second)
	if unsafe.StringData(a) != unsafe.StringData(b) {
		t.Error("the same budget built its reason twice")
	}
}

// TestNamedBudget checks the time a timeout reason names: the check's timeout when the probe
// started a little late, what was left when it started much later or the context was shorter.
func TestNamedBudget(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		rest, timeout, want time.Duration
	}{
		{200 * ms, 200 * ms, 200 * ms},
		{195 * ms, 200 * ms, 200 * ms},                // a loaded machine started the probe 5ms late
		{176 * ms, 200 * ms, 200 * ms},                // 25ms late is still the timeout
		{170 * ms, 200 * ms, 170 * ms},                // a retry with what is left
		{4900 * ms, 5 * time.Second, 5 * time.Second}, // 2% of a long timeout
		{4800 * ms, 5 * time.Second, 4800 * ms},
		{200 * ms, 5 * time.Second, 200 * ms}, // a shorter context
		{1234567 * time.Microsecond, 2 * time.Second, 1235 * ms},
		{100 * time.Microsecond, time.Second, ms}, // never "0s"
		{300 * ms, 0, 300 * ms},                   // no check timeout
	} {
		if got := namedBudget(tc.rest, tc.timeout); got != tc.want {
			t.Errorf("namedBudget(%v, %v) = %v, want %v", tc.rest, tc.timeout, got, tc.want)
		}
	}
}
