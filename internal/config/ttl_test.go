package config

import (
	"strings"
	"testing"
	"time"
)

func TestLowTTLsAndFailoverTarget(t *testing.T) {
	tests := []struct {
		name     string
		yml      string
		degraded uint32
		drain    uint32
		target   time.Duration
		wantErr  string
	}{
		{"defaults", "records:\n  a.example.org:\n    record_ttl: 20\n    backends: [{address: 10.0.0.1}]\n", 20, 5, 0, ""},
		{"small record_ttl caps the drain default", "records:\n  a.example.org:\n    record_ttl: 3\n    backends: [{address: 10.0.0.1}]\n", 3, 3, 0, ""},
		{"set", "records:\n  a.example.org:\n    degraded_ttl: 10\n    drain_ttl: 2\n    failover_target: 1m\n    backends: [{address: 10.0.0.1}]\n", 10, 2, time.Minute, ""},
		{"drain above degraded", "records:\n  a.example.org:\n    degraded_ttl: 4\n    drain_ttl: 8\n    backends: [{address: 10.0.0.1}]\n", 4, 4, 0, ""},
		{"from defaults", "defaults: {degraded_ttl: 7, failover_target: 90s}\nrecords:\n  a.example.org:\n    backends: [{address: 10.0.0.1}]\n", 7, 5, 90 * time.Second, ""},
		{"degraded above record_ttl", "records:\n  a.example.org:\n    record_ttl: 10\n    degraded_ttl: 20\n    backends: [{address: 10.0.0.1}]\n", 0, 0, 0,
			`zone.yml:4:19: records["a.example.org"].degraded_ttl: degraded_ttl 20 is above record_ttl 10: a degraded answer must not be cached longer than a healthy one`},
		{"drain above record_ttl", "records:\n  a.example.org:\n    record_ttl: 10\n    drain_ttl: 20\n    backends: [{address: 10.0.0.1}]\n", 0, 0, 0,
			`zone.yml:4:16: records["a.example.org"].drain_ttl: drain_ttl 20 is above record_ttl 10`},
		{"bad target", "records:\n  a.example.org:\n    failover_target: soon\n    backends: [{address: 10.0.0.1}]\n", 0, 0, 0, "failover_target"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			z, err := ParseZone("zone.yml", []byte(tt.yml), "example.org.", nil, 1)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r := &z.Records[0]
			if r.DegradedAnswerTTL() != tt.degraded || r.DrainAnswerTTL() != tt.drain || r.Settings().FailoverTarget != tt.target {
				t.Fatalf("degraded %d drain %d target %v, want %d %d %v", r.DegradedAnswerTTL(), r.DrainAnswerTTL(), r.Settings().FailoverTarget, tt.degraded, tt.drain, tt.target)
			}
		})
	}
}
