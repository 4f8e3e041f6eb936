package notify

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/meridian-gslb/meridian/internal/config"
)

// The results of a delivery, the values of the deliveries counter's result label.
const (
	resultDelivered = "delivered"
	resultFailed    = "failed"
	resultDropped   = "dropped"
)

// deliveries counts the webhook deliveries by result, each event once per URL, in the default
// registry that CoreDNS's prometheus plugin serves.
var deliveries = promauto.NewCounterVec(prometheus.CounterOpts{
	Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "webhook_deliveries_total",
	Help: "Webhook events by result, once per URL: delivered (a 2xx answer), failed (every attempt failed, or a 4xx), dropped (the queue was full, or the notifier stopped first).",
}, []string{"result"})

// queueLength is the events waiting in the webhook queues, of every URL.
var queueLength = promauto.NewGauge(prometheus.GaugeOpts{
	Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "webhook_queue_length",
	Help: "Webhook events waiting to be delivered, summed over the URLs.",
})

func init() {
	for _, r := range []string{resultDelivered, resultFailed, resultDropped} {
		deliveries.WithLabelValues(r)
	}
}
