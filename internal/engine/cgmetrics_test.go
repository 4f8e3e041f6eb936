package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/meridian-gslb/meridian/internal/answer"
	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/cgmetrics"
)

// cgSeries gathers CoreDNS-GSLB's series of e alone, by "name{label=value,...}".
func cgSeries(t *testing.T, e *Engine) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	m := cgmetrics.NewMember(e.health.CheckStats)
	m.Configure(e.opts.ZoneOrigins(), e.Snapshot)
	reg.MustRegister(cgmetrics.CollectorOf(m))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			out[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return out
}

func TestCoreDNSGSLBSeries(t *testing.T) {
	e, _ := newTestEngine(t, `
records:
  www.example.org.:
    backends:
      - {address: 10.0.0.1, port: 80}
      - {address: 10.0.0.1, port: 8080}
      - {address: 10.0.0.2}
      - {address: 10.0.0.3, enable: false}
`)
	e.opts.CoreDNSGSLBMetrics = true // coredns_gslb_metrics: the answers count
	ask := func() {
		m := new(dns.Msg)
		m.SetQuestion("www.example.org.", dns.TypeA)
		answer.Respond(e.Snapshot(), e.AnswerOptions(), answer.Query{Msg: m})
	}
	ask()
	ask()
	// One of the two backends at 10.0.0.1 is drained, 10.0.0.2 disabled by an override.
	if err := e.SetOverrides(map[string]catalog.Override{
		"www.example.org.|10.0.0.1|8080": catalog.ForceDisable, "www.example.org.|10.0.0.2|0": catalog.ForceDisable,
	}); err != nil {
		t.Fatal(err)
	}
	// A reload of the zone files keeps the query counts.
	if err := e.Reload(); err != nil {
		t.Fatal(err)
	}
	ask()
	got := cgSeries(t, e)
	for _, c := range []struct {
		series string
		want   float64
	}{
		// The lowest of the two backends at one address: healthy (1) over disabled (2).
		{"gslb_backend_health_status{address=10.0.0.1,name=www.example.org.}", 1},
		{"gslb_backend_health_status{address=10.0.0.2,name=www.example.org.}", 2},
		{"gslb_backend_health_status{address=10.0.0.3,name=www.example.org.}", 2},
		{"gslb_backend_active{name=www.example.org.}", 1},
		{"gslb_record_health_status{name=www.example.org.}", 1},
		{"gslb_record_resolution_total{name=www.example.org.,result=success}", 3},
		// Every enabled backend answers (one priority): 10.0.0.1 on its two ports in the two
		// queries before the overrides and on one port after, 10.0.0.2 before only.
		{"gslb_backend_selected_total{address=10.0.0.1,name=www.example.org.}", 5},
		{"gslb_backend_selected_total{address=10.0.0.2,name=www.example.org.}", 2},
		{"gslb_backend_selected_total{address=10.0.0.3,name=www.example.org.}", 0},
		{"gslb_backends_total{}", 4},
		{"gslb_records_total{}", 1},
		{"gslb_zones_total{}", 1},
		{"gslb_healthchecks_total{}", 0},
	} {
		if v, ok := got[c.series]; !ok || v != c.want {
			t.Errorf("%s = %v (present: %v), want %v", c.series, v, ok, c.want)
		}
	}
}

func TestCoreDNSGSLBMetricsAreOptIn(t *testing.T) {
	for _, on := range []bool{false, true} {
		opts := blockOptions(t, t.TempDir(), "example.org.")
		opts.CoreDNSGSLBMetrics = on
		e := open(t, NewRegistry(), newLoad(), opts)
		if err := e.Start(); err != nil {
			t.Fatal(err)
		}
		fams, err := prometheus.DefaultGatherer.Gather()
		if err != nil {
			t.Fatal(err)
		}
		collected := slices.ContainsFunc(fams, func(f *dto.MetricFamily) bool { return f.GetName() == "gslb_records_total" })
		if got := e.AnswerOptions().Count; collected != on || got != on {
			t.Errorf("coredns_gslb_metrics %v: collected %v, answers counted %v", on, collected, got)
		}
		e.Stop()
	}
}
