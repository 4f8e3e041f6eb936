package axfr

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/periodic"
	"github.com/meridian-gslb/meridian/internal/publish"
)

// DefaultCheck is how often a Notifier checks the zones for changes to their transfer content
// (the zones' change counters make a check of an unchanged zone cheap): the longest a
// secondary waits for a NOTIFY after what the zone answers changed.
const DefaultCheck = time.Second

// NotifyAttempts bounds how often a zone's NOTIFY is sent for one change when its secondaries
// do not take it (each attempt is the transfer plugin's: three exchanges with each
// secondary): a later check sends it again, and after the last failure the secondaries learn
// of the change at their next SOA refresh.
const NotifyAttempts = 5

// Logger is where a Notifier reports NOTIFYs; CoreDNS's plugin logger satisfies it.
type Logger interface {
	Infof(format string, args ...any)
	Warningf(format string, args ...any)
}

// Notifier is the zone transfers' publisher of a gslb block: it keeps the zones' serials of
// the snapshot served following what a transfer of them carries (a Versioner), and sends the
// secondaries a NOTIFY when a zone's serial was raised.
type Notifier struct {
	versioner *Versioner
	served    publish.Served
	// loads is held while the versioner is brought up to date with the snapshot served: the
	// engine's lock of its loads, which update it too, so that an older snapshot never
	// follows a newer one.
	loads  sync.Locker
	notify func(origin string) error
	log    Logger
	every  time.Duration
	loop   periodic.Loop
	// failed counts, by origin, the failed NOTIFY attempts for the zone's last change: the
	// next check sends those again. Only the loop's goroutine uses it.
	failed map[string]int
}

var _ publish.Publisher = (*Notifier)(nil)

// NewNotifier returns the notifier of the snapshots served returns, whose serials versioner
// keeps (loads held while it updates it), calling notify with the origin of each zone whose
// serial was raised, every check interval (DefaultCheck when 0). It starts nothing.
func NewNotifier(versioner *Versioner, served publish.Served, loads sync.Locker, notify func(origin string) error, log Logger, every time.Duration) *Notifier {
	if every <= 0 {
		every = DefaultCheck
	}
	return &Notifier{versioner: versioner, served: served, loads: loads, notify: notify, log: log, every: every, failed: map[string]int{}}
}

// Name implements publish.Publisher.
func (n *Notifier) Name() string { return "zone transfers" }

// Start implements publish.Publisher: the checks start.
func (n *Notifier) Start() {
	n.loop.Start(func(context.Context) { n.check() }, func() time.Duration { return n.every })
}

// Stop implements publish.Publisher.
func (n *Notifier) Stop() { n.loop.Stop() }

// check brings the serials of the served snapshot's zones up to date and notifies the
// secondaries of the zones whose serial was raised.
func (n *Notifier) check() {
	n.loads.Lock()
	snap := n.served()
	n.versioner.Update(snap)
	raised := n.versioner.Raised() // a reload's too
	n.loads.Unlock()
	for _, origin := range raised {
		delete(n.failed, origin) // a new change: its NOTIFY gets every attempt again
	}
	for _, origin := range n.due(raised) {
		z := snap.ZoneOf(origin)
		if z == nil {
			delete(n.failed, origin)
			continue // a reload between took the zone away
		}
		if _, retry := n.failed[origin]; !retry {
			n.log.Infof("zone %s changed: serial %d, notifying its secondaries", origin, z.Serial())
		}
		err := n.notify(origin)
		if err == nil {
			delete(n.failed, origin)
			continue
		}
		k := n.failed[origin] + 1
		if k < NotifyAttempts {
			n.failed[origin] = k
			n.log.Warningf("notify for zone %s (attempt %d of %d, again at the next check): %v", origin, k, NotifyAttempts, err)
			continue
		}
		delete(n.failed, origin)
		n.log.Warningf("notify for zone %s: %v; gave up after %d attempts: its secondaries see serial %d at their next refresh", origin, err, k, z.Serial())
	}
}

// due returns the origins to notify: those raised, then those whose NOTIFY failed before,
// each once, in a stable order.
func (n *Notifier) due(raised []string) []string {
	out := slices.Clone(raised)
	for _, origin := range slices.Sorted(maps.Keys(n.failed)) {
		if !slices.Contains(out, origin) {
			out = append(out, origin)
		}
	}
	return out
}
