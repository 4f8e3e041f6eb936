package kubernetes

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/meridian-gslb/meridian/internal/config"
)

// The Kubernetes source's metrics (docs/metrics.md).
var (
	refreshes = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "kubernetes_refreshes_total",
		Help: "Refreshes of the Kubernetes source: every backend judged again after informer events (coalesced).",
	})
	resourceServed = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "kubernetes_resource_watched",
		Help: "1 once the API server serves a custom resource the Kubernetes source reads (the Gateway API's, Istio's, k8gb's) and it is watched.",
	}, []string{"resource"})
	gslbsServed = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "kubernetes_gslbs",
		Help: "k8gb Gslb resources served by the last merge.",
	})
	statusWrites = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "kubernetes_gslb_status_writes_total",
		Help: "Writes of a Gslb's status (and of the Ingress it embeds), by result: success, failure.",
	}, []string{"result"})
	statusConflicts = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "kubernetes_gslb_status_conflicts_total",
		Help: "Writes of a Gslb's status that met a newer version of the object, read again and retried.",
	})
	istioReads = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "kubernetes_istio_sync_reads_total",
		Help: "Reads of istiod's sync status by the Istio check, by result: success, failure.",
	}, []string{"result"})
)

// result is the label value of an outcome.
func result(err error) string {
	if err != nil {
		return "failure"
	}
	return "success"
}
