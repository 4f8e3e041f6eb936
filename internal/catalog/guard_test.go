package catalog

import (
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// TestGuardBreaches takes backends out of records with drain guards: a change is a breach
// when it leaves a family below its guard and serves less than now.
func TestGuardBreaches(t *testing.T) {
	hs := states{}
	snap, err := Build([]*config.Zone{mustZone(t, "example.org", `
defaults:
  drain_guard: {min_healthy: 2}
records:
  www.example.org.:
    mode: weighted
    backends:
      - {address: 10.0.0.1, weight: 6, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.0.0.2, weight: 3, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.0.0.3, weight: 1, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 2001:db8::1}
  share.example.org.:
    mode: weighted
    drain_guard: {min_share: 50%}
    backends:
      - {address: 10.0.1.1, weight: 6}
      - {address: 10.0.1.2, weight: 3}
      - {address: 10.0.1.3, weight: 1}
  free.example.org.:
    drain_guard: {}
    backends: [{address: 10.0.2.1}]
`)}, hs)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"www.example.org.|10.0.0.1|0", "www.example.org.|10.0.0.2|0"} {
		hs.State(k).Set(health.Up)
	}
	hs.State("www.example.org.|10.0.0.3|0").Set(health.Down)
	tests := []struct {
		name  string
		after map[string]Override
		want  []string // the breaches' texts, in order
	}{
		{"nothing", nil, nil},
		{"one of two up, below min_healthy 2", map[string]Override{"www.example.org.|10.0.0.1|0": ForceDisable},
			[]string{"www.example.org. A: 1 of 3 backends served, 30% of the weight (was 2), drain_guard wants min_healthy 2"}},
		{"the down one: nothing served is taken out", map[string]Override{"www.example.org.|10.0.0.3|0": ForceDisable}, nil},
		{"the only AAAA, a family below its guard already", map[string]Override{"www.example.org.|2001:db8::1|0": ForceDisable},
			[]string{"www.example.org. AAAA: 0 of 1 backends served, 0% of the weight (was 1), drain_guard wants min_healthy 2"}},
		{"forced up makes up for a drain", map[string]Override{"www.example.org.|10.0.0.1|0": ForceDisable, "www.example.org.|10.0.0.3|0": ForceUp}, nil},
		{"the heavy one: 40% left of 50%", map[string]Override{"share.example.org.|10.0.1.1|0": ForceDisable},
			[]string{"share.example.org. A: 2 of 3 backends served, 40% of the weight (was 3), drain_guard wants min_share 50%"}},
		{"the light one: 90% left", map[string]Override{"share.example.org.|10.0.1.3|0": ForceDisable}, nil},
		{"an empty guard guards nothing", map[string]Override{"free.example.org.|10.0.2.1|0": ForceDisable}, nil},
		{"clear is no override", map[string]Override{"share.example.org.|10.0.1.1|0": NoOverride}, nil},
	}
	for _, tt := range tests {
		var got []string
		for _, b := range snap.GuardBreaches(tt.after) {
			got = append(got, b.String())
		}
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

// TestBelowOnAWhatIf reads a drill's question: which records a hypothesis leaves below their
// guard, whether or not they were already.
func TestBelowOnAWhatIf(t *testing.T) {
	snap, err := Build([]*config.Zone{mustZone(t, "example.org", `
records:
  www.example.org.:
    drain_guard: {min_healthy: 2}
    backends:
      - {address: 10.0.0.1, site: eu}
      - {address: 10.0.0.2, site: eu}
      - {address: 10.0.0.3, site: us}
`)}, states{})
	if err != nil {
		t.Fatal(err)
	}
	rec := snap.Records()[0]
	if b := rec.Below(nil); len(b) != 0 {
		t.Fatalf("below its guard as served: %v", b)
	}
	w, _ := snap.WhatIf(Hypothesis{Down: []string{"site:eu"}})
	below := w.Records()[0].Below(rec)
	if len(below) != 1 || below[0].After.Served != 1 || below[0].Before.Served != 3 {
		t.Fatalf("eu down: %v", below)
	}
}
