package config

import (
	"strings"
	"testing"
)

func TestDrainGuardParses(t *testing.T) {
	for _, tc := range []struct {
		name, yml string
		want      map[string]DrainGuard // by record
		err       string
	}{
		{name: "none", yml: `
records:
  www.example.org.: {backends: [{address: 192.0.2.1}]}
`, want: map[string]DrainGuard{"www.example.org.": {}}},
		{name: "a record's and the zone default's", yml: `
defaults:
  drain_guard: {min_healthy: 2}
records:
  www.example.org.:
    drain_guard: {min_share: 50%}
    backends: [{address: 192.0.2.1}]
  api.example.org.: {backends: [{address: 192.0.2.2}]}
  img.example.org.:
    drain_guard: {min_healthy: 1, min_share: 0.25}
    backends: [{address: 192.0.2.3}]
`, want: map[string]DrainGuard{"www.example.org.": {MinShare: 0.5}, "api.example.org.": {MinHealthy: 2},
			"img.example.org.": {MinHealthy: 1, MinShare: 0.25}}},
		{name: "share above 100%", yml: `
records:
  www.example.org.: {drain_guard: {min_share: 120%}, backends: [{address: 192.0.2.1}]}
`, err: `zone.yml:3:47: records["www.example.org."].drain_guard.min_share: must be a percentage from 0% to 100%, not "120%"`},
		{name: "share above 1", yml: `
records:
  www.example.org.: {drain_guard: {min_share: 2}, backends: [{address: 192.0.2.1}]}
`, err: "drain_guard.min_share: must be between 0 and 1, not 2"},
		{name: "negative minimum", yml: `
records:
  www.example.org.: {drain_guard: {min_healthy: -1}, backends: [{address: 192.0.2.1}]}
`, err: "drain_guard.min_healthy: must be between 0 and 1048576, not -1"},
		{name: "unknown key", yml: `
records:
  www.example.org.: {drain_guard: {min_up: 1}, backends: [{address: 192.0.2.1}]}
`, err: `unknown key "min_up"`},
		{name: "not a mapping", yml: `
records:
  www.example.org.: {drain_guard: 2, backends: [{address: 192.0.2.1}]}
`, err: "drain_guard: must be a mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z, err := ParseZone("zone.yml", []byte(tc.yml), "example.org", nil, 1)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range z.Records {
				if got := r.Settings().Guard; got != tc.want[r.Name] {
					t.Errorf("%s: guard %+v, want %+v", r.Name, got, tc.want[r.Name])
				}
			}
		})
	}
}

func TestDrainGuardAllows(t *testing.T) {
	g := DrainGuard{MinHealthy: 2, MinShare: 1.0 / 3}
	for _, tc := range []struct {
		served int
		share  float64
		want   bool
	}{
		{2, 0.5, true},
		{1, 0.9, false},
		{2, 0.2, false},
		{3, 1.0 / 3, true}, // on the floor
	} {
		if got := g.Allows(tc.served, tc.share); got != tc.want {
			t.Errorf("Allows(%d, %g) = %t, want %t", tc.served, tc.share, got, tc.want)
		}
	}
	if s := g.String(); s != "min_healthy 2, min_share 33.33333333333333%" {
		t.Errorf("String() = %q", s)
	}
	if (DrainGuard{}).On() || (DrainGuard{}).String() != "none" {
		t.Error("the zero guard is on")
	}
}
