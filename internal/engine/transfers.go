package engine

import (
	"context"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/axfr"
	"github.com/meridian-gslb/meridian/internal/source/periodic"
)

// transferCheck is how often the zones of a block with transfers are checked for changes to
// their transfer content (the zones' change counters make a check of an unchanged zone cheap):
// the longest a secondary waits for a NOTIFY after what the zone answers changed.
const transferCheck = time.Second

// transfers is a block's zone transfers: its zones' serials, raised when their content
// changes, and the NOTIFY sent then.
type transfers struct {
	notify func(origin string) error
	loop   periodic.Loop
}

// EnableTransfers turns on zone transfers of the block's zones (the transfer plugin of the
// server block found the gslb plugin): from now on each zone's SOA serial follows what a
// transfer of it carries (axfr.Versioner), checked every second, and notify is called with
// the origin of each zone whose serial was raised, to send the secondaries a NOTIFY. The
// versioner outlives Corefile reloads, with the block's health manager. Stop ends the checks.
func (e *Engine) EnableTransfers(notify func(origin string) error) {
	e.reloadMu.Lock()
	e.shared.transfers.Store(true)
	e.xfr = &transfers{notify: notify}
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
		z := snap.ZoneOf(origin)
		if z == nil {
			continue // a reload between took the zone away
		}
		e.log.Infof("zone %s changed: serial %d, notifying its secondaries", origin, z.Serial())
		if err := e.xfr.notify(origin); err != nil {
			e.log.Warningf("notify for zone %s: %v", origin, err)
		}
	}
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
