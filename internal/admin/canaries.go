package admin

import (
	"context"
	"net/http"

	"github.com/meridian-gslb/meridian/internal/canary"
)

// The canaries through the API: GET /api/v1/canaries is every block's last round, POST
// /api/v1/canaries/run runs a round of each now.

// CanaryProvider is a Provider whose block may have canaries.
type CanaryProvider interface {
	// Canaries returns the last round of the block's canaries or, with now, a round run now;
	// false when the block has none.
	Canaries(ctx context.Context, now bool) (canary.Report, bool)
}

// canaryReport returns the blocks' rounds, merged.
func (s *Server) canaryReport(ctx context.Context, now bool) canary.Report {
	out := canary.Report{Checks: []canary.Check{}, Delegations: []canary.Delegation{}}
	for _, reg := range s.active() {
		cp, ok := reg.p.(CanaryProvider)
		if !ok {
			continue
		}
		if rep, ok := cp.Canaries(ctx, now); ok {
			if rep.Time.After(out.Time) {
				out.Time = rep.Time
			}
			out.Checks = append(out.Checks, rep.Checks...)
			out.Delegations = append(out.Delegations, rep.Delegations...)
		}
	}
	return out
}

func (s *Server) canaries(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.canaryReport(r.Context(), false))
}

func (s *Server) runCanaries(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.canaryReport(r.Context(), true))
}
