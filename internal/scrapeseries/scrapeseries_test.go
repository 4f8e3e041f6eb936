package scrapeseries

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

var (
	upDesc   = prometheus.NewDesc("test_up", "Up.", []string{"record", "backend"}, nil)
	slowDesc = prometheus.NewDesc("test_slow", "Slow.", []string{"record", "backend"}, nil)
	names    = []string{"backend", "record"}
)

// collector makes two series a backend, which share the backend's labels.
type collector struct{ backends [][2]string }

func (c collector) Describe(ch chan<- *prometheus.Desc) { ch <- upDesc; ch <- slowDesc }

func (c collector) Collect(ch chan<- prometheus.Metric) {
	type series struct {
		labels   Labels
		up, slow Flag
	}
	all := make([]series, len(c.backends))
	for i, b := range c.backends {
		s := &all[i]
		labels := s.labels.Set(names, b[1], b[0])
		ch <- s.up.Set(upDesc, labels, i%2 == 0)
		ch <- s.slow.Set(slowDesc, labels, i%2 == 1)
	}
}

// TestFlagsAreScrapedWithTheirLabels: the series carry their own labels and values through a
// registry's scrape, the series that share labels each carry them, and a second scrape says the
// same (the shared gauges are not changed).
func TestFlagsAreScrapedWithTheirLabels(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collector{backends: [][2]string{{"a.example.", "192.0.2.1"}, {"b.example.", "192.0.2.2"}}})
	want := `
# HELP test_slow Slow.
# TYPE test_slow gauge
test_slow{backend="192.0.2.1",record="a.example."} 0
test_slow{backend="192.0.2.2",record="b.example."} 1
# HELP test_up Up.
# TYPE test_up gauge
test_up{backend="192.0.2.1",record="a.example."} 1
test_up{backend="192.0.2.2",record="b.example."} 0
`
	for scrape := range 2 {
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
			t.Fatalf("scrape %d: %v", scrape, err)
		}
	}
}
