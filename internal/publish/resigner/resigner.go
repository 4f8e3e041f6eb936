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

// Logger is where the resigner reports the keys' changes of state and the moments without a
// key to sign. CoreDNS's plugin logger is one.
type Logger interface {
	Infof(format string, args ...any)
	Errorf(format string, args ...any)
}

// Resigner is the publisher of a signed block.
type Resigner struct {
	loop periodic.Loop
	log  Logger

	mu      sync.Mutex
	served  publish.Served
	signers []*dnssec.Signer
	// states are the keys' states last logged, by signer and key; keyless the signers that
	// had a moment without an active key at the last round.
	states  map[*dnssec.Signer]map[*dnssec.Key]dnssec.State
	keyless map[*dnssec.Signer]bool
}

// New returns a resigner that logs to log and does nothing until configured.
func New(log Logger) *Resigner {
	return &Resigner{log: log, states: map[*dnssec.Signer]map[*dnssec.Key]dnssec.State{}, keyless: map[*dnssec.Signer]bool{}}
}

// Name implements publish.Publisher.
func (r *Resigner) Name() string { return "dnssec" }

// Configure sets the snapshot the block serves and the signers of its zones.
func (r *Resigner) Configure(served publish.Served, signers []*dnssec.Signer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.served, r.signers = served, signers
}

// Start implements publish.Publisher: the rounds start, and the zones' metrics with them.
func (r *Resigner) Start() {
	r.mu.Lock()
	for _, s := range r.signers {
		s.Track()
	}
	r.mu.Unlock()
	r.loop.Start(func(context.Context) { r.Round(time.Now()) }, r.next)
}

// Stop implements publish.Publisher: the rounds end, and the zones' metrics with them.
func (r *Resigner) Stop() {
	r.loop.Stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.signers {
		s.Untrack()
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
	for _, s := range signers {
		r.logKeys(s, now)
	}
	stats := snap.Resign(now)
	for _, s := range signers {
		if st, ok := stats[s.Zone()]; ok {
			s.ReportServed(st)
		}
	}
}

// logKeys logs each change of state of s's keys since the last round, and an error while some
// RRsets have no active key to sign them (they are answered SERVFAIL to DO queries).
func (r *Resigner) logKeys(s *dnssec.Signer, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	states := r.states[s]
	if states == nil {
		states = map[*dnssec.Key]dnssec.State{}
		r.states[s] = states
	}
	for _, k := range s.Keys().Keys() {
		st := k.StateAt(now)
		if old, seen := states[k]; seen && old != st {
			r.log.Infof("dnssec: zone %s: key %d (%s %s) is now %s", s.Zone(), k.Tag, s.Keys().Role(k), k.Algorithm(), st)
		}
		states[k] = st
	}
	err := s.Keys().Check(now)
	if err != nil && !r.keyless[s] {
		r.log.Errorf("dnssec: zone %s: %v: its answers to DO queries are SERVFAIL until a key is active", s.Zone(), err)
	}
	r.keyless[s] = err != nil
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
