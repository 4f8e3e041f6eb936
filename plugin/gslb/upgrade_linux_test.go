package gslb

import (
	"os/exec"
	"testing"
	"time"
)

// TestAwaitExit checks that the pidfd wait returns as soon as the process exits, and not
// before: a running process makes it wait until the deadline.
func TestAwaitExit(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ours := func() bool { return true } // a child that nobody reaps keeps its pid
	start := time.Now()
	exited, watched := awaitExit(cmd.Process.Pid, ours, start.Add(100*time.Millisecond))
	if !watched {
		t.Skip("no pidfds in this kernel")
	}
	if exited || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("a running process: exited=%v after %v, want a wait until the deadline", exited, time.Since(start))
	}

	done := make(chan bool, 1)
	go func() {
		exited, _ := awaitExit(cmd.Process.Pid, ours, time.Now().Add(time.Minute))
		done <- exited
	}()
	killed := time.Now()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case exited := <-done:
		if !exited {
			t.Fatal("the wait ended without the exit")
		}
		if took := time.Since(killed); took > 5*time.Second {
			t.Fatalf("the exit was seen after %v", took)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the exit was not seen")
	}

	// A process that is not ours any more has exited, without a pidfd.
	if exited, watched := awaitExit(cmd.Process.Pid, func() bool { return false }, time.Now().Add(time.Minute)); !exited || !watched {
		t.Fatalf("not ours: exited=%v watched=%v", exited, watched)
	}
}
