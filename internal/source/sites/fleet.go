// Package sites shares health between sites over DNS alone (see docs/sites.md). Every site's
// Meridian is authoritative for the same zones; each publishes, served by itself, the healthy
// backends of its own site of every record (localtargets-<record>) and a heartbeat
// (heartbeat-<site>.<zone>), and reads its peers' the same way every peer interval, off the
// query path. A Fleet is one site's view of the others: it is a source of backend sets (its
// Source merges other sites' placeholders with the targets they publish and marks other sites'
// backends remote) and of health verdicts (it reports, through a Reporter, what the other
// sites publish about their backends). A site whose heartbeat has not changed, on this site's
// own clock, for the split-brain threshold is stale: its targets leave the answers, unless a
// record would have none left (catalog.View.Degraded).
package sites

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/exchange"
	"github.com/meridian-gslb/meridian/internal/periodic"
	"github.com/meridian-gslb/meridian/internal/published"
	"github.com/meridian-gslb/meridian/internal/source"
)

// Fleet is this site's view of the other sites: it publishes this site's heartbeat, reads the
// peers every peer interval, keeps what each site published last, and judges the other sites'
// backends from it. It lives as long as the block's health manager, across Corefile reloads.
type Fleet struct {
	heartbeat *published.Served
	boot      string
	reporter  source.MeasureReporter

	mu     sync.Mutex
	opts   config.SitesOptions // with defaults
	client *exchange.Client
	log    source.Logger
	plan   *plan
	fromNS []string          // the peers last found from the NS sets
	peers  map[string]*peer  // by address
	sites  map[string]*site  // by name
	merged map[string]string // what the last merge expanded each placeholder to, by site|record
	// rttsReported are the keys of the backends whose RTTs by site were last reported.
	rttsReported map[string]bool
	watchers     source.Watchers
	seq          uint64

	// ticks advance the heartbeat; rounds read the peers.
	ticks, rounds periodic.Loop
}

// peer is one address that a site's Meridian answers at.
type peer struct {
	addr string
	// site is what its heartbeat says, "" until read; self is set when that is this site.
	site string
	self bool
	// lastAnswer is when an exchange with it last succeeded; lastError what the last one
	// that failed said.
	lastAnswer time.Time
	lastError  string
	errors     map[exchange.ErrorKind]uint64
	// learned counts the targets read from it in the last round.
	learned int
}

// site is what this site knows of another.
type site struct {
	name string
	// last is the newest heartbeat read, first read at lastAdvance (this site's clock).
	last        published.Heartbeat
	lastAdvance time.Time
	// silentSince is when the site first failed to confirm its heartbeat after the last time
	// it did; zero while it does.
	silentSince time.Time
	peer        string
	// targets are, by record, the addresses it published when last read.
	targets map[string][]netip.Addr
	// rtts are, by record, its RTTs to the record's backends, by address, when last read
	// (measure_remote).
	rtts map[string]map[netip.Addr]time.Duration
	// skewed is set while its clock is far off this one's (it was logged).
	skewed bool
}

// heard reports whether any heartbeat of the site was read.
func (s *site) heard() bool { return !s.lastAdvance.IsZero() }

// NewFleet returns the fleet of site opts.Site, reporting its verdicts (and, with
// measure_remote, the other sites' RTTs) to reporter. Its
// heartbeat serves at once; it reads no peer until Start.
func NewFleet(opts config.SitesOptions, reporter source.MeasureReporter, log source.Logger) *Fleet {
	f := &Fleet{
		heartbeat: published.NewServed(opts.Site),
		boot:      newBoot(),
		reporter:  reporter,
		peers:     map[string]*peer{},
		sites:     map[string]*site{},
		merged:    map[string]string{},
		plan:      &plan{},
	}
	f.Configure(opts, log)
	f.beat()
	return f
}

