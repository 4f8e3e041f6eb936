package probe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// execOutputCap bounds how much of each of a program's output streams is kept; the rest is
// read and discarded so the program never blocks on a full pipe.
const execOutputCap = 64 << 10

// execWaitDelay is how long Wait waits for the output pipes after the program was killed or
// exited while something it started still holds them open.
const execWaitDelay = 250 * time.Millisecond

// reasonMaxLen is the longest reason the exec, lua and mysql probes report.
const reasonMaxLen = 200

// execProbe runs an external program following the monitoring-plugin convention: exit status
// 0 is healthy, anything else (including being killed at the timeout) is unhealthy. It holds
// no mutable state, so it is safe for concurrent use.
//
// Parameters:
//
//	command  path or name (searched in PATH) of the program; `script` is accepted as an alias.
//	         Exactly one of them is required. (CoreDNS-GSLB's `custom` check, whose script is
//	         shell text, is the custom type: see customProbe.)
//	args     arguments: a string or a list of strings.
//	env      extra environment variables, a mapping of names to values.
//
// The program runs with a minimal environment: PATH (from meridian's own environment), then
// `env`, then MERIDIAN_BACKEND_ADDRESS and MERIDIAN_BACKEND_PORT (empty when the backend has no
// port), which `env` cannot override. It runs in its own process group; at the timeout, and
// after it exits, the whole group is killed so no child outlives a probe.
type execProbe struct {
	path    string // resolved with exec.LookPath at load
	args    []string
	env     []string
	timeout time.Duration
}

// newExecProbe compiles an exec check; it fails when the command cannot be found or is not
// executable.
func newExecProbe(p *params, t Target, timeout time.Duration) (Prober, error) {
	command := p.String("command", "")
	script := p.String("script", "")
	args := p.Strings("args")
	extra := p.StringMap("env")
	switch {
	case command != "" && script != "":
		return nil, errors.New("params: set either command or script (its legacy name), not both")
	case command == "" && script == "":
		return nil, errors.New("params.command: required (the program to run)")
	case command == "":
		command = script
	}
	path, err := exec.LookPath(command)
	if err != nil {
		return nil, fmt.Errorf("params.command: %q: %w", command, execLookupError(err))
	}
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("params.env: invalid variable name %q", k)
		}
		if strings.HasPrefix(k, "MERIDIAN_BACKEND_") {
			return nil, fmt.Errorf("params.env: %s is set by meridian", k)
		}
		env = append(env, k+"="+extra[k])
	}
	env = append(env, execBackendEnv(t)...)
	return &execProbe{path: path, args: args, env: env, timeout: timeout}, nil
}

// execBackendEnv is the backend's part of a program's environment: MERIDIAN_BACKEND_ADDRESS
// and MERIDIAN_BACKEND_PORT (empty when the backend has no port).
func execBackendEnv(t Target) []string {
	port := ""
	if t.Port != 0 {
		port = strconv.Itoa(int(t.Port))
	}
	return []string{"MERIDIAN_BACKEND_ADDRESS=" + t.Host, "MERIDIAN_BACKEND_PORT=" + port}
}

// execLookupError unwraps exec.LookPath's error to its cause ("executable file not found in
// $PATH", "permission denied", "no such file or directory").
func execLookupError(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

// Probe runs the program once and waits for it, at most until ctx is done.
func (e *execProbe) Probe(ctx context.Context) Result {
	cmd := exec.CommandContext(ctx, e.path, e.args...)
	cmd.Env = e.env
	stdout, stderr := &execBuffer{}, &execBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Kill the whole process group: a shell script's children (sleep, curl...) die with it.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = execWaitDelay
	if err := cmd.Start(); err != nil {
		if deadlinePassed(ctx) {
			return Fail("%s", timeoutAfterReason(e.timeout))
		}
		return Fail("exec: %v", execLookupError(err))
	}
	err := cmd.Wait()
	if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState.Success() {
		// The program exited 0 but something it started kept its output open: still healthy.
		err = nil
	}
	// Reap whatever the program left behind in its group; ESRCH when nothing is left.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if deadlinePassed(ctx) {
		return Fail("%s", timeoutAfterReason(e.timeout))
	}
	line := firstLine(stdout.String())
	if line == "" {
		line = firstLine(stderr.String())
	}
	if err != nil {
		if line == "" {
			return Fail("%s", clipReason(err.Error()))
		}
		return Fail("%s", line)
	}
	if line == "" {
		line = "exit status 0"
	}
	return Pass(line)
}

// execBuffer keeps the first execOutputCap bytes written to it and discards the rest; it is
// safe for the goroutines exec.Cmd copies output with.
type execBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer; it never fails, so the program is never sent EPIPE.
func (b *execBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := execOutputCap - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// String returns what was kept.
func (b *execBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// firstLine returns the first non-blank line of s, trimmed and clipped to reasonMaxLen.
func firstLine(s string) string {
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			return clipReason(line)
		}
	}
	return ""
}

// clipReason shortens s to at most reasonMaxLen bytes without splitting a UTF-8 sequence,
// marking the cut with "...".
func clipReason(s string) string {
	if len(s) <= reasonMaxLen {
		return s
	}
	cut := reasonMaxLen - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// timeoutAfterReason is the reason of a probe that ran out of time.
func timeoutAfterReason(timeout time.Duration) string {
	return "timeout after " + timeout.String()
}

// deadlinePassed reports whether ctx is done or its deadline has passed: an I/O timeout can be
// seen a moment before the context's own timer marks it done.
func deadlinePassed(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	deadline, ok := ctx.Deadline()
	return ok && !time.Now().Before(deadline)
}
