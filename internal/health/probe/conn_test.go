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
