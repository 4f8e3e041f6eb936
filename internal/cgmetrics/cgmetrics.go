// Package cgmetrics publishes CoreDNS-GSLB's metrics, with its names and labels, so that its
// Grafana dashboard and its route-health-injection script work against Meridian
// (docs/metrics.md lists them). A block with coredns_gslb_metrics has a Member, a publisher
// that joins the package's collector while it runs; the series are computed at scrape time
// from the members' snapshots and check statistics, the state Meridian's own metrics come
// from. Only the reload counter and the version are kept apart.
package cgmetrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/publish"
)

// Labels follow CoreDNS-GSLB: name is the record, address the backend's address without its
// port, so backends of a record at one address share their series.

var (
	cgReloads = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "gslb_config_reload_total",
		Help: "Reloads of the gslb configuration files, by result (CoreDNS-GSLB's name of coredns_gslb_config_reloads_total).",
	}, []string{"result"})
	cgVersion = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gslb_version_info",
		Help: "The version of Meridian, as the label (always 1).",
	}, []string{"version"})
)

func init() {
	cgReloads.WithLabelValues("success")
	cgReloads.WithLabelValues("failure")
	prometheus.MustRegister(cgCollector)
}

// CountReload counts a reload of the configuration, by result (success or failure).
func CountReload(result string) { cgReloads.WithLabelValues(result).Inc() }

// PublishVersion sets gslb_version_info to version; the binary calls it at start.
func PublishVersion(version string) {
	cgVersion.Reset()
	cgVersion.WithLabelValues(version).Set(1)
}

func cgDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// The descriptions of the series the collector makes.
var (
	cgRecordHealth = cgDesc("gslb_record_health_status",
		"1 when a backend of the record is healthy (enabled and up), 0 when none is.", "name")
	cgRecordHealthFQDN = cgDesc("coredns_gslb_record_health_status",
		"gslb_record_health_status with the record in label fqdn, as CoreDNS-GSLB's route-health-injection script reads it.", "fqdn")
	cgBackendHealth = cgDesc("gslb_backend_health_status",
		"2 when the backend is disabled (configuration or override), 1 when healthy, 0 when not.", "name", "address")
	cgBackendCheck = cgDesc("gslb_backend_healthcheck_status",
		"The last result of the backend's checks of a type: 2 when the backend is disabled, 1 success, 0 failure.", "name", "address", "type")
	cgBackendActive = cgDesc("gslb_backend_active",
		"Healthy backends of the record.", "name")
	cgSelected = cgDesc("gslb_backend_selected_total",
		"Address answers of the record that carried the backend.", "name", "address")
	cgResolutionTime = cgDesc("gslb_record_resolution_duration_seconds",
		"Time the selection of the record's address answers took, by result: success, or fail when fail-closed answered with its rcode.", "name", "result")
	cgResolutions = cgDesc("gslb_record_resolution_total",
		"Address queries of the record, by result: success, or fail when fail-closed answered with its rcode.", "name", "result")
	cgChecks = cgDesc("gslb_healthcheck_total",
		"Health-check results of the backend probed here, by check type and result (success or fail).", "name", "type", "address", "result")
	cgFailures = cgDesc("gslb_healthcheck_failures_total",
		"Failed health checks probed here, by type, address and reason (timeout, connection, protocol, other).", "type", "address", "reason")
	cgDuration = cgDesc("gslb_healthcheck_duration_seconds",
		"Duration of the health checks probed here, by type and address.", "type", "address")
	cgChecksConfigured = cgDesc("gslb_healthchecks_total", "Health checks configured, over every backend.")
	cgBackends         = cgDesc("gslb_backends_total", "Backends configured.")
	cgRecords          = cgDesc("gslb_records_total", "GSLB records configured.")
	cgZones            = cgDesc("gslb_zones_total", "Zones configured.")
)

// cgCollector makes CoreDNS-GSLB's series from the members that run.
var cgCollector = &cgMetrics{}

// cgMetrics is the prometheus.Collector of CoreDNS-GSLB's series: of its members (a set of
// *Member), safe for concurrent use.
type cgMetrics struct{ members sync.Map }

