package overlay

import (
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestScheduledDrainValidation(t *testing.T) {
	clock := newFakeClock()
	now := clock.Now()
	const key = "www.example.org.|192.0.2.1|443"
	for _, tc := range []struct {
		name   string
		change Change
		want   string // part of the error; empty for none
	}{
		{"drain later", Change{Key: key, Action: Drain, Starts: now.Add(time.Hour)}, ""},
		{"drain later, until", Change{Key: key, Action: Drain, Starts: now.Add(time.Hour), Expires: now.Add(2 * time.Hour)}, ""},
		{"force-up", Change{Key: key, Action: ForceUp, Expires: now.Add(time.Hour)}, ""},
		{"start now", Change{Key: key, Action: Drain, Starts: now}, "not in the future"},
		{"start past", Change{Key: key, Action: Drain, Starts: now.Add(-time.Second)}, "not in the future"},
		{"start at expiry", Change{Key: key, Action: Drain, Starts: now.Add(time.Hour), Expires: now.Add(time.Hour)}, "not before its expiry"},
		{"start after expiry", Change{Key: key, Action: Drain, Starts: now.Add(2 * time.Hour), Expires: now.Add(time.Hour)}, "not before its expiry"},
		{"disable later", Change{Key: key, Action: Disable, Starts: now.Add(time.Hour)}, "only a drain takes a start time"},
		{"force-up later", Change{Key: key, Action: ForceUp, Starts: now.Add(time.Hour)}, "only a drain takes a start time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validate([]Change{tc.change}, now)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want ErrInvalid with %q", err, tc.want)
			}
		})
	}
}

// TestScheduledDrainStarts follows a scheduled drain through a file store: it is stored with
// its start, kept across a restart, pending until the start, and the subscribers are told when
// it starts and when it expires.
func TestScheduledDrainStarts(t *testing.T) {
	clock := newFakeClock()
	path := filepath.Join(t.TempDir(), "overrides.json")
	f := openFile(t, path, clock)
	const key = "www.example.org.|192.0.2.1|443"
	starts, expires := clock.Now().Add(10*time.Minute), clock.Now().Add(time.Hour)
	mustApply(t, f, Change{Key: key, Action: Drain, Starts: starts, Expires: expires, Reason: "kernel"})
	f.Close()

	again := openFile(t, path, clock)
	var notified atomic.Int32
	defer again.Subscribe(func() { notified.Add(1) })()
	o, ok := again.Get(key)
	if !ok || !o.Starts.Equal(starts) || !o.Expires.Equal(expires) || !o.Pending(clock.Now()) {
		t.Fatalf("reopened scheduled drain = %+v, %v", o, ok)
	}
	clock.Advance(10*time.Minute - time.Second)
	if n := notified.Load(); n != 0 || !o.Pending(clock.Now()) {
		t.Fatalf("a second before the start: notified %d times, pending %v", n, o.Pending(clock.Now()))
	}
	clock.Advance(time.Second)
	if n := notified.Load(); n != 1 {
		t.Fatalf("at the start: notified %d times, want 1", n)
	}
	if o, ok := again.Get(key); !ok || o.Pending(clock.Now()) {
		t.Fatalf("at the start: %+v, %v; want a drain in effect", o, ok)
	}
	if clock.pending() != 1 {
		t.Fatalf("%d timers pending after the start, want the expiry's", clock.pending())
	}
	clock.Advance(50 * time.Minute)
	if _, ok := again.Get(key); ok || notified.Load() != 2 {
		t.Fatalf("at the expiry: present %v, notified %d times", ok, notified.Load())
	}
}
