package overlay

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/meridian-gslb/meridian/internal/config"
)

// overridesGauge counts the overrides in effect, in the default registry that CoreDNS's
// prometheus plugin serves.
var overridesGauge = promauto.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "overrides",
	Help: "Backend overrides in effect, by action (enable, disable, drain, force-up); a scheduled drain counts as a drain before it starts.",
}, []string{"action"})

func init() {
	publish(nil)
}

// publish sets the overrides gauge from the overrides of a store.
func publish(byKey map[string]Override) {
	counts := map[Action]int{Enable: 0, Disable: 0, Drain: 0, ForceUp: 0}
	for _, o := range byKey {
		if o.IsShift() {
			continue // not a backend's: the shifts count themselves
		}
		counts[o.Action]++
	}
	for a, n := range counts {
		overridesGauge.WithLabelValues(string(a)).Set(float64(n))
	}
}
