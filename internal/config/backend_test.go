package config

import "testing"

func TestBackendProbed(t *testing.T) {
	checks := []HealthCheck{{Type: "tcp"}}
	tests := []struct {
		name string
		b    Backend
		want bool
	}{
		{"no checks", Backend{}, false},
		{"checks", Backend{HealthChecks: checks}, true},
		{"passive", Backend{Passive: true}, true},
		{"assume_healthy with checks", Backend{HealthChecks: checks, AssumeHealthy: true}, false},
		{"assume_healthy and passive", Backend{Passive: true, AssumeHealthy: true}, false},
	}
	for _, tt := range tests {
		if got := tt.b.Probed(); got != tt.want {
			t.Errorf("%s: Probed() = %v, want %v", tt.name, got, tt.want)
		}
	}
}
