package engine

import (
	"sync"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/cgmetrics"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/scrapeseries"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The engine's metrics, in the default registry that CoreDNS's prometheus plugin serves.
var (
	reloadsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "config_reloads_total",
		Help: "Reloads of the gslb configuration files, by result (success or failure).",
	}, []string{"result"})
	lastReloadTime = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "config_last_reload_success_timestamp_seconds",
		Help: "Unix time of the last successful load of the gslb configuration.",
	})
	recordsGauge = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "records",
		Help: "GSLB records served by the current configuration.",
	})
)

func init() {
	// Both series exist from the start, so that increase() sees the first failure.
	reloadsTotal.WithLabelValues("success")
	reloadsTotal.WithLabelValues("failure")
}

// The record gauges, computed at scrape time from the snapshots of the engines that serve
// (recordCollector): a gauge per record kept in a GaugeVec took about 770 bytes a record (77
// MB at 100,000 records) and a write at every change of a record's health.
var (
	recordHealthyDesc = prometheus.NewDesc(prometheus.BuildFQName(config.MetricsNamespace, config.MetricsSubsystem, "record_healthy"),
		"1 when a record has a healthy backend, 0 when its fallback policy answers.", []string{"record"}, nil)
	recordDegradedDesc = prometheus.NewDesc(prometheus.BuildFQName(config.MetricsNamespace, config.MetricsSubsystem, "record_degraded"),
		"1 while a record answers other sites' stale targets because none of its backends of that address family is healthy.", []string{"record"}, nil)
	recordFailoverDesc = prometheus.NewDesc(prometheus.BuildFQName(config.MetricsNamespace, config.MetricsSubsystem, "record_failover"),
		"1 while a failover record answers from a worse priority than its best enabled backend's (failover in progress).", []string{"record"}, nil)
)

// engineSet is the engines a collector makes series from; safe for concurrent use.
type engineSet struct {
	mu      sync.Mutex
	engines map[*Engine]bool
}

func (s *engineSet) add(e *Engine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.engines == nil {
		s.engines = make(map[*Engine]bool)
	}
	s.engines[e] = true
}

func (s *engineSet) remove(e *Engine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.engines, e)
}

// list returns the engines of the set, in no particular order.
func (s *engineSet) list() []*Engine {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Engine, 0, len(s.engines))
	for e := range s.engines {
		out = append(out, e)
	}
	return out
}

// recordCollector makes the record gauges of the engines that opened and are not released.
var recordCollector = &recordMetrics{}

func init() { prometheus.MustRegister(recordCollector) }

// recordMetrics is the prometheus.Collector of the record gauges.
type recordMetrics struct{ engineSet }

// Describe implements prometheus.Collector.
func (c *recordMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- recordHealthyDesc
	ch <- recordDegradedDesc
	ch <- recordFailoverDesc
}

// Collect implements prometheus.Collector: each record's gauges from its current view, once
// a name (a record that two engines serve, during a Corefile reload, is taken from one).
func (c *recordMetrics) Collect(ch chan<- prometheus.Metric) {
	seen := map[string]bool{}
	for _, e := range c.list() {
		collectRecords(e.Snapshot(), seen, ch)
	}
}

// collectRecords sends the gauges of the records of snap whose names are not in seen, and
// adds the names to seen. The three series of a record share its label.
func collectRecords(snap *catalog.Snapshot, seen map[string]bool, ch chan<- prometheus.Metric) {
	records := snap.Records()
	metrics := make([]recordMetric, len(records)) // one allocation for the scrape
	for i, r := range records {
		if seen[r.Name()] {
			continue
		}
		seen[r.Name()] = true
		v := r.View()
		m := &metrics[i]
		labels := m.labels.Set(recordLabels, r.Name())
		ch <- m.healthy.Set(recordHealthyDesc, labels, v.AnyHealthy)
		ch <- m.degraded.Set(recordDegradedDesc, labels, v.Degraded[catalog.IPv4] || v.Degraded[catalog.IPv6])
		ch <- m.failover.Set(recordFailoverDesc, labels, v.Failover[catalog.IPv4] || v.Failover[catalog.IPv6])
	}
}

// recordMetric is the series of one record in a scrape (see package scrapeseries).
type recordMetric struct {
	labels                      scrapeseries.Labels
	healthy, degraded, failover scrapeseries.Flag
}

// recordLabels are the label names of the record gauges.
var recordLabels = []string{"record"}

// countReload counts a reload in Meridian's counter and in CoreDNS-GSLB's.
func countReload(result string) {
	reloadsTotal.WithLabelValues(result).Inc()
	cgmetrics.CountReload(result)
}

// heldGauge counts the scheduled drains that the drain guard holds at their start.
var heldGauge = promauto.NewGauge(prometheus.GaugeOpts{
	Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "drains_held",
	Help: "Scheduled drains that started but are held because they would leave a record below its drain guard.",
})
