package shift

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/overlay"
)

// The shifts' metrics, in the default registry that CoreDNS's prometheus plugin serves.
var (
	shareGauge = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "shift_share",
		Help: "The share of a shift's weight on its to backends now (0 to 1), by shift, record and state (running, rolled-back, completed).",
	}, []string{"shift", "record", "state"})
	rollbacks = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "shift_rollbacks_total",
		Help: "Shifts rolled back because their signal degraded.",
	})
)

// shareSeries are the series of shareGauge that a controller set last, to delete those of the
// shifts gone.
type shareSeries struct {
	mu     sync.Mutex
	labels map[[3]string]bool
}

// publish sets shareGauge from the shifts of the overrides store's list, and deletes the
// series of those gone or in another state.
func (sh *shareSeries) publish(list []overlay.Override) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := map[[3]string]bool{}
	for _, s := range FromOverrides(list) {
		l := [3]string{s.ID, s.Record, s.State}
		now[l] = true
		shareGauge.WithLabelValues(l[:]...).Set(s.Share())
	}
	for l := range sh.labels {
		if !now[l] {
			shareGauge.DeleteLabelValues(l[:]...)
		}
	}
	sh.labels = now
}
