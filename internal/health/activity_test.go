package health

import (
	"testing"
	"time"
)

// TestActivity: a record is seen when the manager is first given it, a query marks it, and
// the scheduler takes the mark as "seen now"; without one, the record is idle for as long as
// it was not seen.
func TestActivity(t *testing.T) {
	var a Activity
	t0 := time.Now()
	a.start(t0)
	a.start(t0.Add(time.Hour)) // given again: it was seen at t0
	if a.Queried() {
		t.Fatal("a record nobody queried is marked")
	}
	if d := a.idleFor(t0.Add(time.Minute)); d != time.Minute {
		t.Fatalf("idle for %s a minute after it was given, want 1m", d)
	}
	a.Mark()
	a.Mark()
	if !a.Queried() {
		t.Fatal("a queried record is not marked")
	}
	if d := a.idleFor(t0.Add(2 * time.Minute)); d != 0 || a.Queried() {
		t.Fatalf("idle for %s when marked (mark kept: %v), want 0 and the mark taken", d, a.Queried())
	}
	if d := a.idleFor(t0.Add(5 * time.Minute)); d != 3*time.Minute {
		t.Fatalf("idle for %s three minutes after the mark was seen, want 3m", d)
	}
}
