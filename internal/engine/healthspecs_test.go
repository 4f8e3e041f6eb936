package engine

import (
	"net/netip"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/health/probe"
)

// TestHealthSpecsOfExternalBackends checks what each kind of probed backend is given: its
// checks, unless it is passive or another site's; Spec.External when a source judges it (so an
// External backend of this site, a Kubernetes Service's address, gets both); and its rise and
// fall.
func TestHealthSpecsOfExternalBackends(t *testing.T) {
	tcp := func() []config.HealthCheck {
		return []config.HealthCheck{{Type: "tcp", Params: map[string]any{"port": 80}}}
	}
	tests := []struct {
		name     string
		backend  config.Backend
		checks   int
		external bool
		passive  bool
	}{
		{"probed", config.Backend{HealthChecks: tcp()}, 1, false, false},
		{"external with checks", config.Backend{External: true, HealthChecks: tcp()}, 1, true, false},
		{"external without checks", config.Backend{External: true}, 0, true, false},
		{"another site's", config.Backend{External: true, Remote: true, Site: "eu", HealthChecks: tcp()}, 0, true, false},
		{"passive", config.Backend{Passive: true, HealthChecks: tcp()}, 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.backend
			b.IP = netip.MustParseAddr("192.0.2.1")
			b.Address, b.Enable, b.Rise, b.Fall = b.IP.String(), true, 3, 2
			rec := config.Record{Name: "www.example.org.", Backends: []config.Backend{b}}
			rec.SetSettings(config.Settings{ScrapeInterval: 10 * time.Second, ScrapeTimeout: time.Second})
			zone := &config.Zone{Origin: "example.org.", Records: []config.Record{rec}}
			snap, err := catalog.Build([]*config.Zone{zone}, health.NewManager(health.Options{}))
			if err != nil {
				t.Fatal(err)
			}
			specs, err := healthSpecs(snap)
			if err != nil {
				t.Fatal(err)
			}
			if len(specs) != 1 {
				t.Fatalf("%d specs, want 1", len(specs))
			}
			s := specs[0]
			for _, c := range s.Checks {
				probe.Release(c.Prober)
			}
			if len(s.Checks) != tt.checks || s.External != tt.external || s.Passive != tt.passive {
				t.Errorf("spec has %d checks, external %v, passive %v; want %d, %v, %v", len(s.Checks), s.External, s.Passive, tt.checks, tt.external, tt.passive)
			}
			if s.Rise != 3 || s.Fall != 2 {
				t.Errorf("rise %d, fall %d; want 3 and 2", s.Rise, s.Fall)
			}
		})
	}
}
