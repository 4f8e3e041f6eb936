package canary

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/meridian-gslb/meridian/internal/config"
)

// mismatchGauge is 1 for each mismatch the canaries found in their last round, in the default
// registry that CoreDNS's prometheus plugin serves; a series goes when its mismatch does.
var mismatchGauge = promauto.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "canary_mismatch",
	Help: "1 while a canary finds a mismatch: what a resolver (or a parent server, for the delegation) answers for a name, against this instance, by kind (answer, ttl, ecs, delegation, error).",
}, []string{"target", "name", "ecs", "kind"})

// publishMismatches sets the series of now's mismatches and deletes those of before's gone.
func publishMismatches(before, now map[string]Found) {
	for k, f := range before {
		if _, ok := now[k]; !ok {
			mismatchGauge.DeleteLabelValues(f.Target, f.Name, f.ECS, f.Kind)
		}
	}
	for _, f := range now {
		mismatchGauge.WithLabelValues(f.Target, f.Name, f.ECS, f.Kind).Set(1)
	}
}
