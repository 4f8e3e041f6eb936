package sites

import (
	"context"
	"errors"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/exchange"
	"github.com/meridian-gslb/meridian/internal/published"
)

// queriesPerPeer bounds the queries in flight to one peer: as many as the client keeps
// sockets for.
const queriesPerPeer = exchange.IdlePerServer

// readout is what one round read from one peer.
type readout struct {
	addr string
	// site is the peer's site, from its heartbeat ("" when none was read); heartbeat is it.
	site      string
	heartbeat *published.Heartbeat
	// at is when the heartbeat was read, or when reading it failed.
	at time.Time
	// targets are, by record, the addresses of the records read in full (A and AAAA).
	targets map[string][]netip.Addr
	// rtts are, by record, the RTTs read (measure_remote), by address.
	rtts map[string]map[netip.Addr]time.Duration
	errs []error
}

// round reads every peer once, concurrently, then applies what it read: the sites'
// freshness, their targets, the verdicts on their backends, and the placeholders' new
// targets (which rebuild the snapshot).
func (f *Fleet) round(ctx context.Context) {
	ctx, span := otel.Tracer("meridian/sites").Start(ctx, "sites peer round")
	defer span.End()
	f.mu.Lock()
	opts, client, p := f.opts, f.client, f.plan
	known := map[string]string{}
	for addr, pe := range f.peers {
		known[addr] = pe.site
	}
	f.mu.Unlock()
	if opts.PeersFromNS && len(p.zones) > 0 {
		f.discoverPeers(ctx, client, opts, p.zones)
	}
	f.mu.Lock()
	addrs := f.peerAddrsLocked()
	f.mu.Unlock()

	span.SetAttributes(attribute.Int("gslb.peers", len(addrs)))
	reads := make([]readout, len(addrs))
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Go(func() { reads[i] = readPeer(ctx, client, p, opts.Site, addr, known[addr]) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return // stopping: what was cut short says nothing about the peers
	}

	f.mu.Lock()
	now := time.Now()
	f.applyLocked(reads, addrs, now)
	verdicts, rtts := f.judgeLocked(now), f.rttsLocked(now)
	changed := f.placeholdersChangedLocked()
	f.publishMetricsLocked(now)
	f.mu.Unlock()
	f.report(verdicts, rtts)
	if changed {
		f.watchers.Call()
	}
}

// discoverPeers reads the peers from the NS sets of zones; on failure the last list stays.
func (f *Fleet) discoverPeers(ctx context.Context, client *exchange.Client, opts config.SitesOptions, zones []string) {
	var found []string
	var errs []error
	for _, z := range zones {
		aps, err := PeersFromNS(ctx, client, z, opts.NSServers, "", opts.PeerPort)
		if err != nil {
			errs = append(errs, err)
		}
		for _, ap := range aps {
			found = append(found, ap.String())
		}
	}
	slices.Sort(found)
	found = slices.Compact(found)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(errs) > 0 {
		f.log.Warningf("sites: peers from the NS sets: %v", errors.Join(errs...))
	}
	if len(found) > 0 {
		f.fromNS = found
	}
}

// peerAddrsLocked returns the addresses to read: the configured peers and those found from
// the NS sets, without repeats. It forgets the peers that are neither any more.
func (f *Fleet) peerAddrsLocked() []string {
	addrs := slices.Concat(f.opts.Peers, f.fromNS)
	slices.Sort(addrs)
	addrs = slices.Compact(addrs)
	for addr, pe := range f.peers {
		if !slices.Contains(addrs, addr) {
			forgetPeerMetrics(pe)
			delete(f.peers, addr)
		}
	}
	return addrs
}

// readPeer reads one peer: its heartbeat (finding its site first when site is ""), then the
// localtargets of every record the plan reads from that site, and the localrtt of every
// record whose RTTs it reads.
func readPeer(ctx context.Context, c *exchange.Client, p *plan, own, addr, site string) readout {
	r := readout{addr: addr}
	if len(p.zones) == 0 {
		return r
	}
	candidates := []string{site}
	if site == "" {
		candidates = append(p.sites(), own)
	}
	zone := p.zones[0]
	for _, s := range candidates {
		hb, err := readHeartbeat(ctx, c, addr, s, zone)
		r.at = time.Now()
		if err != nil {
			r.errs = append(r.errs, err)
			return r
		}
		if hb != nil {
			r.site, r.heartbeat = s, hb
			break
		}
	}
	if r.heartbeat == nil {
		if site != "" {
			return readPeer(ctx, c, p, own, addr, "") // it no longer serves its site's heartbeat
		}
		return r
	}
	if r.site == own {
		return r
	}
	r.targets, r.errs = readTargets(ctx, c, addr, p.reads[r.site])
	if len(p.rtts) > 0 {
		var errs []error
		r.rtts, errs = readRTTs(ctx, c, addr, p.rtts)
		r.errs = append(r.errs, errs...)
	}
	return r
}

// readHeartbeat asks addr for site's heartbeat in zone. It returns nil without error when the
// peer serves none of that site.
func readHeartbeat(ctx context.Context, c *exchange.Client, addr, site, zone string) (*published.Heartbeat, error) {
	name := published.HeartbeatPrefix + site + "." + zone
	m, err := c.Exchange(ctx, addr, name, dns.TypeTXT)
	if err != nil {
		return nil, err
	}
	for _, rr := range m.Answer {
		txt, ok := rr.(*dns.TXT)
		if !ok || !strings.EqualFold(txt.Hdr.Name, name) {
			continue
		}
		hb, err := published.ParseHeartbeat(txt.Txt)
		if err != nil {
			return nil, &exchange.Error{Kind: exchange.KindMalformed, Server: addr, Name: name, Qtype: dns.TypeTXT, Err: err}
		}
		if hb.Site != site {
			return nil, nil
		}
		return &hb, nil
	}
	return nil, nil
}

// readTargets reads the localtargets of records from addr, each with its query types,
// queriesPerPeer at a time. A record is in the result only when every type was read.
func readTargets(ctx context.Context, c *exchange.Client, addr string, records []read) (map[string][]netip.Addr, []error) {
	answers := queryAll(records, func(record string, qtype uint16) ([]netip.Addr, error) {
		return readAddrs(ctx, c, addr, published.LocalTargetsPrefix+record, qtype)
	})
	out := make(map[string][]netip.Addr, len(records))
	var errs []error
	for i, rd := range records {
		var addrs []netip.Addr
		var failed []error
		for _, a := range answers[i] {
			addrs = append(addrs, a.value...)
			if a.err != nil {
				failed = append(failed, a.err)
			}
		}
		if len(failed) > 0 {
			errs = append(errs, errors.Join(failed...))
			continue
		}
		out[rd.record] = sortedAddrs(addrs)
	}
	return out, errs
}

// readRTTs reads the localrtt of records from addr, queriesPerPeer at a time. A record is in
// the result when it was read (its good strings, when some were malformed); a peer that
// publishes none of it (NXDOMAIN) gives an empty set.
func readRTTs(ctx context.Context, c *exchange.Client, addr string, records []string) (map[string]map[netip.Addr]time.Duration, []error) {
	reads := make([]read, len(records))
	for i, rec := range records {
		reads[i] = read{record: rec, qtypes: []uint16{dns.TypeTXT}}
	}
	answers := queryAll(reads, func(record string, _ uint16) (map[netip.Addr]time.Duration, error) {
		return readRTT(ctx, c, addr, published.LocalRTTPrefix+record)
	})
	out := make(map[string]map[netip.Addr]time.Duration, len(records))
	var errs []error
	for i, rec := range records {
		a := answers[i][0]
		if a.err != nil {
			errs = append(errs, a.err)
		}
		if a.value != nil {
			out[rec] = a.value
		}
	}
	return out, errs
}

// result is the outcome of one query of queryAll.
type result[T any] struct {
	value T
	err   error
}

// queryAll runs ask once per record and query type of reads, queriesPerPeer at a time, and
// returns the results by record and type, in the order of reads and their types.
func queryAll[T any](reads []read, ask func(record string, qtype uint16) (T, error)) [][]result[T] {
	out := make([][]result[T], len(reads))
	sem := make(chan struct{}, queriesPerPeer)
	var wg sync.WaitGroup
	for i, rd := range reads {
		out[i] = make([]result[T], len(rd.qtypes))
		for j, qtype := range rd.qtypes {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				v, err := ask(rd.record, qtype)
				out[i][j] = result[T]{v, err}
			})
		}
	}
	wg.Wait()
	return out
}

