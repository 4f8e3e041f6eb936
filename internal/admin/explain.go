package admin

import (
	"fmt"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/answer"
)

// LastCheck is what a block knows of a backend's last health check: when it ran (zero when
// never) and what it said.
type LastCheck struct {
	At     time.Time
	Reason string
}

// NewExplanation returns the explanation of q that the API shows, from the answer's own
// explanation ex: the what-if step first when there is one (whatIf nil: none), the client, the
// record, each backend with its last check (lastChecks, by backend key), then the steps of the
// selection and the ECS scope.
func NewExplanation(q Query, whatIf *Step, ex answer.Explanation, lastChecks map[string]LastCheck) Explanation {
	out := Explanation{Query: q, Zone: ex.Zone, Record: ex.Record, Rcode: ex.Rcode, Answer: ex.Answer}
	if whatIf != nil {
		out.Steps = append(out.Steps, *whatIf)
	}
	out.Steps = append(out.Steps, Step{Stage: "client", Text: fmt.Sprintf("%s (%s)", ex.Client, ex.ClientFrom)})
	if ex.Mode != "" {
		out.Steps = append(out.Steps, Step{Stage: "record", Text: fmt.Sprintf("%s, mode %s, fallback %s", ex.Record, ex.Mode, ex.Fallback)})
	}
	for _, n := range ex.Backends {
		text := n.State
		if c, ok := lastChecks[n.Key]; ok && !c.At.IsZero() {
			text += fmt.Sprintf(" (last check %s: %s)", c.At.UTC().Format(time.RFC3339), c.Reason)
		}
		out.Steps = append(out.Steps, Step{Stage: n.Family + " backend " + n.Address, Text: text, Backends: []string{n.Key}})
	}
	for _, s := range ex.Steps {
		stage, text, found := strings.Cut(s, ": ")
		if !found {
			stage, text = "", s
		}
		out.Steps = append(out.Steps, Step{Stage: stage, Text: text})
	}
	if ex.Scope >= 0 {
		out.Steps = append(out.Steps, Step{Stage: "ecs scope", Text: fmt.Sprintf("/%d", ex.Scope)})
	}
	return out
}

// WhatIfStep is the first step of a what-if explanation: what was supposed (q.Down and
// q.Drained), and the keys of the backends it matched.
func WhatIfStep(q Query, matched []string) *Step {
	text := fmt.Sprintf("as if down %v and drained %v: %d backends", q.Down, q.Drained, len(matched))
	if len(matched) == 0 {
		text = fmt.Sprintf("as if down %v and drained %v: no backend matches, the answer is today's", q.Down, q.Drained)
	}
	return &Step{Stage: "what if", Text: text, Backends: matched}
}
