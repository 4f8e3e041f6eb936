package fastpath

import (
	"runtime"
	"sync"
)

// procs counts the loops of the running fast paths, and the process's GOMAXPROCS before they
// added theirs.
var procs struct {
	sync.Mutex
	base, loops int
}

// processors returns the process's processors, less those the running loops added: a fast
// path makes one loop per processor by default.
func processors() int {
	procs.Lock()
	defer procs.Unlock()
	if procs.loops == 0 {
		return runtime.GOMAXPROCS(0)
	}
	return procs.base
}

// reserveProcs adds n running loops (a negative n takes them away) and sets GOMAXPROCS to
// what it was before any loop ran plus the loops. A loop waits for packets in a blocking
// system call, and the runtime hands the processor of a thread in a system call to other work
// only when it has no idle one (or after 10 ms): with one processor more per loop, the loop's
// thread keeps its processor and goes on at once when the kernel wakes it, and the rest of the
// process keeps as many as it had. Setting GOMAXPROCS stops the runtime's own updates of it
// (to a changed CPU limit).
func reserveProcs(n int) {
	procs.Lock()
	defer procs.Unlock()
	if procs.loops == 0 {
		procs.base = runtime.GOMAXPROCS(0)
	}
	procs.loops += n
	runtime.GOMAXPROCS(procs.base + procs.loops)
}
