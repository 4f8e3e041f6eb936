package discovery

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/meridian-gslb/meridian/internal/config"
)

// The discovery metrics, in the default registry that CoreDNS's prometheus plugin serves.
var (
	fetchesTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "discovery_fetches_total",
		Help: "Fetches of records' discovery sources, by record, type and result (success or failure).",
	}, []string{"record", "type", "result"})
	backendsGauge = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "discovery_backends",
		Help: "Backends in the last good set of a record's discovery source.",
	}, []string{"record"})
	lastSuccessGauge = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "discovery_last_success_timestamp_seconds",
		Help: "Unix time of the last successful fetch of a record's discovery source.",
	}, []string{"record"})
)

func result(err error) string {
	if err != nil {
		return "failure"
	}
	return "success"
}

// forgetMetrics drops the series of a record's discovery block that is gone.
func forgetMetrics(record string, typ config.DiscoveryType) {
	fetchesTotal.DeleteLabelValues(record, string(typ), "success")
	fetchesTotal.DeleteLabelValues(record, string(typ), "failure")
	backendsGauge.DeleteLabelValues(record)
	lastSuccessGauge.DeleteLabelValues(record)
}