// Configure makes opts (whose site must stay the same) the fleet's options from the next
// round on: a Corefile reload may change the peers, the intervals and the key.
func (f *Fleet) Configure(opts config.SitesOptions, log source.Logger) {
	opts = opts.WithDefaults()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opts, f.log = opts, log
	if f.client != nil {
		f.client.Close() // a round still using it closes its sockets as it ends
	}
	f.client = &exchange.Client{Timeout: opts.PeerTimeout, Key: opts.TSIG}
}

// Heartbeat returns the heartbeat the snapshots serve.
func (f *Fleet) Heartbeat() *published.Served { return f.heartbeat }

// beat advances the heartbeat by one tick.
func (f *Fleet) beat() {
	f.mu.Lock()
	f.seq++
	h := published.Heartbeat{Site: f.opts.Site, Time: time.Now(), Seq: f.seq, Boot: f.boot}
	f.mu.Unlock()
	f.heartbeat.Set(h.TXT())
}

// Start starts the heartbeat's ticks and the peer rounds, the first at once. It may be called
// more than once.
func (f *Fleet) Start() {
	f.ticks.Start(func(context.Context) { f.beat() }, func() time.Duration { return heartbeatTick })
	f.rounds.Start(f.round, func() time.Duration {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.opts.PeerInterval
	})
}

// Stop ends what Start started and waits for it.
func (f *Fleet) Stop() {
	f.rounds.Stop()
	f.ticks.Stop()
	f.mu.Lock()
	f.client.Close() // its kept sockets; a closed client still works, keeping none
	f.mu.Unlock()
}

// Source returns the fleet as a source of backend sets for one engine.
func (f *Fleet) Source() source.BackendSets { return &Source{f: f} }

// Source is a Fleet as a source of backend sets (source.BackendSets).
type Source struct{ f *Fleet }

// Name implements source.BackendSets.
func (s *Source) Name() string { return "sites" }

// Merge implements source.BackendSets: other sites' backends are marked remote, each placeholder
// becomes the targets its site last published, and the records with backends of this site
// publish them. It remembers what the zones ask of the other sites for the next round.
func (s *Source) Merge(zones []*config.Zone) ([]*config.Zone, error) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	merged := map[string]string{}
	out, p := merge(zones, f.opts.Site, f.opts.MeasureRemote, func(site, record string) []netip.Addr {
		addrs := f.learnedLocked(site, record)
		merged[site+"|"+record] = fmtAddrs(addrs)
		return addrs
	})
	f.plan, f.merged = p, merged
	return out, nil
}

// Watch implements source.BackendSets: changed is called when a placeholder's site published
// other targets, until stop.
func (s *Source) Watch(changed func(), _ source.Logger) (func(), error) {
	return s.f.watchers.Add(changed), nil
}

// learnedLocked returns what site last published for record, sorted; nil when nothing.
func (f *Fleet) learnedLocked(site, record string) []netip.Addr {
	if s := f.sites[site]; s != nil {
		return s.targets[record]
	}
	return nil
}

// ReportAll reports the current verdict on every other site's backend, and the other sites'
// RTTs. The engine calls it after each snapshot's backends reached the health manager, whose
// new ones start unknown.
func (f *Fleet) ReportAll() {
	f.mu.Lock()
	now := time.Now()
	verdicts, rtts := f.judgeLocked(now), f.rttsLocked(now)
	f.mu.Unlock()
	f.report(verdicts, rtts)
}

// report hands verdicts and RTTs by site to the reporter.
func (f *Fleet) report(verdicts []source.Verdict, rtts []rttReport) {
	source.Report(f.reporter, verdicts)
	for _, r := range rtts {
		f.reporter.ReportRTTs(r.key, r.rtts)
	}
}

// sortedAddrs returns addrs sorted and without repeats.
func sortedAddrs(addrs []netip.Addr) []netip.Addr {
	slices.SortFunc(addrs, netip.Addr.Compare)
	return slices.Compact(addrs)
}
