// Package resigner keeps a signed block's signatures fresh (a publisher): in rounds, and at each
// key timing event, it makes again the signatures of the served snapshot that are due
// (catalog.Snapshot.Resign: those within signature_refresh of their expiration, and all of
// them when a key changed state), and reports the keys and the signatures served in the
// metrics. Signing never runs on the query path; this is where what was signed when a
// snapshot or a view was built is kept valid.
package resigner

import (
	"context"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/dnssec"
	"github.com/meridian-gslb/meridian/internal/periodic"
	"github.com/meridian-gslb/meridian/internal/publish"
)

// maxRound is the longest time between two rounds.
const maxRound = time.Minute

// Resigner is the publisher of a signed block.
type Resigner struct {
	loop periodic.Loop

	mu      sync.Mutex
	served  publish.Served
	signers []*dnssec.Signer
}

// New returns a resigner that does nothing until configured.
func New() *Resigner { return &Resigner{} }

// Name implements publish.Publisher.
func (r *Resigner) Name() string { return "dnssec" }

// Configure sets the snapshot the block serves and the signers of its zones.
func (r *Resigner) Configure(served publish.Served, signers []*dnssec.Signer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.served, r.signers = served, signers
}

// Start implements publish.Publisher: the rounds start.
func (r *Resigner) Start() { r.loop.Start(func(context.Context) { r.Round(time.Now()) }, r.next) }

// Stop implements publish.Publisher: the rounds end, and the zones' metrics with them.
func (r *Resigner) Stop() {
	r.loop.Stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.signers {
		s.Forget()
	}
}

// Round makes the served snapshot's due signatures again at now and reports the metrics.
func (r *Resigner) Round(now time.Time) {
	r.mu.Lock()
	served, signers := r.served, r.signers
	r.mu.Unlock()
	if served == nil {
		return
	}
	snap := served()
	if snap == nil {
		return
	}
	stats := snap.Resign(now)
	for _, s := range signers {
		s.ReportKeys(now)
		if st, ok := stats[s.Zone()]; ok {
			s.ReportServed(st)
		}
	}
}

// next returns the time to the next round: maxRound, or a quarter of the shortest
// signature_refresh, or the next key timing event when it is sooner (at least a millisecond).
func (r *Resigner) next() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	d := maxRound
	for _, s := range r.signers {
		d = min(d, s.Options().Refresh/4)
		if e := s.Keys().NextEvent(now); !e.IsZero() {
			d = min(d, e.Sub(now))
		}
	}
	return max(d, time.Millisecond)
}
