package sites

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/exchange"
)

// The sites' metrics, per peer (its address and the site its heartbeat names).
var (
	peerUp = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "site_peer_up",
		Help: "1 while a peer's site is fresh (its heartbeat changed within split_brain_threshold), 0 while it is stale.",
	}, []string{"peer", "site"})
	peerHeartbeatAge = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "site_peer_heartbeat_age_seconds",
		Help: "Seconds since a peer's site's heartbeat last changed, on this site's clock.",
	}, []string{"peer", "site"})
	peerLastExchange = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "site_peer_last_exchange_timestamp_seconds",
		Help: "Unix time of the last successful exchange with a peer.",
	}, []string{"peer", "site"})
	peerTargets = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "site_peer_targets",
		Help: "Targets (addresses in localtargets records) learned from a peer in its last round.",
	}, []string{"peer", "site"})
	peerErrors = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "site_peer_exchange_errors_total",
		Help: "Failed exchanges with a peer, by kind: timeout, network, tsig, refused, servfail, rcode, malformed.",
	}, []string{"peer", "site", "kind"})
)

// publishMetricsLocked sets the per-peer gauges after a round.
func (f *Fleet) publishMetricsLocked(now time.Time) {
	for _, pe := range f.peers {
		if pe.self {
			continue
		}
		labels := prometheus.Labels{"peer": pe.addr, "site": pe.site}
		if !pe.lastAnswer.IsZero() {
			peerLastExchange.With(labels).Set(float64(pe.lastAnswer.UnixNano()) / 1e9)
		}
		peerTargets.With(labels).Set(float64(pe.learned))
		s := f.sites[pe.site]
		if s == nil || !s.heard() {
			peerUp.With(labels).Set(0)
			continue
		}
		up := 1.0
		if f.staleLocked(s, now) {
			up = 0
		}
		peerUp.With(labels).Set(up)
		peerHeartbeatAge.With(labels).Set(now.Sub(s.lastAdvance).Seconds())
	}
}

// countExchangeError counts one failed exchange with pe.
func countExchangeError(pe *peer, kind exchange.ErrorKind) {
	peerErrors.WithLabelValues(pe.addr, pe.site, string(kind)).Inc()
}

// forgetPeerMetrics deletes pe's series, when it goes or its site changes.
func forgetPeerMetrics(pe *peer) {
	labels := prometheus.Labels{"peer": pe.addr, "site": pe.site}
	for _, g := range []*prometheus.GaugeVec{peerUp, peerHeartbeatAge, peerLastExchange, peerTargets} {
		g.Delete(labels)
	}
	peerErrors.DeletePartialMatch(labels)
}
