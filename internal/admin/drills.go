package admin

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/meridian-gslb/meridian/internal/drill"
	"github.com/meridian-gslb/meridian/internal/overlay"
)

// The drills through the API: GET /api/v1/drills lists every block's drills with their next
// runs and last reports; POST /api/v1/drills/run runs a drill by name, or a hypothesis on
// demand over every block.

// DrillProvider is a Provider that runs drills.
type DrillProvider interface {
	// Drills returns the block's drills (none when it has none).
	Drills(now time.Time) []drill.Status
	// RunDrill runs the block's drill called name (drill.ErrUnknown when it has none of that
	// name) or, with no name, the hypothesis h, and returns its report.
	RunDrill(ctx context.Context, name string, h drill.Hypothesis) (drill.Report, error)
}

// DrillRequest is the body of POST /api/v1/drills/run: a drill's name, or a hypothesis.
type DrillRequest struct {
	Name string `json:"name,omitempty"`
	drill.Hypothesis
}

// Apply makes changes of the overrides on behalf of by (a component of a block: "drill:NAME",
// "shift:ID"), through the one place the API makes its own: the drain guard refuses what would
// leave a record below its guard (a *GuardError).
func (s *Server) Apply(ctx context.Context, by string, changes []overlay.Change) error {
	for i := range changes {
		changes[i].By = by
	}
	return s.store(withUser(ctx, by), changes, false)
}

func (s *Server) drills(w http.ResponseWriter, _ *http.Request) {
	now := time.Now()
	out := []drill.Status{}
	for _, reg := range s.active() {
		if dp, ok := reg.p.(DrillProvider); ok {
			out = append(out, dp.Drills(now)...)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// runDrill runs a named drill in the block that has it, or a hypothesis in every block, whose
// reports are merged.
func (s *Server) runDrill(w http.ResponseWriter, r *http.Request) {
	var req DrillRequest
	if err := decodeJSON(r, &req); err != nil {
		fail(w, err)
		return
	}
	if req.Name != "" && !req.Hypothesis.Empty() {
		writeError(w, http.StatusBadRequest, "give a drill's name or what to suppose, not both")
		return
	}
	var out *drill.Report
	for _, reg := range s.active() {
		dp, ok := reg.p.(DrillProvider)
		if !ok {
			continue
		}
		rep, err := dp.RunDrill(r.Context(), req.Name, req.Hypothesis)
		switch {
		case errors.Is(err, drill.ErrUnknown):
			continue
		case err != nil:
			writeError(w, http.StatusBadRequest, err.Error())
			return
		case out == nil:
			out = &rep
		default:
			out.Matched += rep.Matched
			out.Records = append(out.Records, rep.Records...)
			out.Failed = out.Failed || rep.Failed
			out.Summary += "; " + rep.Summary
		}
	}
	if out == nil {
		writeError(w, http.StatusNotFound, "no block has drill "+req.Name)
		return
	}
	slices.SortStableFunc(out.Records, func(a, b drill.RecordReport) int { return cmp.Compare(a.Record, b.Record) })
	s.log.Infof("admin API: %s ran a drill (%s): %s", cmp.Or(userOf(r.Context()), "anonymous"), cmp.Or(req.Name, "on demand"), out.Summary)
	writeJSON(w, http.StatusOK, out)
}
