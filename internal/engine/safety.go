package engine

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/answer"
	"github.com/meridian-gslb/meridian/internal/canary"
	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/drill"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/notify"
	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/shift"
)

// The tools of safe changes in the engine: the components that change the overrides do it
// through the admin API's one place (admin.Server.Apply: the drain guard, and later the audit
// log), and the admin API's view of the drills.

// changer returns how the block's components change the overrides: as the admin API does, by
// a user of their own; nil when the block has no admin API.
func (e *Engine) changer() drill.Apply {
	if e.api == nil {
		return nil
	}
	return e.api.server.Apply
}

// reportDrill sends a failed drill's report to the block's webhooks.
func (e *Engine) reportDrill(rep drill.Report) {
	hooks, ok := instanceOf[*notify.Webhooks](e)
	if !ok {
		return
	}
	var findings []string
	for _, r := range rep.Records {
		for _, f := range r.Failures {
			findings = append(findings, r.Record+": "+f)
		}
	}
	if rep.Live != nil && rep.Live.Error != "" {
		findings = append(findings, "live drain: "+rep.Live.Error)
	}
	hooks.Drill(notify.Event{Time: rep.Time, Drill: rep.Drill, Reason: rep.Summary, Findings: findings})
}

var _ admin.DrillProvider = (*Engine)(nil)

// Drills implements admin.DrillProvider: the block's drills, their next runs and last reports.
func (e *Engine) Drills(now time.Time) []drill.Status {
	if r, ok := instanceOf[*drill.Runner](e); ok {
		return r.Statuses(now)
	}
	return nil
}

// RunDrill implements admin.DrillProvider: it runs the block's drill called name, or with no
// name the hypothesis h, now.
func (e *Engine) RunDrill(ctx context.Context, name string, h drill.Hypothesis) (drill.Report, error) {
	r, ok := instanceOf[*drill.Runner](e)
	if !ok { // a block without drills runs a hypothesis on demand all the same
		r = drill.NewRunner()
		r.Configure(e.opts, e.Snapshot, nil, nil, nil)
	}
	return r.Run(ctx, name, h)
}

// shiftSetup returns what the block's shift controller works with.
func (e *Engine) shiftSetup() shift.Setup {
	s := shift.Setup{Served: e.Snapshot, Apply: shift.Apply(e.changer()), Results: e.checkResults,
		Prometheus: e.opts.Safety.Prometheus, Report: e.reportShift, Log: e.log}
	if e.api != nil {
		s.List = e.api.store.List
	}
	return s
}

// checkResults counts the health-check results of the backends keys names since a time, and
// how many failed, from the block's health history (30-second buckets: the one that holds
// since counts whole).
func (e *Engine) checkResults(keys []string, since time.Time) (results, failures int) {
	now := time.Now()
	hs := e.health.History(now)
	for _, k := range keys {
		h, ok := hs[k]
		if !ok {
			continue
		}
		for i, s := range h.Samples {
			if end := h.Start.Add(time.Duration(i+1) * health.HistoryBucket); end.After(since) {
				results, failures = results+s.Results, failures+s.Failures
			}
		}
	}
	return results, failures
}

// reportShift sends a shift's change to the block's webhooks.
func (e *Engine) reportShift(s *shift.Shift, change string) {
	if hooks, ok := instanceOf[*notify.Webhooks](e); ok {
		share := s.Share()
		hooks.Shift(notify.Event{Time: time.Now(), Shift: s.ID, Record: s.Record, Change: change, Share: &share, Reason: s.Why, By: s.By})
	}
}

// shiftWeights returns the weights the shifts of list give the backends of snap, by key.
func shiftWeights(snap *catalog.Snapshot, list []overlay.Override) map[string]int {
	out := map[string]int{}
	for _, s := range shift.FromOverrides(list) {
		if r := shift.Record(snap, s.Record); r != nil {
			for b, w := range s.Weights(r) {
				out[b.Key()] = w
			}
		}
	}
	return out
}

