package engine

import (
	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/axfr"
)

// EnableTransfers turns on zone transfers of the block's zones (the transfer plugin of the
// server block found the gslb plugin): from now on each zone's SOA serial follows what a
// transfer of it carries (axfr.Versioner), checked every second, and notify is called with
// the origin of each zone whose serial was raised, to send the secondaries a NOTIFY. The
// versioner outlives Corefile reloads, with the block's health manager. Stop ends the checks.
// It is called when the server starts (the adapter's OnStartup).
func (e *Engine) EnableTransfers(notify func(origin string) error) {
	e.shared.transfers.Store(true)
	n := axfr.NewNotifier(e.shared.versioner, e.Snapshot, &e.reloadMu, notify, e.log, e.transferCheck)
	n.Start()
	e.stops = append(e.stops, n.Stop)
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
