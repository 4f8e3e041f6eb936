package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestChainRecord parses chain records: the steps (health implicit), max_answers, the
// tolerance in both forms, max_load, their defaults and inheritance, and every mistake.
func TestChainRecord(t *testing.T) {
	tests := []struct {
		name, record string
		steps        []ChainStep
		maxAnswers   int
		tolerance    Tolerance
		maxLoad      float64
		err          string
	}{
		{"defaults", "mode: chain\n    chain: [health, geo, rtt, load, weighted]", []ChainStep{StepGeo, StepRTT, StepLoad, StepWeighted}, 0, DefaultRTTTolerance, DefaultMaxLoad, ""},
		{"settings", "mode: chain\n    chain: [priority, RTT, hash]\n    max_answers: 2\n    rtt_tolerance: 5ms\n    max_load: 0.8", []ChainStep{StepPriority, StepRTT, StepHash}, 2, Tolerance{Duration: 5 * time.Millisecond}, 0.8, ""},
		{"a percentage", "mode: chain\n    chain: [rtt]\n    rtt_tolerance: 12.5%", []ChainStep{StepRTT}, 0, Tolerance{Fraction: 0.125}, DefaultMaxLoad, ""},
		{"no chain", "mode: chain", nil, 0, Tolerance{}, 0, "mode chain needs a chain"},
		{"empty chain", "mode: chain\n    chain: []", nil, 0, Tolerance{}, 0, "a chain needs at least one step"},
		{"unknown step", "mode: chain\n    chain: [geo, latency]", nil, 0, Tolerance{}, 0, `chain[1]: unknown chain step "latency"`},
		{"twice", "mode: chain\n    chain: [rtt, rtt]", nil, 0, Tolerance{}, 0, "the step rtt is in the chain twice"},
		{"health later", "mode: chain\n    chain: [geo, health]", nil, 0, Tolerance{}, 0, "health is the chain's first step"},
		{"after a selection step", "mode: chain\n    chain: [weighted, rtt]", nil, 0, Tolerance{}, 0, "weighted chooses among what is left and ends the chain: rtt cannot follow it"},
		{"bad tolerance", "mode: chain\n    chain: [rtt]\n    rtt_tolerance: fast", nil, 0, Tolerance{}, 0, `"fast" is neither a percentage`},
		{"bad max_answers", "mode: chain\n    chain: [rtt]\n    max_answers: 65", nil, 0, Tolerance{}, 0, "max_answers"},
		{"chain without the mode", "chain: [rtt]", nil, 0, Tolerance{}, 0, "chain only applies with mode chain, not failover"},
		{"max_load without the mode", "mode: weighted\n    max_load: 2", nil, 0, Tolerance{}, 0, "max_load only applies with mode chain, not weighted"},
	}
	for _, tt := range tests {
		yml := "records:\n  a.example.org:\n    " + tt.record + "\n    backends: [{address: 10.0.0.1}]\n"
		z, err := ParseZone("zone.yml", []byte(yml), "example.org", nil, 7)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		r := z.Records[0]
		if !slices.Equal(r.Steering().Chain, tt.steps) || r.Steering().MaxAnswers != tt.maxAnswers || r.Steering().RTTTolerance != tt.tolerance || r.Steering().MaxLoad != tt.maxLoad {
			t.Errorf("%s: chain %v max_answers %d tolerance %+v max_load %v", tt.name, r.Steering().Chain, r.Steering().MaxAnswers, r.Steering().RTTTolerance, r.Steering().MaxLoad)
		}
	}
	// From defaults: a chain record inherits them, another mode ignores them.
	yml := "defaults: {chain: [rtt, weighted], rtt_tolerance: 10%}\nrecords:\n  a.example.org: {mode: chain, backends: [{address: 10.0.0.1}]}\n  b.example.org: {backends: [{address: 10.0.0.2}]}\n"
	z, err := ParseZone("zone.yml", []byte(yml), "example.org", nil, 7)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := z.Records[0], z.Records[1]; !slices.Equal(a.Steering().Chain, []ChainStep{StepRTT, StepWeighted}) || a.Steering().RTTTolerance.Fraction != 0.1 || b.Steering().Chain != nil {
		t.Errorf("from defaults: %v %+v; the failover record's chain %v", a.Steering().Chain, a.Steering().RTTTolerance, b.Steering().Chain)
	}
}

// TestTolerance checks Within at its bounds, and the written forms.
func TestTolerance(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		tol       Tolerance
		rtt, best time.Duration
		within    bool
		written   string
	}{
		{Tolerance{Fraction: 0.2}, 12 * ms, 10 * ms, true, "20%"},
		{Tolerance{Fraction: 0.2}, 12*ms + 1, 10 * ms, false, "20%"},
		{Tolerance{Duration: 5 * ms}, 15 * ms, 10 * ms, true, "5ms"},
		{Tolerance{Duration: 5 * ms}, 16 * ms, 10 * ms, false, "5ms"},
	}
	for _, tt := range tests {
		if got := tt.tol.Within(tt.rtt, tt.best); got != tt.within || tt.tol.String() != tt.written {
			t.Errorf("%s: Within(%v, %v) = %v, want %v", tt.tol, tt.rtt, tt.best, got, tt.within)
		}
	}
}
