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

// healthSpecs returns the specs the health manager is given for snap's backends, each a copy
// of its own.
func healthSpecs(snap *catalog.Snapshot) ([]health.Spec, error) {
	ps, err := compileProbes(snap)
	if err != nil {
		return nil, err
	}
	var specs []health.Spec
	for s := range ps.specs() {
		specs = append(specs, *s)
	}
	return specs, nil
}

// TestHealthSpecsOfExternalBackends checks what each kind of probed backend is given: its
// checks, unless it is passive or another site's; Spec.External when a source judges it (so an
// External backend of this site, a Kubernetes Service's address, gets both); and its rise and
// fall.
func TestHealthSpecsOfExternalBackends(t *testing.T) {
	tcp := config.Checks{HealthChecks: []config.HealthCheck{{Type: "tcp", Params: config.NewParams(map[string]any{"port": 80})}}, Rise: 3, Fall: 2}
	none := config.Checks{Rise: 3, Fall: 2}
	tests := []struct {
		name     string
		backend  config.Backend
		checks   int
		external bool
		passive  bool
	}{
		{"probed", config.Backend{}.WithChecks(tcp), 1, false, false},
		{"external with checks", config.Backend{External: true}.WithChecks(tcp), 1, true, false},
		{"external without checks", config.Backend{External: true}.WithChecks(none), 0, true, false},
		{"another site's", config.Backend{External: true, Remote: true}.WithOrigin(config.Origin{Site: "eu"}).WithChecks(tcp), 0, true, false},
		{"passive", config.Backend{Passive: true}.WithChecks(tcp), 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.backend
			b.IP = netip.MustParseAddr("192.0.2.1")
			b.Address, b.Enable = b.IP.String(), true
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

// TestHealthSpecsOfBackendsSharingChecks: backends that share their checks (a profile's, or a
// Kubernetes Service's addresses) each get them compiled, and the shared parameters stay.
func TestHealthSpecsOfBackendsSharingChecks(t *testing.T) {
	first := config.Backend{Enable: true}.WithChecks(config.Checks{
		HealthChecks: []config.HealthCheck{{Type: "tcp", Params: config.NewParams(map[string]any{"port": 8443})}}, Rise: 1, Fall: 1})
	var backends []config.Backend
	for _, addr := range []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"} {
		b := first // its copies share its checks, as the parser's backends do
		b.Address, b.IP = addr, netip.MustParseAddr(addr)
		backends = append(backends, b)
	}
	if backends[0].Checks() != backends[2].Checks() {
		t.Fatal("the copies do not share their checks")
	}
	rec := config.Record{Name: "www.example.org.", Backends: backends}
	rec.SetSettings(config.Settings{ScrapeInterval: 10 * time.Second, ScrapeTimeout: time.Second})
	zone := &config.Zone{Origin: "example.org.", Records: []config.Record{rec}}
	snap, err := catalog.Build([]*config.Zone{zone}, health.NewManager(health.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 { // and again, as a reload of the same snapshot's records would
		specs, err := healthSpecs(snap)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if len(specs) != len(backends) {
			t.Fatalf("round %d: %d specs, want %d", round, len(specs), len(backends))
		}
		for _, s := range specs {
			if len(s.Checks) != 1 {
				t.Errorf("round %d: %s has %d checks, want 1", round, s.Backend, len(s.Checks))
			}
			for _, c := range s.Checks {
				probe.Release(c.Prober)
			}
		}
	}
	for _, b := range snap.Records()[0].Backends {
		if p := b.Config.Checks().HealthChecks[0].Params.Map()["port"]; p != 8443 {
			t.Errorf("%s: the check's port is %v after compiling, want 8443", b.Config.Address, p)
		}
	}
}
