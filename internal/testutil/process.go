package testutil

import (
	"os/exec"
	"testing"
	"time"
)

// process is a program a test started, with its output.
type process struct {
	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{}
}

// startProcess starts cmd, collecting its output, and stops it when the test ends.
func startProcess(t testing.TB, cmd *exec.Cmd) *process {
	t.Helper()
	p := &process{cmd: cmd, logs: new(syncBuffer), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(p.stop)
	return p
}

// stop ends the process and waits for it; it may be called more than once.
func (p *process) stop() { terminate(p.cmd.Process, p.done) }

// waitFor polls ready until it returns true, failing the test with the process's output when
// the process exits first or timeout passes.
func (p *process) waitFor(t testing.TB, what string, timeout time.Duration, ready func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ready() {
		select {
		case <-p.done:
			t.Fatalf("%s exited: %s", what, p.logs.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within %s: %s", what, timeout, p.logs.String())
		}
	}
}
