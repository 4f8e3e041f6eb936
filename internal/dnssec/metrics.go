package dnssec

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/meridian-gslb/meridian/internal/config"
)

// The signer's metrics, in the default registry that CoreDNS's prometheus plugin serves
// (docs/metrics.md, "DNSSEC").
var (
	signaturesMade = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "dnssec_signatures_total",
		Help: "RRSIGs made, by zone.",
	}, []string{"zone"})
	onDemandTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "dnssec_on_demand_total",
		Help: "Signatures answers needed that were not prepared ahead (the proofs that a name does not exist, rare combinations), by zone and result: hit (in the cache), signed, limited (refused by the sign rate: SERVFAIL).",
	}, []string{"zone", "result"})
	servedOldest = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "dnssec_signature_oldest_timestamp_seconds",
		Help: "Unix time at which the oldest of the prepared signatures a zone serves was made (its inception is inception_offset earlier).",
	}, []string{"zone"})
	servedExpiry = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "dnssec_signature_nearest_expiration_timestamp_seconds",
		Help: "Unix time of the nearest expiration among the prepared signatures a zone serves.",
	}, []string{"zone"})
	servedCount = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "dnssec_prepared_rrsets",
		Help: "RRsets a zone serves signed from signatures prepared ahead.",
	}, []string{"zone"})
	resignSeconds = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "dnssec_last_resign_seconds",
		Help: "How long the last pass that made a zone's due signatures again took.",
	}, []string{"zone"})
	keyInfo = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "dnssec_key",
		Help: "1 for each key of a zone in its current state (created, published, active, retired, removed) and role (KSK, ZSK, CSK).",
	}, []string{"zone", "key_tag", "algorithm", "role", "state"})
	nextKeyEvent = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "dnssec_next_key_event_timestamp_seconds",
		Help: "Unix time of a zone's next key timing event (publication, activation, retirement, removal, CDS change); 0 when none is ahead.",
	}, []string{"zone"})
)

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

// keySeries are the label sets of a zone's key series, so that a key whose state changed
// leaves no stale series.
type keySeries struct {
	mu     sync.Mutex
	labels [][]string
}

// ReportKeys sets the key metrics of the signer's zone at now.
func (s *Signer) ReportKeys(now time.Time) {
	s.reportKeys(now)
	next := s.keys.NextEvent(now)
	if next.IsZero() {
		nextKeyEvent.WithLabelValues(s.zone).Set(0)
		return
	}
	nextKeyEvent.WithLabelValues(s.zone).Set(float64(next.Unix()))
}

// reportKeys replaces the zone's key series by one per key in its state at now.
func (s *Signer) reportKeys(now time.Time) {
	s.series.mu.Lock()
	defer s.series.mu.Unlock()
	for _, labels := range s.series.labels {
		keyInfo.DeleteLabelValues(labels...)
	}
	s.series.labels = s.series.labels[:0]
	for _, k := range s.keys.keys {
		labels := []string{s.zone, strconv.Itoa(int(k.Tag)), k.Algorithm(), s.keys.Role(k), string(k.StateAt(now))}
		keyInfo.WithLabelValues(labels...).Set(1)
		s.series.labels = append(s.series.labels, labels)
	}
}

// ReportServed sets the served-signature metrics of the signer's zone from a pass's stats.
func (s *Signer) ReportServed(st ServedStats) {
	if !st.Oldest.IsZero() {
		servedOldest.WithLabelValues(s.zone).Set(float64(st.Oldest.Unix()))
	}
	if !st.Nearest.IsZero() {
		servedExpiry.WithLabelValues(s.zone).Set(float64(st.Nearest.Unix()))
	}
	servedCount.WithLabelValues(s.zone).Set(float64(st.RRsets))
	resignSeconds.WithLabelValues(s.zone).Set(st.Took.Seconds())
}

// Forget deletes the series of the signer's zone: the zone is no longer signed.
func (s *Signer) Forget() {
	s.series.mu.Lock()
	for _, labels := range s.series.labels {
		keyInfo.DeleteLabelValues(labels...)
	}
	s.series.labels = nil
	s.series.mu.Unlock()
	for _, v := range []*prometheus.GaugeVec{servedOldest, servedExpiry, servedCount, resignSeconds, nextKeyEvent} {
		v.DeleteLabelValues(s.zone)
	}
}
