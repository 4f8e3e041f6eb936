package timeline

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/meridian-gslb/meridian/internal/config"
)

// failoverSeconds is the measured failover time of each record, by the state it went to.
var failoverSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
	Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "failover_seconds",
	Help:    "Measured failover time: from the start of the first probe (or report) that found a backend changed to the first answer of its record that followed, by record and the state the backend went to.",
	Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 45, 60, 90, 120, 300, 600},
}, []string{"record", "to"})

// failoverTarget is each record's failover_target, for the records with a timeline.
var failoverTarget = promauto.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "failover_target_seconds",
	Help: "The record's failover_target, beside its measured failover time (records with a target and a measured failover).",
}, []string{"record"})

// observe adds t, answered, to its record's histogram.
func observe(t *Timeline) {
	failoverSeconds.WithLabelValues(t.Record, t.To.String()).Observe(t.Measured().Seconds())
	if t.Target > 0 {
		failoverTarget.WithLabelValues(t.Record).Set(t.Target.Seconds())
	}
}

// forget deletes the series of a record that left the configuration.
func forget(record string) {
	failoverSeconds.DeletePartialMatch(prometheus.Labels{"record": record})
	failoverTarget.DeleteLabelValues(record)
}
