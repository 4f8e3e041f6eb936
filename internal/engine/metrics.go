package engine

import (
	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
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
	recordHealthy = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "record_healthy",
		Help: "1 when a record has a healthy backend, 0 when its fallback policy answers.",
	}, []string{"record"})
	recordDegraded = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "record_degraded",
		Help: "1 while a record answers other sites' stale targets because none of its backends of that address family is healthy.",
	}, []string{"record"})
	recordFailover = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "record_failover",
		Help: "1 while a failover record answers from a worse priority than its best enabled backend's (failover in progress).",
	}, []string{"record"})
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

// publishRecordHealth sets the record_healthy, record_degraded and record_failover gauges of
// rec from its current view.
func publishRecordHealth(rec *catalog.Record) {
	v := rec.View()
	recordHealthy.WithLabelValues(rec.Name).Set(oneIf(v.AnyHealthy))
	recordDegraded.WithLabelValues(rec.Name).Set(oneIf(v.Degraded[catalog.IPv4] || v.Degraded[catalog.IPv6]))
	recordFailover.WithLabelValues(rec.Name).Set(oneIf(v.Failover[catalog.IPv4] || v.Failover[catalog.IPv6]))
}

// oneIf is 1 for true, 0 for false.
func oneIf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// forgetRecords deletes the record_healthy series of records that old has and snap has not.
func forgetRecords(old, snap *catalog.Snapshot) {
	if old == nil {
		return
	}
	kept := make(map[string]bool, len(snap.Records()))
	for _, r := range snap.Records() {
		kept[r.Name] = true
	}
	for _, r := range old.Records() {
		if !kept[r.Name] {
			for _, g := range []*prometheus.GaugeVec{recordHealthy, recordDegraded, recordFailover} {
				g.DeleteLabelValues(r.Name)
			}
		}
	}
}
