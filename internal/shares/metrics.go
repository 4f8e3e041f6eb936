package shares

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/config"
)

// The traffic metrics, read from the running keepers' records when Prometheus scrapes.
var (
	answersDesc = desc("traffic_answers_total", "Answers that carried the backend, counted with traffic_shares.", "record", "backend")
	secondsDesc = desc("traffic_ttl_seconds_total", "The traffic each backend brings in, as the answers say: the TTLs of the answers that carried it, summed.", "record", "backend")
	countryDesc = desc("traffic_country_ttl_seconds_total", "The same by client country, for the records whose selection looks the client up (the geo modes).", "record", "backend", "country")
	configDesc  = desc("traffic_share_configured", "The share of its record's traffic (of its address family) the backend's weight gives it among the enabled backends.", "record", "backend")
	actualDesc  = desc("traffic_share", "The share of its record's traffic (of its address family) the backend got over the last five minutes; absent without traffic.", "record", "backend")
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(config.MetricsNamespace, config.MetricsSubsystem, name), help, labels, nil)
}

// collect is the collector of the traffic metrics: each running keeper joins it.
var collect = &trafficMetrics{}

func init() { prometheus.MustRegister(collect) }

// trafficMetrics reads the traffic of the keepers that run.
type trafficMetrics struct{ keepers sync.Map }

// Describe implements prometheus.Collector.
func (c *trafficMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{answersDesc, secondsDesc, countryDesc, configDesc, actualDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *trafficMetrics) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	c.keepers.Range(func(key, _ any) bool {
		k := key.(*Keeper)
		k.mu.Lock()
		snap := k.served
		k.mu.Unlock()
		if snap == nil || snap() == nil {
			return true
		}
		for _, r := range snap().Records() {
			for _, b := range r.Backends {
				if n := r.Selected(b); n > 0 {
					ch <- prometheus.MustNewConstMetric(answersDesc, prometheus.CounterValue, float64(n), r.Name(), backendName(b))
					ch <- prometheus.MustNewConstMetric(secondsDesc, prometheus.CounterValue, float64(r.Traffic(b)), r.Name(), backendName(b))
				}
			}
		}
		for _, rec := range k.Shares(now) {
			for _, s := range rec.Backends {
				ch <- prometheus.MustNewConstMetric(configDesc, prometheus.GaugeValue, s.Configured, rec.Name, s.Backend)
				if s.Actual >= 0 {
					ch <- prometheus.MustNewConstMetric(actualDesc, prometheus.GaugeValue, s.Actual, rec.Name, s.Backend)
				}
			}
			names := map[string]string{}
			for _, s := range rec.Backends {
				names[s.Key] = s.Backend
			}
			for _, co := range rec.Countries {
				for key, seconds := range co.Backends {
					ch <- prometheus.MustNewConstMetric(countryDesc, prometheus.CounterValue, float64(seconds), rec.Name, names[key], co.Country)
				}
			}
		}
		return true
	})
}
