package dnssec

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/meridian-gslb/meridian/internal/config"
)

// The signer's metrics, in the default registry that CoreDNS's prometheus plugin serves
// (docs/metrics.md, "DNSSEC"): two counters, and gauges made at scrape time from the signers
// that run (Track), so that a zone no longer signed leaves no series and a Corefile reload,
// whose new signers run before the old ones stop, leaves no gap.
var (
	signaturesMade = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "dnssec_signatures_total",
		Help: "RRSIGs made, by zone.",
	}, []string{"zone"})
	onDemandTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "dnssec_on_demand_total",
		Help: "Signatures answers needed that were not prepared ahead (the proofs that a name does not exist, rare combinations), by zone and result: hit (in the cache), signed, limited (refused by the sign rate: SERVFAIL).",
	}, []string{"zone", "result"})

	servedOldestDesc = desc("dnssec_signature_oldest_timestamp_seconds",
		"Unix time at which the oldest of the prepared signatures a zone serves was made (its inception is inception_offset earlier).", "zone")
	servedExpiryDesc = desc("dnssec_signature_nearest_expiration_timestamp_seconds",
		"Unix time of the nearest expiration among the prepared signatures a zone serves.", "zone")
	servedCountDesc = desc("dnssec_prepared_rrsets",
		"RRsets a zone serves signed from signatures prepared ahead.", "zone")
	resignDesc = desc("dnssec_last_resign_seconds",
		"How long the last pass that made a zone's due signatures again took.", "zone")
	keyDesc = desc("dnssec_key",
		"1 for each key of a zone in its current state (created, published, active, retired, removed) and role (KSK, ZSK, CSK).",
		"zone", "key_tag", "algorithm", "role", "state")
	nextEventDesc = desc("dnssec_next_key_event_timestamp_seconds",
		"Unix time of a zone's next key timing event (publication, activation, retirement, removal, CDS change); 0 when none is ahead.", "zone")
)

// desc returns the description of the gslb gauge name.
func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(config.MetricsNamespace, config.MetricsSubsystem, name), help, labels, nil)
}

// liveSigners makes the gauges of the signers that run.
var liveSigners = &signerMetrics{signers: map[*Signer]uint64{}}

func init() { prometheus.MustRegister(liveSigners) }

// signerMetrics is the prometheus.Collector of the signers' gauges.
type signerMetrics struct {
	mu      sync.Mutex
	signers map[*Signer]uint64 // by the order they were tracked in
	next    uint64
}

// Track makes s's gauges part of the metrics, until Untrack. Of two signers of one zone (a
// Corefile reload's), the one tracked last is reported.
func (s *Signer) Track() {
	liveSigners.mu.Lock()
	defer liveSigners.mu.Unlock()
	liveSigners.next++
	liveSigners.signers[s] = liveSigners.next
}

// Untrack takes s's gauges out of the metrics.
func (s *Signer) Untrack() {
	liveSigners.mu.Lock()
	defer liveSigners.mu.Unlock()
	delete(liveSigners.signers, s)
}

// Describe implements prometheus.Collector.
func (c *signerMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{servedOldestDesc, servedExpiryDesc, servedCountDesc, resignDesc, keyDesc, nextEventDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: each zone's gauges, from its newest signer.
func (c *signerMetrics) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	newest := map[string]*Signer{}
	for s, n := range c.signers {
		if cur, ok := newest[s.zone]; !ok || c.signers[cur] < n {
			newest[s.zone] = s
		}
	}
	c.mu.Unlock()
	now := time.Now()
	for zone, s := range newest {
		for _, k := range s.keys.keys {
			ch <- prometheus.MustNewConstMetric(keyDesc, prometheus.GaugeValue, 1,
				zone, strconv.Itoa(int(k.Tag)), k.Algorithm(), s.keys.Role(k), string(k.StateAt(now)))
		}
		next := 0.0
		if e := s.keys.NextEvent(now); !e.IsZero() {
			next = float64(e.Unix())
		}
		ch <- prometheus.MustNewConstMetric(nextEventDesc, prometheus.GaugeValue, next, zone)
		st := s.served.Load()
		if st == nil {
			continue
		}
		ch <- prometheus.MustNewConstMetric(servedCountDesc, prometheus.GaugeValue, float64(st.RRsets), zone)
		ch <- prometheus.MustNewConstMetric(resignDesc, prometheus.GaugeValue, st.Took.Seconds(), zone)
		if !st.Oldest.IsZero() {
			ch <- prometheus.MustNewConstMetric(servedOldestDesc, prometheus.GaugeValue, float64(st.Oldest.Unix()), zone)
			ch <- prometheus.MustNewConstMetric(servedExpiryDesc, prometheus.GaugeValue, float64(st.Nearest.Unix()), zone)
		}
	}
}

// ServedStats are what a pass over a zone's prepared signatures found.
type ServedStats struct {
	// Oldest is when the oldest signature was made, Nearest the earliest expiration, RRsets
	// how many RRsets they sign.
	Oldest, Nearest time.Time
	RRsets          int
	// Took is how long the pass took.
	Took time.Duration
}

// Add counts s in the stats.
func (st *ServedStats) Add(s *Signed) {
	if s == nil || len(s.RRSIGs) == 0 {
		return
	}
	st.RRsets++
	if st.Nearest.IsZero() || s.Expires.Before(st.Nearest) {
		st.Nearest = s.Expires
	}
	if st.Oldest.IsZero() || s.Made.Before(st.Oldest) {
		st.Oldest = s.Made
	}
}

// servedStats holds a signer's last ServedStats.
type servedStats = atomic.Pointer[ServedStats]

// ReportServed makes st the signer's served-signature gauges.
func (s *Signer) ReportServed(st ServedStats) { s.served.Store(&st) }
