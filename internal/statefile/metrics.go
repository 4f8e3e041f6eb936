package statefile

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/meridian-gslb/meridian/internal/config"
)

// The state file's metrics, in the default registry that CoreDNS's prometheus plugin serves.
var (
	writesTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "state_file_writes_total",
		Help: "Writes of the state file, by result (success or failure).",
	}, []string{"result"})
	lastWrite = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "state_file_last_write_success_timestamp_seconds",
		Help: "Unix time of the last successful write of the state file.",
	})
	restored = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "state_file_restored_backends",
		Help: "Probed backends that started at the state file's status rather than unknown, at the last start.",
	})
)

func init() {
	writesTotal.WithLabelValues("success")
	writesTotal.WithLabelValues("failure")
}

// SetRestored sets the number of backends that the last start seeded from a state file.
func SetRestored(n int) { restored.Set(float64(n)) }
