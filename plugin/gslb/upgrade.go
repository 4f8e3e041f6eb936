package gslb

import (
	"os"
	"time"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/engine"
)

// A binary upgrade (SIGUSR2, caddy's Upgrade) starts the binary anew as a child process that
// inherits CoreDNS's listening sockets, waits until the child serves, then stops this process's
// servers and returns from coremain.Run, without the plugins' shutdown callbacks. The sockets
// stay open in the child, so no query queued on them is lost. What the gslb blocks own besides
// (the fast path's sockets, the state file's last write, the admin listener, the health
// checks) is stopped by Handover, which the main function calls then; the engines' registry
// keeps the callbacks (engine.Registry.OnShutdown).

// onShutdown runs stop when CoreDNS shuts c's instance down (a Corefile reload, SIGTERM), or
// when Handover runs first, whichever comes first; never twice. A Corefile reload that fails
// discards its new instance without its shutdown callbacks: the old instance's restart-failed
// callback forgets them.
func onShutdown(c *caddy.Controller, stop func() error) {
	load := c.Context()
	c.OnShutdown(engine.Default.OnShutdown(load, stop))
	c.OnRestartFailed(func() error {
		engine.Default.ForgetOtherLoads(load)
		return nil
	})
}

// Handover runs the shutdown callbacks of every live gslb block, the last registered first (a
// block's fast path stops before its engine): after a binary upgrade, once caddy has stopped
// the servers (engine.Registry.Handover).
func Handover() {
	for _, err := range engine.Default.Handover() {
		log.Errorf("handing over to the upgraded process: %v", err)
	}
}

// prepareUpgrades readies this process for a binary upgrade (engine.Registry.PrepareUpgrades).
// It is a startup callback of every gslb block, which caddy runs before the process counts as
// started (before it writes its PID file or tells a parent or systemd that it serves).
func prepareUpgrades() error {
	engine.Default.PrepareUpgrades(log)
	return nil
}

// awaitHandover makes the engines' registry wait for the state files of the parent of a
// binary upgrade (engine.Registry.AwaitHandover), when this process is one.
func awaitHandover() {
	if parentServes() {
		engine.Default.AwaitHandover(parent)
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
