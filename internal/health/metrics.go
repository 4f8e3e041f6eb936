package health

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Health metrics, in CoreDNS's namespace and the gslb subsystem, in the default registry.
var (
	checksTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "coredns", Subsystem: "gslb", Name: "healthcheck_total",
		Help: "Health-check probes run, by check type and result (success or failure).",
	}, []string{"type", "result"})
	checkDuration = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "coredns", Subsystem: "gslb", Name: "healthcheck_duration_seconds",
		Help:    "Duration of health-check probes, retries included, by check type.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"type"})
	failuresTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "coredns", Subsystem: "gslb", Name: "healthcheck_failures_total",
		Help: "Failed health-check probes, by check type and reason class (timeout, refused, reset, unreachable, tls, status, mismatch, other).",
	}, []string{"type", "reason"})
	skippedTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "coredns", Subsystem: "gslb", Name: "healthcheck_skipped_total",
		Help: "Probe cycles skipped, by check type and cause: the previous probe still running, or the in-flight limit reached.",
	}, []string{"type", "cause"})
	backendHealthy = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "coredns", Subsystem: "gslb", Name: "backend_healthy",
		Help: "1 when a probed backend is up, 0 when it is down; no series while it is unknown.",
	}, []string{"record", "backend"})
	backendsByState = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "coredns", Subsystem: "gslb", Name: "backends",
		Help: "Probed backends by health state (up, down, unknown).",
	}, []string{"state"})
	transitionsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "coredns", Subsystem: "gslb", Name: "backend_transitions_total",
		Help: "Health state changes of probed backends, by the state entered (each is also logged with its backend and reason).",
	}, []string{"to"})
)

func observeProbe(typ string, res Result, d time.Duration) {
	checkDuration.WithLabelValues(typ).Observe(d.Seconds())
	if res.OK {
		checksTotal.WithLabelValues(typ, "success").Inc()
		return
	}
	checksTotal.WithLabelValues(typ, "failure").Inc()
	failuresTotal.WithLabelValues(typ, reasonClass(res.Reason)).Inc()
}

// reasonClass maps a failure reason to a small, fixed set of label values.
func reasonClass(reason string) string {
	r := strings.ToLower(reason)
	for _, c := range []struct{ word, class string }{
		// Order matters: a body mismatch is not a status, "dns rcode REFUSED" is no refused
		// connection, and "grpc unavailable: ... connection refused" is one.
		{"match", "mismatch"}, {"rcode", "status"},
		{"timeout", "timeout"}, {"timed out", "timeout"}, {"deadline", "timeout"}, {"no reply", "timeout"},
		{"refused", "refused"}, {"reset", "reset"}, {"unreachable", "unreachable"}, {"no route", "unreachable"},
		{"tls", "tls"}, {"x509", "tls"}, {"certificate", "tls"},
		{"http ", "status"}, {"grpc ", "status"}, {"exit status", "status"},
	} {
		if strings.Contains(r, c.word) {
			return c.class
		}
	}
	return "other"
}

func init() {
	for _, s := range []Status{Unknown, Up, Down} {
		backendsByState.WithLabelValues(s.String())
		transitionsTotal.WithLabelValues(s.String())
	}
}

// recordTransition updates the state gauges of a backend and counts the transition.
func recordTransition(spec Spec, from, to Status) {
	setHealthyGauge(spec, to)
	backendsByState.WithLabelValues(from.String()).Dec()
	backendsByState.WithLabelValues(to.String()).Inc()
	transitionsTotal.WithLabelValues(to.String()).Inc()
}

// setHealthyGauge sets the backend's healthy gauge for status st: 1 up, 0 down, and no series
// while the backend is unknown.
func setHealthyGauge(spec Spec, st Status) {
	switch st {
	case Up:
		backendHealthy.WithLabelValues(spec.Record, spec.Backend).Set(1)
	case Down:
		backendHealthy.WithLabelValues(spec.Record, spec.Backend).Set(0)
	default:
		backendHealthy.DeleteLabelValues(spec.Record, spec.Backend)
	}
}

// forgetBackend deletes the series of a backend that is no longer probed. It deletes by exact
// labels: a partial match scans every series, which a reload of thousands of backends can't
// afford.
func forgetBackend(spec Spec, st Status) {
	backendsByState.WithLabelValues(st.String()).Dec()
	backendHealthy.DeleteLabelValues(spec.Record, spec.Backend)
}
