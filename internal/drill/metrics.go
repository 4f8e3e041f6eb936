package drill

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/meridian-gslb/meridian/internal/config"
)

// The drills' metrics, in the default registry that CoreDNS's prometheus plugin serves, by
// drill; a drill's series go when it leaves the configuration.
var (
	drillFailed = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "drill_failed",
		Help: "1 when the last run of a drill failed (a record would answer from its fallback, fall below its drain guard or miss its failover target), 0 when it passed.",
	}, []string{"drill"})
	drillRecordsFailing = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "drill_records_failing",
		Help: "Records that failed the last run of a drill.",
	}, []string{"drill"})
	drillLastRun = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "drill_last_run_timestamp_seconds",
		Help: "Unix time of the last run of a drill.",
	}, []string{"drill"})
)

// record sets the metrics of a drill's report.
func record(rep Report) {
	failing := 0
	for _, r := range rep.Records {
		if len(r.Failures) > 0 {
			failing++
		}
	}
	failed := 0.0
	if rep.Failed {
		failed = 1
	}
	drillFailed.WithLabelValues(rep.Drill).Set(failed)
	drillRecordsFailing.WithLabelValues(rep.Drill).Set(float64(failing))
	drillLastRun.WithLabelValues(rep.Drill).Set(float64(rep.Time.UnixNano()) / 1e9)
}

// forget deletes the series of a drill that left the configuration.
func forget(name string) {
	drillFailed.DeleteLabelValues(name)
	drillRecordsFailing.DeleteLabelValues(name)
	drillLastRun.DeleteLabelValues(name)
}
