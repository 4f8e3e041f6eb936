package engine

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The engine's metrics live in the default registry, which CoreDNS's prometheus plugin serves.
// Metric names share CoreDNS's namespace and the gslb subsystem.
const (
	namespace = "coredns"
	subsystem = "gslb"
)

var (
	reloadsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "config_reloads_total",
		Help: "Reloads of the gslb configuration files, by result (success or failure).",
	}, []string{"result"})
	lastReloadTime = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "config_last_reload_success_timestamp_seconds",
		Help: "Unix time of the last successful load of the gslb configuration.",
	})
	recordsGauge = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "records",
		Help: "GSLB records served by the current configuration.",
	})
)

func init() {
	// Both series exist from the start, so that increase() sees the first failure.
	reloadsTotal.WithLabelValues("success")
	reloadsTotal.WithLabelValues("failure")
}