// readRTT asks addr for the TXT records of name, a localrtt name, and parses them; NXDOMAIN is
// none. Strings that do not parse are a malformed answer, and the others count.
func readRTT(ctx context.Context, c *exchange.Client, addr, name string) (map[netip.Addr]time.Duration, error) {
	m, err := c.Exchange(ctx, addr, name, dns.TypeTXT)
	if err != nil {
		return nil, err
	}
	var strs []string
	for _, rr := range m.Answer {
		if txt, ok := rr.(*dns.TXT); ok && strings.EqualFold(txt.Hdr.Name, name) {
			strs = append(strs, txt.Txt...)
		}
	}
	rtts, err := published.ParseRTTs(strs)
	if err != nil {
		err = &exchange.Error{Kind: exchange.KindMalformed, Server: addr, Name: name, Qtype: dns.TypeTXT, Err: err}
	}
	return rtts, err
}

// readAddrs asks addr for the addresses of name; NXDOMAIN is none.
func readAddrs(ctx context.Context, c *exchange.Client, addr, name string, qtype uint16) ([]netip.Addr, error) {
	m, err := c.Exchange(ctx, addr, name, qtype)
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, rr := range m.Answer {
		if !strings.EqualFold(rr.Header().Name, name) {
			continue
		}
		var ip []byte
		switch x := rr.(type) {
		case *dns.A:
			ip = x.A
		case *dns.AAAA:
			ip = x.AAAA
		default:
			continue
		}
		if a, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, a.Unmap())
		}
	}
	return out, nil
}

