package gslb

import (
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/engine"
)

// A binary upgrade (SIGUSR2, caddy's Upgrade; see prepareUpgrades) starts the binary anew as a
// child process that inherits CoreDNS's listening sockets, waits until the child serves, then
// stops this process's servers and returns from coremain.Run, without the plugins' shutdown
// callbacks. The sockets stay open in the child, so no query queued on them is lost. What the
// gslb blocks own besides (the fast path's sockets, the state file's last write, the admin
// listener, the health checks) is stopped by Handover, which the main function calls then.

// prepareUpgrades readies this process for a binary upgrade, once: on SIGUSR2 (which caddy's
// own handler answers by starting the child) it writes the state files for the child
// (engine.Registry.WriteHandover), which the child waits for before it reads them
// (awaitHandover): the child starts every backend at the health this process knew. It is a
// startup callback of every gslb block, which caddy runs before the process counts as started
// (before it writes its PID file or tells a parent or systemd that it serves).
var prepareUpgrades = sync.OnceValue(func() error {
	usr2 := make(chan os.Signal, 1)
	signal.Notify(usr2, syscall.SIGUSR2)
	go func() {
		for range usr2 {
			log.Infof("SIGUSR2: the state files are written for the upgraded process")
			engine.Default.WriteHandover()
		}
	}()
	return nil
})

// awaitHandover makes the engines' registry wait for the state files of the parent of a
// binary upgrade (engine.Registry.AwaitHandover), once, when this process is one.
var awaitHandover = sync.OnceFunc(func() {
	if parentServes() {
		engine.Default.AwaitHandover(parent)
	}
})

// live holds the shutdown callbacks of the gslb blocks whose servers run, in the order they
// were registered: those of the current Corefile load.
var live struct {
	sync.Mutex
	stops []*liveStop
}

// liveStop is one shutdown callback of a block, of the Corefile load load (caddy's context).
type liveStop struct {
	load any
	stop func() error
}

// onShutdown runs stop when CoreDNS shuts c's instance down (a Corefile reload, SIGTERM), or
// when Handover runs first, whichever comes first; never twice. A Corefile reload that fails
// discards its new instance without its shutdown callbacks: the old instance's restart-failed
// callback forgets them.
func onShutdown(c *caddy.Controller, stop func() error) {
	ls := &liveStop{load: c.Context(), stop: stop}
	live.Lock()
	live.stops = append(live.stops, ls)
	live.Unlock()
	c.OnShutdown(func() error {
		if !take(ls) {
			return nil
		}
		return stop()
	})
	c.OnRestartFailed(func() error {
		live.Lock()
		defer live.Unlock()
		live.stops = slices.DeleteFunc(live.stops, func(o *liveStop) bool { return o.load != ls.load })
		return nil
	})
}

// take removes ls from the live callbacks and reports whether it was there.
func take(ls *liveStop) bool {
	live.Lock()
	defer live.Unlock()
	i := slices.Index(live.stops, ls)
	if i < 0 {
		return false
	}
	live.stops = slices.Delete(live.stops, i, i+1)
	return true
}

// Handover runs the shutdown callbacks of every live gslb block, the last registered first (a
// block's fast path stops before its engine): after a binary upgrade, once caddy has stopped
// the servers, so that the fast path steers its queries to the sockets the new process serves
// and answers what it has queued, and the engine writes its state file and closes the admin
// listener (which the new process has bound beside it) before this process exits.
func Handover() {
	live.Lock()
	stops := live.stops
	live.stops = nil
	live.Unlock()
	for i := len(stops) - 1; i >= 0; i-- {
		if err := stops[i].stop(); err != nil {
			log.Errorf("handing over to the upgraded process: %v", err)
		}
	}
}

// parentExitWait bounds how long an upgraded process waits for its parent to exit.
const parentExitWait = 2 * time.Minute

// parent is the process that started this one. In a binary upgrade it waits, alive, until this
// one serves, so it is the upgraded process's parent when the package initialises.
var parent = os.Getppid()

// parentServes reports whether this process is the child of a binary upgrade whose parent has
// not exited yet.
func parentServes() bool { return caddy.IsUpgrade() && os.Getppid() == parent }

// whenParentExits calls f, in the background, once the parent of a binary upgrade has exited
// (at once when it has; never when it outlives parentExitWait). The parent exits after its
// Handover: f runs when the sockets of its fast paths have left their groups. The kernel tells
// of the exit through a pidfd where it has them (Linux 5.3), so that the fast path takes the
// queries back at once; elsewhere the parent is looked for every millisecond.
func whenParentExits(f func()) {
	go func() {
		deadline := time.Now().Add(parentExitWait)
		if exited, watched := awaitParentExit(deadline); exited || (!watched && pollParentExit(deadline)) {
			f()
		}
	}()
}

// pollParentExit waits until the parent has exited (true) or deadline passed (false), looking
// every millisecond.
func pollParentExit(deadline time.Time) bool {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for now := range tick.C {
		if os.Getppid() != parent {
			return true
		}
		if now.After(deadline) {
			return false
		}
	}
	return false
}
