// Package heartbeats shares health between sites through the operator's own DNS (see
// docs/heartbeats.md): every heartbeat interval, each site writes its heartbeat (its healthy
// addresses, dated) by RFC 2136 UPDATE signed with TSIG into the local zone, which the sites of
// its region read, and into the global zone, which every region reads; and it reads the other
// sites' there. A site whose heartbeat is older than the zone's healthy duration is stale: its
// backends leave the answers, unless a record would have none left. A site that finds its own
// heartbeat going stale while it is healthy (its writes refused, dropped or throttled) dates
// the next ones up to self_heal_interval ahead, so that throttling alone does not fail it over.
// With a delegation, the sites also keep the parent zone's NS records and glue in step.
//
// A Keeper is, like the sites' Fleet, a source of backend sets (its Source notes which
// backends are other sites') and of health verdicts on them, which it reports to the health
// manager.
package heartbeats

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/exchange"
	"github.com/meridian-gslb/meridian/internal/periodic"
	"github.com/meridian-gslb/meridian/internal/published"
	"github.com/meridian-gslb/meridian/internal/source"
)

// The zones a site writes its heartbeat to.
const (
	local  = "local"
	global = "global"
)

// Keeper writes this site's heartbeats and reads the other sites'. It lives as long as the
// block's health manager, across Corefile reloads.
type Keeper struct {
	site     string
	reporter source.Reporter

	mu      sync.Mutex
	opts    config.HeartbeatOptions // with defaults
	log     source.Logger
	summary func() ([]netip.Addr, int)
	plan    *plan
	sites   map[string]*siteState
	writers map[string]*writer // by zone kind
	// origins are the block's zones, whose delegation the keeper keeps; ds gives the DS set
	// the parent should hold for one that Meridian signs (nil, or false: it keeps no DS).
	origins []string
	ds      func(origin string) ([]*dns.DS, bool)
	// delegationErr is the last error of a delegation update logged, so that one cause is
	// logged once.
	delegationErr string
	rounds        periodic.Loop
}

// siteState is what this site knows of another from its heartbeats.
type siteState struct {
	// rec is the newest heartbeat read; kind the zone it was read in, whose healthy duration
	// applies; ok whether one was ever read.
	rec  Record
	kind string
	ok   bool
}

// NewKeeper returns the keeper of site, reporting its verdicts to reporter. It writes and
// reads nothing until Start.
func NewKeeper(site string, opts config.HeartbeatOptions, reporter source.Reporter, log source.Logger) *Keeper {
	k := &Keeper{site: site, reporter: reporter, sites: map[string]*siteState{}, writers: map[string]*writer{}, plan: &plan{}}
	k.Configure(opts, nil, nil, log)
	return k
}

// Configure makes opts the keeper's options from the next round on, summary the source of
// this site's healthy addresses (the current snapshot's), and origins the block's zones.
func (k *Keeper) Configure(opts config.HeartbeatOptions, origins []string, summary func() ([]netip.Addr, int), log source.Logger) {
	opts = opts.WithDefaults()
	k.mu.Lock()
	defer k.mu.Unlock()
	k.opts, k.log, k.summary, k.origins = opts, log, summary, origins
	for kind, z := range map[string]*config.HeartbeatZone{local: opts.Local, global: opts.Global} {
		switch {
		case z == nil:
			delete(k.writers, kind)
		case k.writers[kind] == nil || k.writers[kind].zone.Zone != z.Zone:
			k.writers[kind] = &writer{kind: kind, zone: *z}
		default:
			k.writers[kind].zone = *z
		}
	}
}

// KeepDS makes ds the source of the DS set the parent should hold for each of the block's
// zones that Meridian signs (false for the others, whose DS the keeper leaves alone), from
// the next round on.
func (k *Keeper) KeepDS(ds func(origin string) ([]*dns.DS, bool)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ds = ds
}

// healthyFor returns how old a heartbeat read in the zone of kind may be.
func (k *Keeper) healthyFor(kind string) time.Duration {
	if kind == local {
		return k.opts.LocalHealthy
	}
	return k.opts.GlobalHealthy
}

// timeout bounds one exchange: half an interval, at most two seconds.
func (k *Keeper) timeout() time.Duration { return min(2*time.Second, k.opts.Interval/2) }

// Name names the keeper as a publisher (of this site's heartbeat and the delegation).
func (k *Keeper) Name() string { return "heartbeats" }

// Start starts the rounds, the first at once. It may be called more than once.
func (k *Keeper) Start() {
	k.rounds.Start(k.round, func() time.Duration {
		k.mu.Lock()
		defer k.mu.Unlock()
		return k.opts.Interval
	})
}

// Stop ends the rounds and waits for the one in progress.
func (k *Keeper) Stop() { k.rounds.Stop() }

