package health

import (
	"testing"
	"time"
)

func TestCheckStatsObserve(t *testing.T) {
	var s CheckStats
	for _, r := range []struct {
		ok     bool
		reason string
		d      time.Duration
	}{
		{true, "", 3 * time.Millisecond},
		{false, "dial tcp 192.0.2.1:80: connect: connection refused", 20 * time.Millisecond},
		{false, "timeout after 1s", time.Second},
		{false, "http 503", 40 * time.Millisecond},
		{false, "http 200, body does not match", 40 * time.Millisecond},
		{false, "tls: handshake failure", 20 * time.Second},
		{false, "something odd", 0},
	} {
		s.observe("http", r.ok, r.reason, r.d)
	}
	if s.Type != "http" || s.Success != 1 || s.Failure != 6 || !s.Checked || s.LastOK {
		t.Errorf("stats = %+v", s)
	}
	// timeout, connection (refused, tls), protocol (status, mismatch), other.
	if s.Reasons != [4]uint64{1, 2, 2, 1} {
		t.Errorf("reasons %v, want [1 2 2 1] in the order %v", s.Reasons, CheckReasons)
	}
	// Buckets (upper bounds .005 .01 .025 .05 .1 .25 .5 1 2.5 5 10, then longer): 0 and 3ms in
	// the first, 20ms in the third, two 40ms in the fourth, 1s in the eighth, 20s beyond.
	want := [12]uint64{2, 0, 1, 2, 0, 0, 0, 1, 0, 0, 0, 1}
	if s.Buckets != want {
		t.Errorf("buckets %v, want %v", s.Buckets, want)
	}
	if s.Seconds < 21.1 || s.Seconds > 21.2 {
		t.Errorf("seconds %v, want 21.123", s.Seconds)
	}
}
