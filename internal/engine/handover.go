package engine

import (
	"os"
	"os/signal"
	"slices"
	"syscall"
)

// A binary upgrade (SIGUSR2: the process starts the binary anew as a child that inherits the
// DNS listeners, waits until the child serves, then stops its servers and exits without the
// plugins' shutdown callbacks) hands over through the registry: the child starts every backend
// at the health the parent knew when the upgrade began (WriteHandover, AwaitHandover), and the
// parent stops what its gslb blocks own besides their listeners (their fast paths, the state
// files' last writes, the admin listeners, the health checks) by running their live stops
// (Handover).

// liveStop is one stop of a gslb block whose server runs, of the Corefile load load.
type liveStop struct {
	load any
	stop func() error
}

// OnShutdown registers stop, a shutdown callback of a block of load whose server runs, and
// returns the function that runs it once: when the server shuts the block down (a Corefile
// reload, SIGTERM) or when Handover runs first, whichever comes first; never twice.
func (r *Registry) OnShutdown(load any, stop func() error) (shutdown func() error) {
	ls := &liveStop{load: load, stop: stop}
	r.mu.Lock()
	r.live = append(r.live, ls)
	r.mu.Unlock()
	return func() error {
		if !r.take(ls) {
			return nil
		}
		return stop()
	}
}

// ForgetOtherLoads forgets the shutdown callbacks of every load but load: a Corefile reload
// that failed discards its new instance without running them.
func (r *Registry) ForgetOtherLoads(load any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live = slices.DeleteFunc(r.live, func(o *liveStop) bool { return o.load != load })
}

// take removes ls from the live stops and reports whether it was there.
func (r *Registry) take(ls *liveStop) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return remove(&r.live, ls)
}

// Handover runs the live stops, the last registered first (a block's fast path stops before
// its engine), and returns their errors: after a binary upgrade, once the servers stopped, so
// that the fast paths steer their queries to the sockets the new process serves and answer
// what they queued, and the engines write their state files and close the admin listeners
// (which the new process has bound beside them) before this process exits.
func (r *Registry) Handover() []error {
	r.mu.Lock()
	stops := r.live
	r.live = nil
	r.mu.Unlock()
	var errs []error
	for i := len(stops) - 1; i >= 0; i-- {
		if err := stops[i].stop(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// PrepareUpgrades readies the process for a binary upgrade, once: on SIGUSR2 (which the
// server's own handler answers by starting the child) it writes the state files for the child
// (WriteHandover). Call it when the server starts, before the process counts as started.
func (r *Registry) PrepareUpgrades(log Logger) {
	r.upgrades.Do(func() {
		usr2 := make(chan os.Signal, 1)
		signal.Notify(usr2, syscall.SIGUSR2)
		go func() {
			for range usr2 {
				log.Infof("SIGUSR2: the state files are written for the upgraded process")
				r.WriteHandover()
			}
		}()
	})
}
