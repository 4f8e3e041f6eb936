package policy

import (
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
)

// TestChainStepsRegistered: every step config accepts has its row in chainSteps, and a step
// has a selection rule (for explanations) exactly when config says it selects; a selection
// step always runs per query.
func TestChainStepsRegistered(t *testing.T) {
	c := &Chain{cands: []Candidate{{Weight: 1}, {Weight: 2}}}
	geoCands := make([]GeoCandidate, len(c.cands))
	for _, name := range config.ChainSteps {
		newStep, ok := chainSteps[name]
		if !ok {
			t.Errorf("step %s has no row in chainSteps", name)
			continue
		}
		s := newStep(c, geoCands)
		if got := s.rule() != ""; got != name.Selects() {
			t.Errorf("step %s: has a selection rule %v, selects %v", name, got, name.Selects())
		}
		if name.Selects() && !s.perQuery() {
			t.Errorf("selection step %s runs ahead", name)
		}
	}
	if len(chainSteps) != len(config.ChainSteps) {
		t.Errorf("chainSteps has %d rows, config %d steps", len(chainSteps), len(config.ChainSteps))
	}
}
