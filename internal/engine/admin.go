package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/answer"
	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/published"
	"github.com/meridian-gslb/meridian/internal/shares"
	"github.com/meridian-gslb/meridian/internal/source/discovery"
	"github.com/meridian-gslb/meridian/internal/source/heartbeats"
	"github.com/meridian-gslb/meridian/internal/source/sites"
	"github.com/meridian-gslb/meridian/internal/timeline"
)

// Status implements admin.Provider: every zone, record and backend of the current snapshot
// with its health details, and in cluster quorum mode the votes behind its state.
func (e *Engine) Status() []admin.Zone {
	snap := e.Snapshot()
	details := e.health.Details()
	votes := e.health.Votes()
	held := e.Held()
	var discovered map[string]discovery.Status
	if d, ok := viewOf[*discovery.Source](e); ok {
		discovered = d.Statuses()
	}
	var zones []admin.Zone
	index := make(map[string]int)
	for _, r := range snap.Records() {
		i, ok := index[r.Zone.Origin]
		if !ok {
			i = len(zones)
			index[r.Zone.Origin] = i
			zones = append(zones, admin.Zone{Name: r.Zone.Origin})
		}
		v := r.View()
		rec := admin.Record{Name: r.Name(), Mode: string(r.Config.Mode), Fallback: string(r.Config.Settings().Fallback.Mode),
			Degraded: v.Degraded[catalog.IPv4] || v.Degraded[catalog.IPv6], Failover: v.Failover[catalog.IPv4] || v.Failover[catalog.IPv6]}
		if st, ok := discovered[r.Name()]; ok {
			rec.Discovery = adminDiscovery(st)
		}
		rec.TTL, rec.TTLReason = recordTTL(v)
		rec.FailoverBudget = adminBudget(r.Config.FailoverBudget(e.opts))
		rec.Guard = admin.NewDrainGuard(r.Config.Settings().Guard)
		for _, b := range r.Backends {
			ab := adminBackend(b, details, votes[b.Key()])
			ab.Held = held[ab.Key]
			if ab.Healthy {
				rec.Healthy++
			}
			rec.Backends = append(rec.Backends, ab)
		}
		zones[i].Records = append(zones[i].Records, rec)
	}
	return zones
}

// recordTTL returns the lowest TTL of the families v serves, and why.
func recordTTL(v *catalog.View) (uint32, string) {
	ttl, why, found := uint32(0), "", false
	for f := catalog.IPv4; f <= catalog.IPv6; f++ {
		if v.Configured[f] && (!found || v.TTL[f] < ttl) {
			ttl, why, found = v.TTL[f], v.TTLReason[f].String(), true
		}
	}
	return ttl, why
}

// adminBudget returns a failover budget as the admin API shows it.
func adminBudget(b config.FailoverBudget) admin.FailoverBudget {
	return admin.FailoverBudget{Target: admin.Millis(b.Target), Worst: admin.Millis(b.Worst), Unbounded: b.Never != "",
		Holds: b.Holds(), Dominant: b.Dominant().Name, Text: b.String()}
}

func adminBackend(b *catalog.Backend, details map[string]health.Details, votes []health.Vote) admin.Backend {
	c, l := b.Config, b.Config.Labels()
	ab := admin.Backend{
		Key: b.Key(), Address: c.Address, Port: int(c.Port), Priority: int(c.Priority), Weight: int(c.Weight),
		Description: l.Description, Location: l.Location, Country: l.Country, City: l.City,
		Continent: l.Continent, Tags: l.Tags, Site: c.Site(), Remote: c.Remote,
		Enabled: c.Enable, Healthy: b.Healthy(), State: admin.State(b.Status().String()),
		RTT: admin.Millis(b.State.RTT()),
	}
	if load := b.RelativeLoad(); load >= 0 {
		ab.Load = &load
	}
	if d, ok := details[ab.Key]; ok {
		ab.LastCheck, ab.LastOK, ab.Reason = d.LastCheck, d.LastOK, d.Reason
		ab.Latency, ab.LastChange = admin.Millis(d.Latency), d.LastChange
	}
	for _, v := range votes {
		ab.Votes = append(ab.Votes, adminVote(v))
	}
	return ab
}

