package probe

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
)

// extCompile compiles a check of type typ with params (as the config loader produces them)
// for target, through Compile so unknown parameters are caught too.
func extCompile(t *testing.T, typ string, params map[string]any, target Target, timeout time.Duration) (*Compiled, error) {
	t.Helper()
	hc := config.HealthCheck{Type: typ, Params: config.NewParams(params)}
	return Compile(hc, target, timeout)
}

// extProbe compiles the check, failing the test on an error, and runs one probe bounded by
// the check's timeout.
func extProbe(t *testing.T, typ string, params map[string]any, target Target, timeout time.Duration) Result {
	t.Helper()
	c, err := extCompile(t, typ, params, target, timeout)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
	defer cancel()
	return c.Prober.Probe(ctx)
}

// writeShellScript writes an executable /bin/sh script with body into dir and returns its path.
func writeShellScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// execTarget is the backend the exec tests probe.
var execTarget = Target{Host: "192.0.2.7", IP: netip.MustParseAddr("192.0.2.7"), Port: 8443}

func TestExecProbe(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", 300)
	tests := []struct {
		name   string
		body   string
		params map[string]any
		target Target
		ok     bool
		reason string
	}{
		{name: "exit 0 with output", body: `echo "OK - all good"; echo second line; exit 0`, ok: true, reason: "OK - all good"},
		{name: "exit 0 silent", body: `exit 0`, ok: true, reason: "exit status 0"},
		{name: "exit 2 with output", body: `echo; echo "  CRITICAL - queue full  "; exit 2`, reason: "CRITICAL - queue full"},
		{name: "exit 2 silent", body: `exit 2`, reason: "exit status 2"},
		{name: "stderr when stdout is empty", body: `echo "WARNING - slow" >&2; exit 1`, reason: "WARNING - slow"},
		{name: "stdout wins over stderr", body: `echo err >&2; echo out; exit 1`, reason: "out"},
		{name: "long line clipped", body: `echo ` + long + `; exit 2`, reason: strings.Repeat("x", 197) + "..."},
		{
			name:   "environment",
			body:   `echo "$MERIDIAN_BACKEND_ADDRESS|$MERIDIAN_BACKEND_PORT|$EXTRA|$HOME|${PATH:+path}"; exit 3`,
			params: map[string]any{"env": map[string]any{"EXTRA": "v 1"}},
			reason: "192.0.2.7|8443|v 1||path",
		},
		{
			name:   "no backend port",
			body:   `echo "port=[$MERIDIAN_BACKEND_PORT]"; exit 1`,
			target: Target{Host: "db.example"},
			reason: "port=[]",
		},
		{
			name:   "args",
			body:   `echo "$#:$1:$2"; [ "$2" = "b c" ]`,
			params: map[string]any{"args": []any{"a", "b c"}},
			ok:     true,
			reason: "2:a:b c",
		},
		{
			name:   "single string arg",
			body:   `echo "$#:$1"`,
			params: map[string]any{"args": "--check"},
			ok:     true,
			reason: "1:--check",
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeShellScript(t, dir, "check"+strconv.Itoa(i), tc.body)
			params := map[string]any{"command": path}
			for k, v := range tc.params {
				params[k] = v
			}
			target := tc.target
			if target.Host == "" {
				target = execTarget
			}
			r := extProbe(t, "exec", params, target, 5*time.Second)
			if r.OK != tc.ok || r.Reason != tc.reason {
				t.Errorf("got %+v, want OK=%v reason %q", r, tc.ok, tc.reason)
			}
		})
	}
}

// TestExecLegacyScriptParam checks that CoreDNS-GSLB's `script` name for the command works,
// and that a bare name is searched in PATH.
func TestExecLegacyScriptParam(t *testing.T) {
	path := writeShellScript(t, t.TempDir(), "legacy", `echo legacy ok`)
	if r := extProbe(t, "exec", map[string]any{"script": path}, execTarget, 5*time.Second); !r.OK || r.Reason != "legacy ok" {
		t.Errorf("script param: got %+v", r)
	}
	if r := extProbe(t, "exec", map[string]any{"command": "true"}, execTarget, 5*time.Second); !r.OK {
		t.Errorf("command found in PATH: got %+v", r)
	}
	if r := extProbe(t, "exec", map[string]any{"command": "false"}, execTarget, 5*time.Second); r.OK || r.Reason != "exit status 1" {
		t.Errorf("false: got %+v", r)
	}
}

