package main

import (
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/overlay"
)

func TestCtlForceUpAndScheduledDrain(t *testing.T) {
	_, store, addr := startCtlAPI(t, admin.Config{})
	env := map[string]string{"MERIDIAN_API": "http://" + addr}
	const key = "www.example.org.|2001:db8::1|443"

	if code, out, errOut := ctl(env, "force-up", "-key", key, "-for", "1h", "-reason", "probe is wrong"); code != 0 || !strings.Contains(out, "force-up: 1 backends until") {
		t.Fatalf("force-up: %d\n%s%s", code, out, errOut)
	}
	if o, ok := store.Get(key); !ok || o.Action != overlay.ForceUp || o.Expires.IsZero() {
		t.Fatalf("override after force-up: %+v", o)
	}
	if _, out, _ := ctl(env, "status", "-key", key); !strings.Contains(out, "force-up until") {
		t.Errorf("status does not show the force-up:\n%s", out)
	}

	before := time.Now()
	code, out, errOut := ctl(env, "drain", "-key", key, "--in", "10m", "-for", "30m")
	if code != 0 || !strings.Contains(out, "drain: 1 backends from") {
		t.Fatalf("drain --in: %d\n%s%s", code, out, errOut)
	}
	o, _ := store.Get(key)
	if o.Action != overlay.Drain || o.Starts.Before(before.Add(10*time.Minute-time.Second)) || o.Expires.Sub(o.Starts) != 30*time.Minute {
		t.Fatalf("override after drain --in 10m -for 30m: %+v", o)
	}
	if _, out, _ := ctl(env, "status", "-key", key); !strings.Contains(out, "drain from") {
		t.Errorf("status does not show the scheduled drain:\n%s", out)
	}
	at := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	if code, _, errOut := ctl(env, "drain", "-key", key, "--at", at.Format(time.RFC3339)); code != 0 {
		t.Fatalf("drain --at: %d %s", code, errOut)
	}
	if o, _ := store.Get(key); !o.Starts.Equal(at) {
		t.Fatalf("drain --at %s starts %v", at, o.Starts)
	}

	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"drain", "-key", key, "--at", "tomorrow"}, 2, "-at"},
		{[]string{"drain", "-key", key, "--at", "10:00", "--in", "5m"}, 2, "not both"},
		{[]string{"drain", "-key", key, "--at", "2001-01-01T00:00:00Z"}, 1, "not in the future"},
		{[]string{"disable", "-key", key, "--in", "5m"}, 2, "flag provided but not defined: -in"},
	} {
		code, _, errOut := ctl(env, c.args...)
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: %d %q, want %d with %q", c.args, code, errOut, c.code, c.msg)
		}
	}
}

func TestParseAt(t *testing.T) {
	loc := time.FixedZone("here", 3600)
	now := time.Date(2030, 1, 2, 9, 0, 0, 0, loc)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"2030-01-02T10:00:00Z", time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC)},
		{"2030-01-03 10:00", time.Date(2030, 1, 3, 10, 0, 0, 0, loc)},
		{"10:00", time.Date(2030, 1, 2, 10, 0, 0, 0, loc)},
		{"10:00:30", time.Date(2030, 1, 2, 10, 0, 30, 0, loc)},
	} {
		got, err := parseAt(tc.in, now)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("parseAt(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	if _, err := parseAt("soon", now); err == nil {
		t.Error("parseAt(soon) succeeded")
	}
}

// FuzzParseAt: parseAt never panics, and a time it accepts is the same instant when given
// back in RFC 3339.
func FuzzParseAt(f *testing.F) {
	for _, s := range []string{"2030-01-02T10:00:00Z", "2030-01-03 10:00", "10:00", "10:00:30", "", "25:00", "2030-02-30 10:00"} {
		f.Add(s)
	}
	now := time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseAt(s, now)
		if err != nil {
			return
		}
		again, err := parseAt(got.Format(time.RFC3339), now)
		if err != nil || !again.Equal(got.Truncate(time.Second)) {
			t.Fatalf("parseAt(%q) = %v, and back %v, %v", s, got, again, err)
		}
	})
}
