package answerlog

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/meridian-gslb/meridian/internal/config"
)

// entries counts the fast path's answers the answer log took, by what became of them.
var entries = promauto.NewCounterVec(prometheus.CounterOpts{
	Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "answer_log_entries_total",
	Help: "Fast-path answers the answer log sampled, by result: written (handed to the dnstap plugins), dropped (the queue was full, or no dnstap plugin took them).",
}, []string{"result"})

// written and dropped are entries' two series, resolved once.
var (
	written = entries.WithLabelValues("written")
	dropped = entries.WithLabelValues("dropped")
)

func countWritten() { written.Inc() }
func countDropped() { dropped.Inc() }
