package cluster

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// Cluster metrics, in CoreDNS's namespace and the gslb subsystem, in the default registry.
// docs/cluster.md documents them. Each client adds its share to the gauges (several gslb blocks,
// or the overlap of a Corefile reload, run several clients).
var (
	connectedGauge = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "cluster_redis_connected",
		Help: "Cluster-mode gslb blocks connected and subscribed to Redis: 1 for one block while Redis is reachable.",
	})
	fallbackGauge = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "cluster_local_fallback",
		Help: "Cluster-mode gslb blocks whose Redis is unreachable, so that they probe every check themselves: 1 for one block while Redis is down.",
	})
	operationsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "cluster_operations_total",
		Help: "Redis operations, by kind: claim (SET NX of a lock), publish (SET and PUBLISH of a result), vote (HSET, PEXPIRE and PUBLISH of a vote), read (GET of a result or HGETALL of a cycle's votes), learned (HSET or HGETALL of when each instance learned a backend's change, for the failover timelines).",
	}, []string{"op"})
	errorsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "cluster_errors_total",
		Help: "Failed Redis operations by kind (claim, publish, vote, read, learned, subscribe), and messages that could not be decoded (decode).",
	}, []string{"op"})
	locksTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "cluster_locks_total",
		Help: "Cycle locks asked for, by result: won (this instance probes) or lost (another does).",
	}, []string{"result"})
	receivedTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "cluster_results_received_total",
		Help: "Results and votes of other instances received, by source: pubsub, key (read at start or after a lost lock), reconcile.",
	}, []string{"source"})
	propagationDelay = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "cluster_propagation_delay_seconds",
		Help:    "Time from the end of another instance's probe to its result being applied here, for results that came by pub/sub.",
		Buckets: []float64{.001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	})
	localProbesTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "cluster_local_probes_total",
		Help: "Lock-mode cycles probed here without a lock, by cause: redis_down, claim_error, no_result (the winner's result did not come in time), queue_full.",
	}, []string{"cause"})
	verdictsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "quorum_verdicts_total",
		Help: "Quorum-mode verdicts taken here, one per check and cycle, by verdict: up, down, unknown (no usable vote).",
	}, []string{"verdict"})
	degradedGauge = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "quorum_degraded_checks",
		Help: "Quorum-mode checks whose newest verdict had fewer fresh voters than redis_min_voters, so that this instance decided them from its own result.",
	})
	isolatedGauge = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "quorum_isolated",
		Help: "1 while this quorum-mode instance failed most of its canaries: its votes count in no verdict and it follows the others'.",
	})
	canariesFailedGauge = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "quorum_canaries_failed",
		Help: "Canaries (redis_canary) that failed in the newest round of this quorum-mode instance.",
	})
)

// Label values.
const (
	opClaim     = "claim"
	opPublish   = "publish"
	opVote      = "vote"
	opRead      = "read"
	opLearned   = "learned"
	opSubscribe = "subscribe"
	opDecode    = "decode"

	sourcePubSub    = "pubsub"
	sourceKey       = "key"
	sourceReconcile = "reconcile"
)

func init() {
	for _, op := range []string{opClaim, opPublish, opVote, opRead, opLearned} {
		operationsTotal.WithLabelValues(op)
		errorsTotal.WithLabelValues(op)
	}
	errorsTotal.WithLabelValues(opSubscribe)
	errorsTotal.WithLabelValues(opDecode)
	for _, r := range []string{"won", "lost"} {
		locksTotal.WithLabelValues(r)
	}
	for _, s := range []string{sourcePubSub, sourceKey, sourceReconcile} {
		receivedTotal.WithLabelValues(s)
	}
	for _, s := range []health.Status{health.Up, health.Down, health.Unknown} {
		verdictsTotal.WithLabelValues(s.String())
	}
}
