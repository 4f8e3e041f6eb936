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

// TestBackendHealthySeriesOfManyRecords checks the labels and values of the series of
// backends of several records, the record's label shared by the consecutive backends of one
// record, and whether a record that comes back after another keeps its name.
func TestBackendHealthySeriesOfManyRecords(t *testing.T) {
	tests := []struct {
		record, backend string
		status          Status
		want            float64 // -1: no series
	}{
		{"a.example.org.", "10.0.0.1", Up, 1},
		{"a.example.org.", "10.0.0.2", Down, 0},
		{"b.example.org.", "10.0.0.1", Unknown, -1},
		{"b.example.org.", "10.0.0.3", Stale, 0},
		{"a.example.org.", "10.0.0.9", Up, 1},
		{"c.example.org.", "10.0.0.4", Up, 1},
	}
	specs := make([]Spec, len(tests))
	for i, tt := range tests {
		key := tt.record + "|" + tt.backend
		specs[i] = spec(key, &scriptedProber{}, key, time.Hour)
		specs[i].Record, specs[i].Backend = tt.record, tt.backend
	}
	m := NewManager(Options{Log: testLog{}})
	m.Sync(specs, keys(specs...))
	m.mu.Lock()
	for i, b := range m.backends {
		b.status = tests[i].status
	}
	m.mu.Unlock()
	backendHealthy.add(m) // as Start does, without probing
	defer backendHealthy.remove(m)
	got := healthyGauges(t)
	n := 0
	for _, tt := range tests {
		v, ok := got[tt.record+" "+tt.backend]
		switch {
		case tt.want < 0 && ok:
			t.Errorf("%s %s (%s) has a series", tt.record, tt.backend, tt.status)
		case tt.want >= 0 && (!ok || v != tt.want):
			t.Errorf("%s %s (%s) = %v (present %v), want %v", tt.record, tt.backend, tt.status, v, ok, tt.want)
		}
		if tt.want >= 0 {
			n++
		}
	}
	if len(got) != n {
		t.Errorf("series %v, want %d", got, n)
	}
}
