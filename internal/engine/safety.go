package engine

import (
	"context"
	"time"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/drill"
	"github.com/meridian-gslb/meridian/internal/notify"
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
