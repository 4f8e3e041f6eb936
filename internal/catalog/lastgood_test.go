package catalog

import (
	"slices"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// lastGoodYAML is a round-robin record of three probed backends with the last-known-good
// fallback.
const lastGoodYAML = `
records:
  app.example.org.:
    mode: roundrobin
    fallback_policy: {mode: last-known-good}
    backends:
      - {address: 10.0.0.1, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.0.0.2, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.0.0.3, healthchecks: [{type: tcp, params: {port: 80}}]}
`

// TestLastKnownGood follows a record's last-known-good backends through health changes and a
// reload: the backends healthy the last time any was, still enabled, and none before any was.
func TestLastKnownGood(t *testing.T) {
	hs := states{}
	build := func() *Record {
		snap, err := Build([]*config.Zone{mustZone(t, "example.org", lastGoodYAML)}, hs)
		if err != nil {
			t.Fatal(err)
		}
		return snap.Records()[0]
	}
	r := build()
	key := func(ip string) string { return "app.example.org.|" + ip + "|0" }
	addrs := func(bs []*Backend) []string {
		var out []string
		for _, b := range bs {
			out = append(out, b.Config.Address)
		}
		return out
	}
	steps := []struct {
		name   string
		status map[string]health.Status
		apply  func()
		want   []string
	}{
		{"never healthy", map[string]health.Status{"10.0.0.1": health.Down, "10.0.0.2": health.Down, "10.0.0.3": health.Unknown}, nil, nil},
		{"two up", map[string]health.Status{"10.0.0.1": health.Up, "10.0.0.2": health.Up}, nil, []string{"10.0.0.1", "10.0.0.2"}},
		{"one left", map[string]health.Status{"10.0.0.1": health.Down}, nil, []string{"10.0.0.2"}},
		{"none left", map[string]health.Status{"10.0.0.2": health.Down}, nil, []string{"10.0.0.2"}},
		{"the last good one drained", nil, func() { r.Backends[1].SetOverride(ForceDisable) }, nil},
		{"back", nil, func() { r.Backends[1].SetOverride(NoOverride) }, []string{"10.0.0.2"}},
	}
	for _, s := range steps {
		for ip, st := range s.status {
			hs.State(key(ip)).Set(st)
		}
		if s.apply != nil {
			s.apply()
		}
		r.Refresh()
		if got := addrs(r.View().Extra().LastGood[IPv4]); !slices.Equal(got, s.want) {
			t.Errorf("%s: last known good %v, want %v", s.name, got, s.want)
		}
	}
	// A reload keeps them: the new record has no healthy backend yet.
	reloaded := build()
	(&Snapshot{records: []*Record{reloaded}}).CarryCounts(&Snapshot{records: []*Record{r}})
	if got := addrs(reloaded.View().Extra().LastGood[IPv4]); !slices.Equal(got, []string{"10.0.0.2"}) {
		t.Errorf("after a reload: last known good %v, want 10.0.0.2", got)
	}
}
