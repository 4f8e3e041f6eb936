package catalog

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// TestWhatIf supposes backends down or drained, by key, address and site: the copy's records
// answer as they would, and the snapshot served is left as it is.
func TestWhatIf(t *testing.T) {
	hs := states{}
	snap, err := Build([]*config.Zone{mustZone(t, "example.org", `
records:
  app.example.org.:
    mode: failover
    backends:
      - {address: 10.0.0.1, priority: 1, site: eu, location: eu, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.0.0.2, priority: 2, site: us}
      - {address: 10.0.0.3, priority: 3}
  other.example.org.:
    backends: [{address: 10.0.0.9}]
`)}, hs)
	if err != nil {
		t.Fatal(err)
	}
	hs.State("app.example.org.|10.0.0.1|0").Set(health.Up)
	for _, r := range snap.Records() {
		r.Refresh()
	}
	healthy := func(s *Snapshot) []string {
		rec, _, _ := s.Zone("app.example.org.").Lookup("app.example.org.")
		var out []string
		for _, i := range rec.View().Sets[IPv4].Pick(netip.Addr{}, nil) {
			out = append(out, rec.View().Healthy[IPv4][i].Config.Address)
		}
		return out
	}
	tests := []struct {
		name    string
		h       Hypothesis
		want    []string
		matched int
	}{
		{"nothing", Hypothesis{}, []string{"10.0.0.1"}, 0},
		{"by key", Hypothesis{Down: []string{"app.example.org.|10.0.0.1|0"}}, []string{"10.0.0.2"}, 1},
		{"by site", Hypothesis{Drained: []string{"site:eu"}}, []string{"10.0.0.2"}, 1},
		{"two sites", Hypothesis{Down: []string{"site:eu"}, Drained: []string{"10.0.0.2"}}, []string{"10.0.0.3"}, 2},
		{"no match", Hypothesis{Down: []string{"site:ap"}}, []string{"10.0.0.1"}, 0},
		{"by location", Hypothesis{Down: []string{"location:eu"}}, []string{"10.0.0.2"}, 1},
	}
	for _, tt := range tests {
		w, matched := snap.WhatIf(tt.h)
		if got := healthy(w); !slices.Equal(got, tt.want) || len(matched) != tt.matched {
			t.Errorf("%s: answers %v (matched %v), want %v", tt.name, got, matched, tt.want)
		}
		if got := healthy(snap); !slices.Equal(got, []string{"10.0.0.1"}) {
			t.Fatalf("%s: the served snapshot changed: %v", tt.name, got)
		}
		if other, _, _ := w.Zone("other.example.org.").Lookup("other.example.org."); other != snap.Records()[1] {
			t.Errorf("%s: a record the hypothesis does not touch was copied", tt.name)
		}
	}
}
