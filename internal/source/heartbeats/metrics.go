package heartbeats

import (
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/meridian-gslb/meridian/internal/config"
)

// The heartbeats' metrics.
var (
	updatesTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "heartbeat_updates_total",
		Help: "RFC 2136 updates sent, by zone (local, global, delegation) and result: the answer's rcode (NOERROR, REFUSED, NOTAUTH, ...), timeout, network or tsig.",
	}, []string{"zone", "rcode"})
	recovering = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "heartbeat_recovering_from_rate_limiting",
		Help: "1 while this site dates its heartbeat in the zone (local, global) ahead because its writes failed (self-heal).",
	}, []string{"zone"})
	siteHealthy = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "heartbeat_site_healthy",
		Help: "1 while a site's heartbeat is fresh and lists a healthy address (this site: while it has one).",
	}, []string{"site"})
	regionHealthy = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "heartbeat_region_healthy",
		Help: "1 while a region has a healthy site.",
	}, []string{"region"})
	failover = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "heartbeat_failover_in_progress",
		Help: "1 while this site's region has no healthy site, so that other regions' answer for it.",
	})
	heartbeatAge = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "heartbeat_age_seconds",
		Help: "Age of the newest heartbeat read of a site, or of a region (its freshest site's), on this instance's clock; negative when it is dated ahead.",
	}, []string{"kind", "name"})
)

// countUpdate counts one update of the zone of kind.
func countUpdate(kind string, res outcome) { updatesTotal.WithLabelValues(kind, string(res)).Inc() }

// publishLocked sets the gauges after a round: ownHealthy says whether this site has a
// healthy address.
func (k *Keeper) publishLocked(now time.Time, ownHealthy bool) {
	type region struct {
		healthy bool
		age     float64
	}
	regions := map[string]*region{k.opts.Region: {healthy: ownHealthy, age: math.Inf(1)}}
	note := func(name string, healthy bool, age time.Duration) {
		r := regions[name]
		if r == nil {
			r = &region{age: math.Inf(1)}
			regions[name] = r
		}
		r.healthy = r.healthy || healthy
		r.age = math.Min(r.age, age.Seconds())
	}
	siteHealthy.WithLabelValues(k.site).Set(oneIf(ownHealthy))
	for _, w := range k.writers {
		recovering.WithLabelValues(w.kind).Set(oneIf(w.healing))
		if w.ownOK {
			age := now.Sub(w.own.Time)
			heartbeatAge.WithLabelValues("site", k.site).Set(age.Seconds())
			note(k.opts.Region, ownHealthy, age)
		}
	}
	for name, s := range k.sites {
		if !s.ok {
			continue
		}
		age := now.Sub(s.rec.Time)
		healthy := age <= k.healthyFor(s.kind) && len(s.rec.Up) > 0
		siteHealthy.WithLabelValues(name).Set(oneIf(healthy))
		heartbeatAge.WithLabelValues("site", name).Set(age.Seconds())
		note(s.rec.Region, healthy, age)
	}
	for name, r := range regions {
		regionHealthy.WithLabelValues(name).Set(oneIf(r.healthy))
		if !math.IsInf(r.age, 1) {
			heartbeatAge.WithLabelValues("region", name).Set(r.age)
		}
	}
	failover.Set(oneIf(!regions[k.opts.Region].healthy))
}

// oneIf is 1 for true, 0 for false.
func oneIf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
