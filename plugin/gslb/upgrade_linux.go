package gslb

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// awaitParentExit waits on a pidfd of the parent until it has exited (exited) or deadline
// passed; watched is false when the kernel gave no pidfd, and the caller looks for itself.
func awaitParentExit(deadline time.Time) (exited, watched bool) {
	return awaitExit(parent, func() bool { return os.Getppid() == parent }, deadline)
}

// awaitExit waits on a pidfd of process pid until it has exited or deadline passed. ours
// reports whether pid is still the process meant (not yet exited, its pid not taken by
// another): for a parent, whether it is still this process's parent.
func awaitExit(pid int, ours func() bool, deadline time.Time) (exited, watched bool) {
	if !ours() {
		return true, true
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return errors.Is(err, unix.ESRCH), errors.Is(err, unix.ESRCH)
	}
	defer unix.Close(fd)
	// The pidfd is of the process meant if that is still ours now: one that had exited
	// before the pidfd was opened, and whose pid another process took, would not be.
	if !ours() {
		return true, true
	}
	for {
		wait := time.Until(deadline)
		if wait <= 0 {
			return false, true
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(wait.Milliseconds())+1)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return false, false
		case n > 0:
			return true, true
		}
	}
}
