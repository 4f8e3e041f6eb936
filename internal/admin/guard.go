package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/overlay"
)

// The drain guard at the API: every change of the overrides goes through Server.store, which
// asks each block whether the changes would leave one of its records below its drain guard
// (GuardProvider), and refuses them (409, with the records) unless they are forced with a
// reason, which the override then keeps (overlay.Override.Forced, Breaches).

// GuardProvider is a Provider whose records may have a drain guard.
type GuardProvider interface {
	// Guard returns the records of the block that changes would leave below their drain
	// guard, a scheduled drain judged as if it started now. Changes of backends the block
	// does not have are ignored.
	Guard(changes []overlay.Change) []Breach
}

// Breach is a record's address family that a change would leave below its drain guard, or
// that a drill finds below it.
type Breach struct {
	Record string `json:"record"`
	// Family is A or AAAA.
	Family string `json:"family"`
	// Guard is the record's drain guard.
	Guard DrainGuard `json:"guard"`
	// Served and Backends are the family's backends served after the change, and all of
	// them; Share the served share of their weight (0 to 1); ServedBefore those served now.
	Served       int     `json:"served"`
	Backends     int     `json:"backends"`
	Share        float64 `json:"share"`
	ServedBefore int     `json:"served_before"`
	// Text says it all in a sentence.
	Text string `json:"text"`
}

// DrainGuard is a record's drain_guard, as the API shows it.
type DrainGuard struct {
	MinHealthy int     `json:"min_healthy,omitempty"`
	MinShare   float64 `json:"min_share,omitempty"`
}

// NewDrainGuard returns g as the API shows it, nil when it asks for nothing.
func NewDrainGuard(g config.DrainGuard) *DrainGuard {
	if !g.On() {
		return nil
	}
	return &DrainGuard{MinHealthy: g.MinHealthy, MinShare: g.MinShare}
}

// guardRefusals counts the changes the drain guard refused, and forcedChanges those forced
// past it, in the default registry that CoreDNS's prometheus plugin serves.
var (
	guardRefusals = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "drain_guard_refusals_total",
		Help: "Changes of the overrides that the admin API refused because they would leave a record below its drain guard.",
	})
	forcedChanges = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "drain_guard_forced_total",
		Help: "Changes of the overrides forced past the drain guard of the records they left below it.",
	})
)

// GuardError is the refusal of changes that would leave records below their drain guard.
type GuardError struct {
	Breaches []Breach
}

// Error implements error.
func (e *GuardError) Error() string {
	texts := make([]string, len(e.Breaches))
	for i, b := range e.Breaches {
		texts[i] = b.Text
	}
	return fmt.Sprintf("refused by the drain guard: %s; force it with a reason to go ahead", strings.Join(texts, "; "))
}

// guard returns the breaches that changes would make, over every block.
func (s *Server) guard(changes []overlay.Change) []Breach {
	var out []Breach
	for _, reg := range s.active() {
		if gp, ok := reg.p.(GuardProvider); ok {
			out = append(out, gp.Guard(changes)...)
		}
	}
	return out
}

// store applies changes to the overlay store, all at once: the one place the API changes the
// overrides. Changes that would leave a record below its drain guard are refused (a
// GuardError) unless force is set, when they are made with the breaches kept in each override
// (force needs every change to carry a reason). A change the store refuses is an apiError.
func (s *Server) store(ctx context.Context, changes []overlay.Change, force bool) error {
	if breaches := s.guard(changes); len(breaches) > 0 {
		if !force {
			guardRefusals.Inc()
			s.log.Infof("admin API: refused %s's change of %d backends: %v", cmp.Or(userOf(ctx), "anonymous"), len(changes), &GuardError{breaches})
			return &GuardError{Breaches: breaches}
		}
		texts := make([]string, len(breaches))
		for i, b := range breaches {
			texts[i] = b.Text
		}
		for i := range changes {
			changes[i].Forced, changes[i].Breaches = true, texts
		}
	}
	if err := s.settings.Load().store.Apply(ctx, changes); err != nil {
		if errors.Is(err, overlay.ErrInvalid) {
			return errorf(http.StatusBadRequest, "%v", err)
		}
		return fmt.Errorf("store overrides: %w", err)
	}
	if len(changes) > 0 && changes[0].Forced {
		forcedChanges.Inc()
		s.log.Infof("admin API: %s forced %d backends past the drain guard (%s): %s", cmp.Or(userOf(ctx), "anonymous"), len(changes), changes[0].Reason, strings.Join(changes[0].Breaches, "; "))
	}
	return nil
}
