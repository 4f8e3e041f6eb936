package probe

import (
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
)

// TestCustomProbe runs CoreDNS-GSLB-style shell scripts: text run by /bin/sh -c, the backend
// in BACKEND_* variables, exit status 0 healthy.
func TestCustomProbe(t *testing.T) {
	target := cgTarget
	target.Port = 8443
	tests := []struct {
		name    string
		script  string
		timeout time.Duration
		ok      bool
		reason  string
	}{
		{"environment", `echo "$BACKEND_ADDRESS $BACKEND_FQDN $BACKEND_PRIORITY $BACKEND_ENABLE $MERIDIAN_BACKEND_PORT"`, time.Second,
			true, "127.0.0.1 webapp.example.com. 3 true 8443"},
		{"shell text", `if [ "$BACKEND_PRIORITY" -lt 5 ]; then echo "priority $BACKEND_PRIORITY ok"; else exit 1; fi`, time.Second,
			true, "priority 3 ok"},
		{"a failing test", `[ "$BACKEND_PRIORITY" -gt 5 ]`, time.Second, false, "exit status 1"},
		{"exit status", "echo draining >&2\nexit 2", time.Second, false, "draining"},
		{"commands from PATH", `basename /checks/found`, time.Second, true, "found"},
		{"nothing else of meridian's environment", `test -z "$HOME" && echo clean`, time.Second, true, "clean"},
		{"timeout", "sleep 10", 200 * time.Millisecond, false, "timeout after 200ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := extProbe(t, "custom", map[string]any{"script": tc.script}, target, tc.timeout)
			checkResult(t, r, time.Since(start), tc.timeout, tc.ok, tc.reason)
		})
	}
}

func TestCustomLoad(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"no script", nil, "params.script: required"},
		{"blank script", map[string]any{"script": "  \n"}, "params.script: required"},
		{"unknown param", map[string]any{"script": "true", "command": "/bin/true"}, "params.command: unknown parameter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := extCompile(t, "custom", tc.params, cgTarget, time.Second)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// The script sees the record and the priority: backends that differ in them do not share
	// a run.
	key := func(record string, priority int) string {
		target := cgTarget
		target.Record, target.Priority = record, priority
		c, err := Compile(config.HealthCheck{Type: "custom", Params: config.NewParams(map[string]any{"script": "true"})}, target, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return c.Key
	}
	base := key("a.example.", 1)
	if base == key("b.example.", 1) || base == key("a.example.", 2) || base != key("a.example.", 1) {
		t.Error("the record and the priority must make the check's identity, and only they")
	}
}
