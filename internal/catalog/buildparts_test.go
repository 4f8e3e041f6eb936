package catalog

import (
	"fmt"
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// TestBuildingInPartsBuildsTheSame builds a zone of more records than two parts of a build
// have, twice in two zones (one word a key, whatever the zone or the part), with a health
// manager (asked for batches of words, in parts on every core) and with a health source asked
// one word at a time: the same records in the same order, each found by its name, each
// probed backend with the manager's word of its key (the same word when built again, as a
// reload keeps it), the others with none of their own.
func TestBuildingInPartsBuildsTheSame(t *testing.T) {
	n := 2*minBuildPart + stateBatch + 7
	text := func(origin string) string {
		var zone strings.Builder
		zone.WriteString("records:\n")
		for i := range n {
			fmt.Fprintf(&zone, "  n%06d.%s.:\n    backends:\n", i, origin)
			fmt.Fprintf(&zone, "      - {address: 127.1.%d.%d, priority: 1, healthchecks: [{type: tcp, params: {port: 9}}]}\n", i/250%250, i%250+1)
			fmt.Fprintf(&zone, "      - {address: 127.2.%d.%d, priority: 2}\n", i/250%250, i%250+1)
		}
		return zone.String()
	}
	zones := func() []*config.Zone {
		return []*config.Zone{mustZone(t, "a.test", text("a.test")), mustZone(t, "b.test", text("b.test"))}
	}
	m := health.NewManager(health.Options{})
	parts, err := BuildUnviewed(zones(), m)
	if err != nil {
		t.Fatal(err)
	}
	again, err := BuildUnviewed(zones(), m)
	if err != nil {
		t.Fatal(err)
	}
	one, err := BuildUnviewed(zones(), states{})
	if err != nil {
		t.Fatal(err)
	}
	if len(parts.Records()) != 2*n || len(one.Records()) != 2*n || len(again.Records()) != 2*n {
		t.Fatalf("%d, %d and %d records, want %d", len(parts.Records()), len(again.Records()), len(one.Records()), 2*n)
	}
	for i, r := range parts.Records() {
		if o := one.Records()[i]; r.Name() != o.Name() || len(r.Backends) != len(o.Backends) {
			t.Fatalf("record %d: %s with %d backends, %s with %d one at a time", i, r.Name(), len(r.Backends), o.Name(), len(o.Backends))
		}
		if found, _, _ := r.Zone.Lookup(r.Name()); found != r {
			t.Fatalf("record %d: %s is not found by its name in %s", i, r.Name(), r.Zone.Origin)
		}
		for j, b := range r.Backends {
			probed, key := b.Config.Probed(), config.BackendKey(r.Name(), b.Config)
			switch {
			case probed && (b.State != m.State(key) || b.State.Key() != key):
				t.Fatalf("%s: backend %s has a word of key %q, not the manager's", r.Name(), b.Config.Address, b.State.Key())
			case probed && again.Records()[i].Backends[j].State != b.State:
				t.Fatalf("%s: backend %s has another word when built again", r.Name(), b.Config.Address)
			case !probed && (b.State != unprobedState || one.Records()[i].Backends[j].State != unprobedState):
				t.Fatalf("%s: unprobed backend %s has a word of its own", r.Name(), b.Config.Address)
			}
		}
	}
}