// round writes this site's heartbeats, reads the others', and reports the verdicts.
func (k *Keeper) round(ctx context.Context) {
	k.mu.Lock()
	opts, p, summary := k.opts, k.plan, k.summary
	writers := make([]*writer, 0, len(k.writers))
	for _, w := range k.writers {
		writers = append(writers, w)
	}
	k.mu.Unlock()
	if summary == nil {
		return // no snapshot yet
	}
	up, total := summary()
	reader := &exchange.Client{Timeout: k.timeout()}
	defer reader.Close()
	u := updater{key: opts.TSIG, timeout: k.timeout()}
	var wg sync.WaitGroup
	for _, w := range writers {
		wg.Go(func() { k.write(ctx, w, reader, u, up, total) })
	}
	reads := k.read(ctx, reader, p)
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	k.mu.Lock()
	now := time.Now()
	for name, r := range reads {
		s := k.sites[name]
		if s == nil {
			s = &siteState{}
			k.sites[name] = s
		}
		s.rec, s.kind, s.ok = r.rec, r.kind, true
	}
	verdicts := k.judgeLocked(now)
	k.publishLocked(now, len(up) > 0)
	k.mu.Unlock()
	source.Report(k.reporter, verdicts)
	if opts.Delegation != nil {
		k.keepDelegation(ctx, u, len(up) > 0)
	}
}

// reading is one heartbeat read, and the zone it was read in.
type reading struct {
	rec  Record
	kind string
}

// read reads the heartbeat of every site the plan names: in the local zone (where the sites
// of this region write), else in the global zone. Sites not found keep what was read before.
func (k *Keeper) read(ctx context.Context, c *exchange.Client, p *plan) map[string]reading {
	k.mu.Lock()
	zones := map[string]*config.HeartbeatZone{local: k.opts.Local, global: k.opts.Global}
	k.mu.Unlock()
	names := p.sites()
	found := make([]*reading, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			for _, kind := range []string{local, global} {
				if z := zones[kind]; z != nil {
					if rec, ok := readRecord(ctx, c, *z, name); ok {
						found[i] = &reading{rec: rec, kind: kind}
						return
					}
				}
			}
		})
	}
	wg.Wait()
	out := map[string]reading{}
	for i, r := range found {
		if r != nil {
			out[names[i]] = *r
		}
	}
	return out
}

// readRecord reads site's heartbeat in z from the first of its servers that answers.
func readRecord(ctx context.Context, c *exchange.Client, z config.HeartbeatZone, site string) (Record, bool) {
	name := Name(site, z.Zone)
	for _, server := range z.Servers {
		m, err := c.Exchange(ctx, server, name, dns.TypeTXT)
		if err != nil {
			continue
		}
		for _, rr := range m.Answer {
			if txt, ok := rr.(*dns.TXT); ok {
				if rec, err := ParseRecord(txt.Txt); err == nil && rec.Site == site {
					return rec, true
				}
			}
		}
		return Record{}, false
	}
	return Record{}, false
}

// judgeLocked returns the verdict on every other site's backend of the plan whose site's
// heartbeat was read.
func (k *Keeper) judgeLocked(now time.Time) []source.Verdict {
	var out []source.Verdict
	for _, b := range k.plan.remote {
		s := k.sites[b.site]
		if s == nil || !s.ok {
			continue
		}
		listed := slices.Contains(s.rec.Up, b.ip)
		age := now.Sub(s.rec.Time)
		fresh := age <= k.healthyFor(s.kind)
		reason := "up in site " + b.site + "'s " + s.kind + " heartbeat"
		if !listed {
			reason = "not " + reason
		}
		if !fresh {
			reason += ", which is " + age.Round(time.Second).String() + " old, more than " + k.healthyFor(s.kind).String()
		}
		out = append(out, source.Verdict{Key: b.key, Status: published.Status(fresh, listed), Reason: reason})
	}
	return out
}

// ReportAll reports the current verdict on every other site's backend. The engine calls it
// after each snapshot's backends reached the health manager, whose new ones start unknown.
func (k *Keeper) ReportAll() {
	k.mu.Lock()
	verdicts := k.judgeLocked(time.Now())
	k.mu.Unlock()
	source.Report(k.reporter, verdicts)
}

// SiteViews returns the other sites as the admin API's sites view shows them: fresh, stale or
// unknown (never read) by their heartbeats; Peer is the zone a site's heartbeat was read in
// (local or global), and its one entry of Targets, "*", the addresses it lists as up.
func (k *Keeper) SiteViews() []published.SiteView {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := time.Now()
	var out []published.SiteView
	for _, name := range k.plan.sites() {
		v := published.SiteView{Name: name, State: "unknown", Targets: map[string][]string{}}
		if s := k.sites[name]; s != nil && s.ok {
			age := now.Sub(s.rec.Time)
			v.State = "fresh"
			if age > k.healthyFor(s.kind) {
				v.State = "stale"
			}
			v.Heartbeat = published.Heartbeat{Site: name, Time: s.rec.Time}
			v.HeartbeatAge, v.Peer = age.Seconds(), s.kind
			for _, a := range s.rec.Up {
				v.Targets["*"] = append(v.Targets["*"], a.String())
			}
		}
		out = append(out, v)
	}
	return out
}