// applyLocked records what a round read: each peer's answers and errors, each site's
// heartbeat and targets, and when the sites that did not confirm their heartbeat fell silent.
func (f *Fleet) applyLocked(reads []readout, addrs []string, now time.Time) {
	confirmed := map[string]bool{}
	failedAt := map[string]time.Time{}
	for _, r := range reads {
		pe := f.peers[r.addr]
		if pe == nil {
			pe = &peer{addr: r.addr, errors: map[exchange.ErrorKind]uint64{}}
			f.peers[r.addr] = pe
		}
		for _, err := range r.errs {
			kind := exchange.KindOf(err)
			pe.errors[kind]++
			pe.lastError = err.Error()
			countExchangeError(pe, kind)
		}
		if r.heartbeat == nil {
			if pe.site != "" && (failedAt[pe.site].IsZero() || r.at.Before(failedAt[pe.site])) {
				failedAt[pe.site] = r.at
			}
			continue
		}
		if pe.site != r.site {
			forgetPeerMetrics(pe)
		}
		pe.site, pe.self, pe.lastAnswer = r.site, r.site == f.opts.Site, r.at
		if pe.self {
			continue
		}
		s := f.siteLocked(r.site)
		s.peer = r.addr
		hb := *r.heartbeat
		f.checkSkewLocked(s, hb, r.at)
		switch {
		case !s.heard() || hb.Boot != s.last.Boot || hb.Seq != s.last.Seq:
			s.last, s.lastAdvance = hb, r.at
			confirmed[r.site] = true
		case r.at.Sub(s.lastAdvance) <= heartbeatGrace:
			confirmed[r.site] = true
		default:
			if failedAt[r.site].IsZero() || r.at.Before(failedAt[r.site]) {
				failedAt[r.site] = r.at // it answers, but its heartbeat stopped
			}
		}
		pe.learned = 0
		for rec, t := range r.targets {
			s.targets[rec] = t
			pe.learned += len(t)
		}
		maps.Copy(s.rtts, r.rtts)
	}
	for name, s := range f.sites {
		switch {
		case confirmed[name]:
			s.silentSince = time.Time{}
		case s.silentSince.IsZero() && s.heard():
			at := failedAt[name]
			if at.IsZero() {
				at = now // no peer of the site was read at all
			}
			s.silentSince = at
		}
	}
}

// checkSkewLocked warns, once until it is back within bounds, when site s's clock (its
// heartbeat's time, read at at) is off this one's by more than half the split-brain threshold.
// Freshness never depends on it; a skew that large usually means a clock is broken.
func (f *Fleet) checkSkewLocked(s *site, hb published.Heartbeat, at time.Time) {
	skew := at.Sub(hb.Time)
	off := skew > f.opts.SplitBrainThreshold/2 || -skew > f.opts.SplitBrainThreshold/2
	if off && !s.skewed {
		f.log.Warningf("sites: site %s's clock is %s off this one's (freshness does not depend on it)", s.name, skew.Round(time.Second))
	}
	s.skewed = off
}

// siteLocked returns the state of site, creating it on first use.
func (f *Fleet) siteLocked(name string) *site {
	s := f.sites[name]
	if s == nil {
		s = &site{name: name, targets: map[string][]netip.Addr{}, rtts: map[string]map[netip.Addr]time.Duration{}}
		f.sites[name] = s
	}
	return s
}

// staleLocked reports whether s has been silent for the block's split-brain threshold.
func (f *Fleet) staleLocked(s *site, now time.Time) bool {
	return s.silentFor(now, f.opts.SplitBrainThreshold)
}

// silentFor reports whether s has been silent for threshold at now.
func (s *site) silentFor(now time.Time, threshold time.Duration) bool {
	return !s.silentSince.IsZero() && now.Sub(s.silentSince) >= threshold
}

// placeholdersChangedLocked reports whether a placeholder's site published other targets than
// the last merge expanded it to.
func (f *Fleet) placeholdersChangedLocked() bool {
	for rec, sites := range f.plan.placeholders {
		for _, s := range sites {
			if f.merged[s+"|"+rec] != fmtAddrs(f.learnedLocked(s, rec)) {
				return true
			}
		}
	}
	return false
}