func TestExecLoadErrors(t *testing.T) {
	dir := t.TempDir()
	ok := writeShellScript(t, dir, "ok", "exit 0")
	notExec := filepath.Join(dir, "plain")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"missing command", map[string]any{"command": filepath.Join(dir, "nope")}, "no such file or directory"},
		{"not in PATH", map[string]any{"command": "meridian-no-such-check"}, "executable file not found"},
		{"not executable", map[string]any{"command": notExec}, "permission denied"},
		{"no command", map[string]any{"args": []any{"x"}}, "params.command: required"},
		{"command and script", map[string]any{"command": ok, "script": ok}, "either command or script"},
		{"reserved env", map[string]any{"command": ok, "env": map[string]any{"MERIDIAN_BACKEND_PORT": "1"}}, "set by meridian"},
		{"unknown param", map[string]any{"command": ok, "arguments": "x"}, "params.arguments: unknown parameter"},
		{"bad args", map[string]any{"command": ok, "args": []any{1}}, "params.args: must be a list of strings"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := extCompile(t, "exec", tc.params, execTarget, time.Second)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestExecTimeoutKillsProcessGroup checks that a program still running at the timeout is
// killed with its children, and that the probe returns promptly.
func TestExecTimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	path := writeShellScript(t, dir, "hang", `sleep 30 & echo $! > `+pidFile+`; echo started; wait`)
	timeout := 300 * time.Millisecond
	start := time.Now()
	r := extProbe(t, "exec", map[string]any{"command": path}, execTarget, timeout)
	elapsed := time.Since(start)
	if r.OK || r.Reason != "timeout after 300ms" {
		t.Errorf("got %+v, want a timeout", r)
	}
	if elapsed > timeout+time.Second {
		t.Errorf("probe took %s with a %s timeout", elapsed, timeout)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the script did not start its child: %v", err)
	}
	waitGone(t, strings.TrimSpace(string(b)), "child sleep survived the timeout")
}

// TestExecBackgroundChildDoesNotHang checks that a program exiting 0 while a child it left
// running holds its output open passes promptly, and that the child is killed.
func TestExecBackgroundChildDoesNotHang(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	path := writeShellScript(t, dir, "bg", `sleep 30 & echo $! > `+pidFile+`; echo OK`)
	start := time.Now()
	r := extProbe(t, "exec", map[string]any{"command": path}, execTarget, 5*time.Second)
	if !r.OK || r.Reason != "OK" {
		t.Errorf("got %+v, want OK", r)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("probe took %s", elapsed)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, strings.TrimSpace(string(b)), "background child survived the probe")
}

// waitGone fails the test with msg unless process pid has exited within two seconds.
func waitGone(t *testing.T, pid, msg string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for execProcessAlive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %s)", msg, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestExecConcurrentProbes runs one prober from several goroutines (for the race detector).
func TestExecConcurrentProbes(t *testing.T) {
	path := writeShellScript(t, t.TempDir(), "env", `echo "$MERIDIAN_BACKEND_ADDRESS"`)
	c, err := extCompile(t, "exec", map[string]any{"command": path}, execTarget, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan Result)
	for range 8 {
		go func() { done <- c.Prober.Probe(context.Background()) }()
	}
	for range 8 {
		if r := <-done; !r.OK || r.Reason != "192.0.2.7" {
			t.Errorf("got %+v", r)
		}
	}
}

// execProcessAlive reports whether pid runs (a zombie waiting for its parent counts as dead).
func execProcessAlive(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses: "123 (sleep) S ...".
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// checkResult fails the test unless r has ok and reason (a reason ending in "..." is a prefix)
// and the probe returned within a second of its timeout.
func checkResult(t *testing.T, r Result, elapsed, timeout time.Duration, ok bool, reason string) {
	t.Helper()
	if elapsed > timeout+time.Second {
		t.Errorf("probe took %s with a %s timeout", elapsed, timeout)
	}
	match := r.Reason == reason
	if prefix, cut := strings.CutSuffix(reason, "..."); cut {
		match = strings.HasPrefix(r.Reason, prefix)
	}
	if r.OK != ok || !match {
		t.Errorf("got %+v, want OK=%v reason %q", r, ok, reason)
	}
}
