package health

import (
	"context"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/health/probe"
	"github.com/prometheus/client_golang/prometheus"
)

// healthyGauges gathers coredns_gslb_backend_healthy from the default registry, by backend.
func healthyGauges(t *testing.T) map[string]float64 {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "coredns_gslb_backend_healthy" {
			continue
		}
		for _, m := range f.GetMetric() {
			var record, backend string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "record":
					record = l.GetValue()
				case "backend":
					backend = l.GetValue()
				}
			}
			out[record+" "+backend] = m.GetGauge().GetValue()
		}
	}
	return out
}

// blockedProber gives no result until it receives from its channel (or the channel closes).
type blockedProber chan struct{}

func (p blockedProber) Probe(ctx context.Context) probe.Result {
	select {
	case <-p:
	case <-ctx.Done():
	}
	return probe.Fail("released")
}

func TestBackendHealthySeriesFollowTheManagers(t *testing.T) {
	up := &scriptedProber{script: []bool{true}}
	down := &scriptedProber{script: []bool{false}}
	never := blockedProber(make(chan struct{})) // no result until released: unknown
	defer close(never)
	a, b, c := spec("coll-a", up, "coll-check-a", time.Hour), spec("coll-b", down, "coll-check-b", time.Hour), spec("coll-c", never, "coll-check-c", time.Hour)
	c.Checks[0].Timeout = time.Hour
	m := NewManager(Options{Log: testLog{}})
	m.Sync([]Spec{a, b, c}, keys(a, b, c))
	if got := healthyGauges(t); len(got) != 0 {
		t.Fatalf("series before the manager started: %v", got)
	}
	m.Start()
	waitFor(t, "results", func() bool { return m.State("coll-a").Status() == Up && m.State("coll-b").Status() == Down })
	// A second manager probing the same backend (a reload that replaced the manager) must not
	// make the registry fail with a duplicate series.
	m2 := NewManager(Options{Log: testLog{}})
	a2 := spec("coll-a", &scriptedProber{script: []bool{true}}, "coll-check-a", time.Hour)
	m2.Sync([]Spec{a2}, keys(a2))
	m2.Start()
	defer m2.Stop()
	waitFor(t, "the second manager's result", func() bool { return m2.State("coll-a").Status() == Up })

	got := healthyGauges(t)
	want := map[string]float64{"www.example.org. coll-a": 1, "www.example.org. coll-b": 0}
	if len(got) != len(want) || got["www.example.org. coll-a"] != 1 || got["www.example.org. coll-b"] != 0 {
		t.Fatalf("series %v, want %v (none for the unknown backend)", got, want)
	}

	// A backend that is no longer probed has no series; a stopped manager has none.
	m.Sync([]Spec{a}, keys(a))
	if _, ok := healthyGauges(t)["www.example.org. coll-b"]; ok {
		t.Fatal("the removed backend still has a series")
	}
	never <- struct{}{} // let the blocked probe end, or Stop would wait for it
	m.Stop()
	m2.Stop()
	if got := healthyGauges(t); len(got) != 0 {
		t.Fatalf("series after every manager stopped: %v", got)
	}
}
