//go:build !linux

package gslb

import "time"

// awaitParentExit has no pidfd to wait on here: the caller looks for the parent itself.
func awaitParentExit(time.Time) (exited, watched bool) { return false, false }
