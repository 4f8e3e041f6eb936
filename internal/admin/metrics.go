package admin

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/meridian-gslb/meridian/internal/config"
)

// refusals counts the requests the API refused before their handler: without valid
// credentials, or with a role that may not make them.
var refusals = promauto.NewCounterVec(prometheus.CounterOpts{
	Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "admin_refusals_total",
	Help: "Admin API requests refused: unauthenticated (no valid credentials) or forbidden (a role that may not make them).",
}, []string{"reason"})

// auditWrites counts the entries of the audit log, by whether they reached the file.
var auditWrites = promauto.NewCounterVec(prometheus.CounterOpts{
	Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "admin_audit_entries_total",
	Help: "Audit log entries, by result: written (synced to the file), failed (kept in memory only, and logged).",
}, []string{"result"})

func init() {
	for _, r := range []string{"unauthenticated", "forbidden"} {
		refusals.WithLabelValues(r)
	}
	for _, r := range []string{"written", "failed"} {
		auditWrites.WithLabelValues(r)
	}
}
