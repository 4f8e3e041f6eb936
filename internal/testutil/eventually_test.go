package testutil

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and stops the goroutine.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

// TestEventuallyFormatsLateArgs: a func() string argument says what it returns when the wait
// fails, not what it would have returned at its start; other arguments are as given.
func TestEventuallyFormatsLateArgs(t *testing.T) {
	state := "at the start"
	rec := &fatalRecorder{TB: t}
	func() {
		defer func() {
			if r := recover(); r != rec {
				panic(r)
			}
		}()
		Eventually(rec, 50*time.Millisecond, func() bool { state = "at the end"; return false }, "%s, %d", func() string { return state }, 7)
	}()
	if !strings.HasSuffix(rec.msg, "at the end, 7") {
		t.Errorf("message %q, want it to end with the state at the end and 7", rec.msg)
	}
}
