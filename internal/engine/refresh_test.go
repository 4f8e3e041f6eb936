package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestRefreshAllViewsEveryRecord refreshes the records of a snapshot built without views, in
// one part and in several at the same time (more records than minRefreshPart): every record
// has its view, with its own backend healthy.
func TestRefreshAllViewsEveryRecord(t *testing.T) {
	for _, n := range []int{10, 3*minRefreshPart + 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var zone strings.Builder
			zone.WriteString("records:\n")
			for i := range n {
				fmt.Fprintf(&zone, "  n%06d.bench.test.: {mode: failover, backends: [{address: 192.0.%d.%d, priority: 1}]}\n", i, i/250%250, i%250+1)
			}
			snap, err := catalog.BuildUnviewed([]*config.Zone{testutil.ParseBenchZone(t, []byte(zone.String()))}, health.NewManager(health.Options{}))
			if err != nil {
				t.Fatal(err)
			}
			refreshAll(snap.Records())
			if len(snap.Records()) != n {
				t.Fatalf("%d records, want %d", len(snap.Records()), n)
			}
			for _, r := range snap.Records() {
				v := r.View()
				if v == nil {
					t.Fatalf("%s has no view", r.Name())
				}
				if h := v.Healthy[catalog.IPv4]; len(h) != 1 || h[0] != r.Backends[0] {
					t.Fatalf("%s: healthy %v, want its backend", r.Name(), h)
				}
			}
		})
	}
}