// CollectorOf returns a collector of the series of members alone, for tests and tools that
// gather them into a registry of their own.
func CollectorOf(members ...*Member) prometheus.Collector {
	c := &cgMetrics{}
	for _, m := range members {
		c.members.Store(m, true)
	}
	return c
}

// list returns the members, in no particular order.
func (c *cgMetrics) list() []*Member {
	var out []*Member
	c.members.Range(func(m, _ any) bool {
		out = append(out, m.(*Member))
		return true
	})
	return out
}

// Member is the publisher of one gslb block's series: it joins the collector while it runs.
type Member struct {
	stats func() map[string][]health.CheckStats
	mu    sync.Mutex
	// zones and served are the block's (Configure).
	zones  []string
	served publish.Served
}

var _ publish.Publisher = (*Member)(nil)

// NewMember returns the member of a block whose health manager's check statistics stats
// returns. It is in no scrape until Start.
func NewMember(stats func() map[string][]health.CheckStats) *Member { return &Member{stats: stats} }

// Configure gives the member the block's zones and the snapshot it serves.
func (m *Member) Configure(zones []string, served publish.Served) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.zones, m.served = zones, served
}

// Name implements publish.Publisher.
func (m *Member) Name() string { return "coredns-gslb metrics" }

// Start implements publish.Publisher: the block's series are in every scrape from now on.
func (m *Member) Start() { cgCollector.members.Store(m, true) }

// Stop implements publish.Publisher.
func (m *Member) Stop() { cgCollector.members.Delete(m) }

// Describe implements prometheus.Collector.
func (c *cgMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{cgRecordHealth, cgRecordHealthFQDN, cgBackendHealth, cgBackendCheck,
		cgBackendActive, cgSelected, cgResolutions, cgResolutionTime, cgChecks, cgFailures, cgDuration,
		cgChecksConfigured, cgBackends, cgRecords, cgZones} {
		ch <- d
	}
}

// cgScrape gathers one scrape's series, each label set once: a record that two engines serve
// (during a Corefile reload) is taken from the first.
type cgScrape struct {
	records  map[string]bool
	backends map[string]bool
	zones    map[string]bool
	checks   int
	// gauges keep the lowest value of a label set: a record's backends at one address are
	// healthy only when all are.
	gauges   map[cgKey]float64
	counters map[cgKey]float64
	hists    map[cgKey]*cgHist
}

// cgKey is one series: its description and up to four label values.
type cgKey struct {
	desc   *prometheus.Desc
	labels [4]string
	n      int
}

// cgHist is a histogram being summed.
type cgHist struct {
	count   uint64
	sum     float64
	buckets []uint64 // per bucket, not cumulative
}

func key(desc *prometheus.Desc, labels ...string) cgKey {
	k := cgKey{desc: desc, n: len(labels)}
	copy(k.labels[:], labels)
	return k
}

func (s *cgScrape) gauge(k cgKey, v float64) {
	if old, ok := s.gauges[k]; !ok || v < old {
		s.gauges[k] = v
	}
}

func (s *cgScrape) add(k cgKey, v float64) { s.counters[k] += v }

// hist adds buckets (counts by health.CheckBuckets, not cumulative, then the longer ones) and
// their sum to the histogram k.
func (s *cgScrape) hist(k cgKey, buckets []uint64, sum float64) {
	h := s.hists[k]
	if h == nil {
		h = &cgHist{buckets: make([]uint64, len(buckets))}
		s.hists[k] = h
	}
	for i, n := range buckets {
		h.buckets[i] += n
		h.count += n
	}
	h.sum += sum
}

// Collect implements prometheus.Collector.
func (c *cgMetrics) Collect(ch chan<- prometheus.Metric) {
	members := c.list()
	if len(members) == 0 { // no block asks for them (coredns_gslb_metrics)
		return
	}
	s := &cgScrape{
		records: map[string]bool{}, backends: map[string]bool{}, zones: map[string]bool{},
		gauges: map[cgKey]float64{}, counters: map[cgKey]float64{}, hists: map[cgKey]*cgHist{},
	}
	for _, m := range members {
		m.mu.Lock()
		zones, served := m.zones, m.served
		m.mu.Unlock()
		if served == nil {
			continue
		}
		if snap := served(); snap != nil {
			for _, z := range zones {
				s.zones[z] = true
			}
			s.engine(snap, m.stats())
		}
	}
	s.emit(ch)
}