// adminDiscovery returns the state of a discovery block as the admin API shows it.
func adminDiscovery(st discovery.Status) *admin.Discovery {
	d := &admin.Discovery{Type: string(st.Type), Endpoint: st.Endpoint, Service: st.Service,
		LastError: st.LastError, Failing: st.Failing, Backends: st.Backends}
	if !st.LastSuccess.IsZero() {
		d.LastSuccess = &st.LastSuccess
	}
	if !st.LastErrorTime.IsZero() {
		d.LastErrorTime = &st.LastErrorTime
	}
	return d
}

// adminVote returns a quorum vote as the admin API shows it.
func adminVote(v health.Vote) admin.Vote {
	return admin.Vote{Instance: v.Instance, Site: v.Site, OK: v.OK, Reason: v.Reason, At: v.At, Isolated: v.Isolated, RTT: admin.Millis(v.Latency)}
}

// Sites implements admin.SitesProvider: what the block knows of the other sites (from its
// peers, or from their heartbeats); the zero view when it names no site of its own.
func (e *Engine) Sites() published.View {
	fleet, ok := instanceOf[*sites.Fleet](e)
	if !ok {
		return published.View{}
	}
	v := fleet.View()
	if keeper, ok := instanceOf[*heartbeats.Keeper](e); ok { // the other sites are read from their heartbeats, not from peers
		v.Sites = keeper.SiteViews()
	}
	return v
}

// Transitions implements admin.Provider: the latest status changes of the block's backends.
func (e *Engine) Transitions(limit int) []admin.Transition {
	trs := e.health.Transitions(limit)
	out := make([]admin.Transition, len(trs))
	for i, t := range trs {
		out[i] = admin.Transition{Time: t.Time, Record: t.Record, Backend: t.Key,
			From: admin.State(t.From.String()), To: admin.State(t.To.String()), Reason: t.Reason}
	}
	return out
}

var _ admin.HistoryProvider = (*Engine)(nil)

// History implements admin.HistoryProvider: the last hour of the block's probed backends, ending
// at now.
func (e *Engine) History(now time.Time) admin.History {
	hs := e.health.History(now)
	out := admin.History{BucketSeconds: int(health.HistoryBucket / time.Second), Start: health.HistoryStart(now), Now: now,
		Backends: make([]admin.BackendHistory, 0, len(hs))}
	for key, h := range hs {
		out.Backends = append(out.Backends, adminHistory(key, h))
	}
	return out
}

// adminHistory returns the history of the backend with key as the admin API shows it.
func adminHistory(key string, h health.History) admin.BackendHistory {
	bh := admin.BackendHistory{Key: key, Record: h.Record, LatencyUS: make(admin.Series, len(h.Samples)),
		Failures: make(admin.Series, len(h.Samples)), From: h.From, State: admin.State(h.Status.String()),
		Changes: make([]admin.Change, len(h.Changes))}
	for i, s := range h.Samples {
		bh.LatencyUS[i], bh.Failures[i] = -1, -1
		if s.Latency > 0 {
			bh.LatencyUS[i] = s.Latency.Microseconds()
		}
		if s.Results > 0 {
			bh.Failures[i] = int64(s.Failures)
		}
	}
	for i, c := range h.Changes {
		bh.Changes[i] = admin.Change{Time: c.Time, To: admin.State(c.To.String()), Reason: c.Reason}
	}
	return bh
}

// Explain implements admin.Provider: it answers the query as a client at q.Client (or behind
// q.ECS) would be answered, and says why.
func (e *Engine) Explain(_ context.Context, q admin.Query) (admin.Explanation, error) {
	qtype, ok := dns.StringToType[q.Type]
	if !ok {
		return admin.Explanation{}, fmt.Errorf("unknown query type %q", q.Type)
	}
	snap := e.Snapshot()
	var whatIf *admin.Step
	if h := (catalog.Hypothesis{Down: q.Down, Drained: q.Drained}); !h.Empty() {
		var matched []string
		snap, matched = snap.WhatIf(h)
		whatIf = admin.WhatIfStep(q, matched)
	}
	m := answer.ExplainQuery(q.Name, qtype, q.ECS)
	ex := answer.Explain(snap, e.AnswerOptions(), answer.Query{Msg: m, Source: q.Client, Geo: e.Geo()})
	details := e.health.Details()
	checks := make(map[string]admin.LastCheck, len(ex.Backends))
	for _, n := range ex.Backends {
		if d, ok := details[n.Key]; ok {
			checks[n.Key] = admin.LastCheck{At: d.LastCheck, Reason: d.Reason}
		}
	}
	return admin.NewExplanation(q, whatIf, ex, checks), nil
}

