// Package periodic runs a function in rounds until stopped: the inputs and publishers that
// read or write in the background (the sites' peer rounds and heartbeat ticks, the heartbeats'
// writes and reads, the Kubernetes source's rounds, the zone transfers' NOTIFY checks) share
// it.
package periodic

import (
	"context"
	"sync"
	"time"
)

// Loop runs rounds, one at a time: the first at once, each next one the interval after the
// previous one ended. Its zero value is stopped.
type Loop struct {
	mu     sync.Mutex
	cancel context.CancelFunc // nil while stopped
	done   chan struct{}
}

// Start starts the rounds of round, each given a context that Stop cancels, separated by the
// interval that next returns after each (read anew, so that it may change). It does nothing
// while the loop runs.
func (l *Loop) Start(round func(context.Context), next func() time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		for {
			round(ctx)
			t := time.NewTimer(next())
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}(l.done)
}

// Stop cancels the round in progress, if any, and waits until it returned. It does nothing
// while the loop is stopped.
func (l *Loop) Stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.cancel = nil
	l.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}