// engine adds the series of one engine's snapshot and check stats.
func (s *cgScrape) engine(snap *catalog.Snapshot, stats map[string][]health.CheckStats) {
	for _, r := range snap.Records() {
		if s.records[r.Name()] {
			continue
		}
		s.records[r.Name()] = true
		healthy := 0.0
		if r.View().AnyHealthy {
			healthy = 1
		}
		s.gauge(key(cgRecordHealth, r.Name()), healthy)
		s.gauge(key(cgRecordHealthFQDN, r.Name()), healthy)
		ok, failed := r.Answers()
		s.add(key(cgResolutions, r.Name(), "success"), float64(ok))
		s.add(key(cgResolutions, r.Name(), "fail"), float64(failed))
		for result, f := range map[string]bool{"success": false, "fail": true} {
			buckets, secs := r.Resolutions(f)
			s.hist(key(cgResolutionTime, r.Name(), result), buckets, secs)
		}
		active := 0.0
		for _, b := range r.Backends {
			bkey := b.Key()
			active += s.backend(r, b, bkey, stats[bkey])
		}
		s.gauge(key(cgBackendActive, r.Name()), active)
	}
}

// backend adds the series of one backend of record r, whose key is bkey, and returns 1 when it
// is healthy.
func (s *cgScrape) backend(r *catalog.Record, b *catalog.Backend, bkey string, stats []health.CheckStats) float64 {
	name := r.Name()
	s.backends[bkey] = true
	s.checks += len(b.Config.Checks().HealthChecks)
	addr := b.Config.Address
	state, healthy := 0.0, 0.0
	switch {
	case !b.Enabled():
		state = 2
	case b.Healthy():
		state, healthy = 1, 1
	}
	s.gauge(key(cgBackendHealth, name, addr), state)
	s.add(key(cgSelected, name, addr), float64(r.Selected(b)))
	for _, st := range stats {
		if !st.Checked {
			continue
		}
		check := 0.0
		switch {
		case !b.Enabled():
			check = 2
		case st.LastOK:
			check = 1
		}
		s.gauge(key(cgBackendCheck, name, addr, st.Type), check)
		if st.Success > 0 {
			s.add(key(cgChecks, name, st.Type, addr, "success"), float64(st.Success))
		}
		if st.Failure > 0 {
			s.add(key(cgChecks, name, st.Type, addr, "fail"), float64(st.Failure))
		}
		for i, n := range st.Reasons {
			if n > 0 {
				s.add(key(cgFailures, st.Type, addr, health.CheckReasons[i]), float64(n))
			}
		}
		s.hist(key(cgDuration, st.Type, addr), st.Buckets[:], st.Seconds)
	}
	return healthy
}

// emit sends the scrape's series.
func (s *cgScrape) emit(ch chan<- prometheus.Metric) {
	for k, v := range s.gauges {
		ch <- prometheus.MustNewConstMetric(k.desc, prometheus.GaugeValue, v, k.labels[:k.n]...)
	}
	for k, v := range s.counters {
		ch <- prometheus.MustNewConstMetric(k.desc, prometheus.CounterValue, v, k.labels[:k.n]...)
	}
	bounds := health.CheckBuckets()
	for k, h := range s.hists {
		cumulative := make(map[float64]uint64, len(bounds))
		var total uint64
		for i, le := range bounds {
			total += h.buckets[i]
			cumulative[le] = total
		}
		ch <- prometheus.MustNewConstHistogram(k.desc, h.count, h.sum, cumulative, k.labels[:k.n]...)
	}
	for desc, v := range map[*prometheus.Desc]int{cgChecksConfigured: s.checks, cgBackends: len(s.backends), cgRecords: len(s.records), cgZones: len(s.zones)} {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(v))
	}
}