// Ready implements admin.Provider: the engine serves once its first snapshot is loaded.
func (e *Engine) Ready() bool { return e.Snapshot() != nil }

// AnswerOptions returns the answer switches of the block.
func (e *Engine) AnswerOptions() answer.Options {
	return answer.Options{UseECS: e.opts.UseEDNSClientSubnet, EnableTXT: e.opts.EnableTXT, Count: e.opts.CoreDNSGSLBMetrics || e.opts.TrafficShares, Traffic: e.opts.TrafficShares,
		PeerKey: e.opts.Sites.TSIG != nil, Limit: e.sec.limiter, Cookies: e.sec.cookies, RequireCookie: e.opts.Cookies.Require}
}

// CatalogOverrides turns the override store's list into the engine's overrides at now:
// disable and drain take a backend out, enable puts it in, force-up serves it as healthy. A
// drain that has not started is left out (see DrainStarts), and so are the shifts (shift.Weights).
func CatalogOverrides(list []overlay.Override, now time.Time) map[string]catalog.Override {
	m := make(map[string]catalog.Override, len(list))
	for _, o := range list {
		switch {
		case o.Pending(now), o.IsShift():
		case o.Action.Disables():
			m[o.Key] = catalog.ForceDisable
		case o.Action == overlay.ForceUp:
			m[o.Key] = catalog.ForceUp
		default:
			m[o.Key] = catalog.ForceEnable
		}
	}
	return m
}

var _ admin.TimelineProvider = (*Engine)(nil)

// Timelines implements admin.TimelineProvider: the block's failover timelines of record (every
// record's when empty), the newest first, at most limit.
func (e *Engine) Timelines(record string, limit int) []admin.Timeline {
	k, ok := instanceOf[*timeline.Keeper](e)
	if !ok {
		return nil
	}
	ts := k.Timelines(record, limit)
	out := make([]admin.Timeline, len(ts))
	for i := range ts {
		out[i] = adminTimeline(&ts[i])
	}
	return out
}

// adminTimeline returns t as the admin API shows it.
func adminTimeline(t *timeline.Timeline) admin.Timeline {
	at := func(x time.Time) *time.Time {
		if x.IsZero() {
			return nil
		}
		return &x
	}
	out := admin.Timeline{Record: t.Record, Backend: t.Backend, Key: t.Key, From: admin.State(t.From.String()),
		To: admin.State(t.To.String()), Reason: t.Reason, Detected: t.Detected, Changed: t.Changed,
		Swapped: at(t.Swapped), Answered: at(t.Answered), Target: admin.Millis(t.Target), Superseded: t.Superseded}
	if m := t.Measured(); m > 0 {
		out.Measured = admin.Millis(m)
	}
	for _, l := range t.Learned {
		out.Learned = append(out.Learned, admin.Learned{By: l.By, At: l.At})
	}
	return out
}

var _ admin.SharesProvider = (*Engine)(nil)

// Shares implements admin.SharesProvider: where the traffic of the block's records went, with
// traffic_shares; nil without.
func (e *Engine) Shares(now time.Time) []admin.RecordShares {
	k, ok := instanceOf[*shares.Keeper](e)
	if !ok {
		return nil
	}
	var out []admin.RecordShares
	for _, r := range k.Shares(now) {
		rs := admin.RecordShares{Record: r.Name, Mode: r.Mode, Start: r.Start, BucketSeconds: int(shares.Bucket / time.Second)}
		for _, s := range r.Backends {
			bs := admin.BackendShare{Key: s.Key, Backend: s.Backend, Family: s.Family, Configured: s.Configured,
				Series: admin.Shares(s.Series), TTLSeconds: s.Seconds}
			if s.Actual >= 0 {
				actual := s.Actual
				bs.Actual = &actual
			}
			rs.Backends = append(rs.Backends, bs)
		}
		for _, c := range r.Countries {
			cs := admin.CountryShares{Country: c.Country, TTLSeconds: c.Seconds, Shares: map[string]float64{}}
			for key, n := range c.Backends {
				cs.Shares[key] = float64(n) / float64(c.Seconds)
			}
			rs.Countries = append(rs.Countries, cs)
		}
		out = append(out, rs)
	}
	return out
}
