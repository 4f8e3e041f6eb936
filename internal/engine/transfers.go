package engine

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/axfr"
	"github.com/meridian-gslb/meridian/internal/periodic"
)

// transferCheck is how often the zones of a block with transfers are checked for changes to
// their transfer content (the zones' change counters make a check of an unchanged zone cheap):
// the longest a secondary waits for a NOTIFY after what the zone answers changed. A variable
// for the tests only.
var transferCheck = time.Second

// notifyAttempts bounds how often a zone's NOTIFY is sent for one change when its secondaries
// do not take it (each attempt is the transfer plugin's: three exchanges with each
// secondary): a later check sends it again, and after the last failure the secondaries learn
// of the change at their next SOA refresh.
const notifyAttempts = 5

// transfers is a block's zone transfers: its zones' serials, raised when their content
// changes, and the NOTIFY sent then.
type transfers struct {
	notify func(origin string) error
	loop   periodic.Loop
	// failed counts, by origin, the failed NOTIFY attempts for the zone's last change: the
	// next check sends those again. Only the loop's goroutine uses it.
	failed map[string]int
}

// EnableTransfers turns on zone transfers of the block's zones (the transfer plugin of the
// server block found the gslb plugin): from now on each zone's SOA serial follows what a
// transfer of it carries (axfr.Versioner), checked every second, and notify is called with
// the origin of each zone whose serial was raised, to send the secondaries a NOTIFY. The
// versioner outlives Corefile reloads, with the block's health manager. Stop ends the checks.
func (e *Engine) EnableTransfers(notify func(origin string) error) {
	e.reloadMu.Lock()
	e.shared.transfers.Store(true)
	e.xfr = &transfers{notify: notify, failed: map[string]int{}}
	e.reloadMu.Unlock()
	e.xfr.loop.Start(func(context.Context) { e.checkTransfers() }, func() time.Duration { return transferCheck })
	e.stops = append(e.stops, e.xfr.loop.Stop)
}

// checkTransfers brings the serials of the current snapshot's zones up to date and notifies
// the secondaries of the zones whose serial was raised.
func (e *Engine) checkTransfers() {
	e.reloadMu.Lock()
	snap := e.Snapshot()
	e.shared.versioner.Update(snap)
	raised := e.shared.versioner.Raised() // a reload's too
	e.reloadMu.Unlock()
	for _, origin := range raised {
		delete(e.xfr.failed, origin) // a new change: its NOTIFY gets every attempt again
	}
	for _, origin := range e.xfr.due(raised) {
		z := snap.ZoneOf(origin)
		if z == nil {
			delete(e.xfr.failed, origin)
			continue // a reload between took the zone away
		}
		if _, retry := e.xfr.failed[origin]; !retry {
			e.log.Infof("zone %s changed: serial %d, notifying its secondaries", origin, z.Serial())
		}
		err := e.xfr.notify(origin)
		if err == nil {
			delete(e.xfr.failed, origin)
			continue
		}
		n := e.xfr.failed[origin] + 1
		if n < notifyAttempts {
			e.xfr.failed[origin] = n
			e.log.Warningf("notify for zone %s (attempt %d of %d, again at the next check): %v", origin, n, notifyAttempts, err)
			continue
		}
		delete(e.xfr.failed, origin)
		e.log.Warningf("notify for zone %s: %v; gave up after %d attempts: its secondaries see serial %d at their next refresh", origin, err, n, z.Serial())
	}
}

// due returns the origins to notify: those raised, then those whose NOTIFY failed before,
// each once, in a stable order.
func (x *transfers) due(raised []string) []string {
	out := slices.Clone(raised)
	for _, origin := range slices.Sorted(maps.Keys(x.failed)) {
		if !slices.Contains(out, origin) {
			out = append(out, origin)
		}
	}
	return out
}

// Transfer returns the records of a transfer of the zone with origin from serial (0: AXFR),
// as axfr.Transfer makes them from the current snapshot; ok is false when the block serves
// no such zone.
func (e *Engine) Transfer(origin string, serial uint32) ([]dns.RR, bool) {
	snap := e.Snapshot()
	if snap == nil {
		return nil, false
	}
	return axfr.Transfer(snap, origin, serial)
}