var _ admin.ShiftProvider = (*Engine)(nil)

// CheckShift implements admin.ShiftProvider: whether the block serves the shift's record, and
// what is wrong with the shift for it.
func (e *Engine) CheckShift(s *shift.Shift) (bool, error) {
	r := shift.Record(e.Snapshot(), s.Record)
	if r == nil {
		return false, nil
	}
	return true, s.Check(r, e.opts.Safety.Prometheus != "")
}

// ShiftNotes implements admin.ShiftProvider.
func (e *Engine) ShiftNotes() map[string]string {
	if c, ok := instanceOf[*shift.Controller](e); ok {
		return c.Notes()
	}
	return nil
}

// canarySetup returns what the block's canaries work with.
func (e *Engine) canarySetup() canary.Setup {
	return canary.Setup{Options: e.opts.Safety.Canary, NS: e.zoneNS, Expect: e.expect, Report: e.reportCanary, Log: e.log}
}

// zoneNS returns the block's zones with their name servers.
func (e *Engine) zoneNS() map[string][]string {
	out := map[string][]string{}
	snap := e.Snapshot()
	for _, origin := range e.opts.ZoneOrigins() {
		if z := snap.Zone(origin); z != nil && z.Origin == origin {
			for _, ns := range z.NS {
				out[origin] = append(out[origin], ns.Ns)
			}
		}
	}
	return out
}

// expect implements canary.Expect: what the block answers name/qtype for a client at client,
// or behind ecs, and every address it may answer now.
func (e *Engine) expect(name string, qtype uint16, client netip.Addr, ecs netip.Prefix) (canary.Expected, error) {
	snap := e.Snapshot()
	if !client.IsValid() {
		client = netip.IPv4Unspecified()
	}
	ex := answer.Explain(snap, e.AnswerOptions(), answer.Query{Msg: answer.ExplainQuery(name, qtype, ecs), Source: client, Geo: e.Geo()})
	out := canary.Expected{Rcode: ex.Rcode, Answer: []string{}, Scope: ex.Scope}
	for _, line := range ex.Answer {
		rr, err := dns.NewRR(line)
		if err != nil {
			return out, fmt.Errorf("the answer %q: %w", line, err)
		}
		switch v := rr.(type) {
		case *dns.A:
			out.Answer = append(out.Answer, v.A.String())
		case *dns.AAAA:
			out.Answer = append(out.Answer, v.AAAA.String())
		default:
			continue
		}
		out.TTL = max(out.TTL, rr.Header().Ttl)
	}
	out.Candidates = slices.Clone(out.Answer)
	f, _ := catalog.FamilyOf(qtype)
	if z := snap.Zone(name); z != nil {
		if r, _, _ := z.Lookup(name); r != nil {
			out.TTL = max(out.TTL, r.Config.TTL)
			for _, b := range r.View().Healthy[f] {
				if a := b.Config.IP; a.IsValid() && !slices.Contains(out.Candidates, a.String()) {
					out.Candidates = append(out.Candidates, a.String())
				}
			}
		}
	}
	return out, nil
}

// reportCanary sends a mismatch the canaries found to the block's webhooks.
func (e *Engine) reportCanary(f canary.Found) {
	if hooks, ok := instanceOf[*notify.Webhooks](e); ok {
		reason := f.Text
		if f.ECS != "" {
			reason = "ECS " + f.ECS + ": " + reason
		}
		hooks.Canary(notify.Event{Time: time.Now(), Canary: f.Target, Record: f.Name, Change: f.Kind, Reason: reason})
	}
}

var _ admin.CanaryProvider = (*Engine)(nil)

// Canaries implements admin.CanaryProvider: the last round of the block's canaries, and
// whether it has any.
func (e *Engine) Canaries(ctx context.Context, now bool) (canary.Report, bool) {
	r, ok := instanceOf[*canary.Runner](e)
	if !ok {
		return canary.Report{}, false
	}
	if now {
		return r.Round(ctx), true
	}
	return r.Last(), true
}
