package periodic

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestLoop runs rounds at once and then each interval, stops them (cancelling the round in
// progress and waiting for it), and can be started again; Start while running and Stop while
// stopped do nothing.
func TestLoop(t *testing.T) {
	var l Loop
	l.Stop() // stopped: nothing to do
	var rounds atomic.Int32
	started := make(chan struct{}, 100)
	block := func(ctx context.Context) {
		rounds.Add(1)
		started <- struct{}{}
		if rounds.Load() == 3 {
			<-ctx.Done() // the third round runs until Stop cancels it
		}
	}
	l.Start(block, func() time.Duration { return time.Millisecond })
	l.Start(func(context.Context) { t.Error("a second Start ran its round") }, func() time.Duration { return time.Hour })
	for range 3 {
		select {
		case <-started:
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d rounds ran", rounds.Load())
		}
	}
	l.Stop() // returns only once the blocked third round saw the cancellation
	if n := rounds.Load(); n != 3 {
		t.Fatalf("%d rounds ran, want 3 (the third blocked until Stop)", n)
	}
	first := make(chan struct{})
	l.Start(func(context.Context) { close(first) }, func() time.Duration { return time.Hour })
	select {
	case <-first:
	case <-time.After(5 * time.Second):
		t.Fatal("a restarted loop did not run its first round at once")
	}
	l.Stop()
}
