package health

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/meridian-gslb/meridian/internal/health/probe"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	dto "github.com/prometheus/client_model/go"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/scrapeseries"
)

// Health metrics, in CoreDNS's namespace and the gslb subsystem, in the default registry.
var (
	checksTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "healthcheck_total",
		Help: "Health-check probes run, by check type and result (success or failure).",
	}, []string{"type", "result"})
	checkDuration = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "healthcheck_duration_seconds",
		Help:    "Duration of health-check probes, retries included, by check type.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"type"})
	failuresTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "healthcheck_failures_total",
		Help: "Failed health-check probes, by check type and reason class (timeout, refused, reset, unreachable, tls, status, mismatch, other).",
	}, []string{"type", "reason"})
	skippedTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "healthcheck_skipped_total",
		Help: "Probe cycles skipped, by check type and cause: the previous probe still running, or the in-flight limit reached.",
	}, []string{"type", "cause"})
	backendsByState = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "backends",
		Help: "Probed backends by health state (up, down, unknown).",
	}, []string{"state"})
	transitionsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "backend_transitions_total",
		Help: "Health state changes of probed backends, by the state entered (each is also logged with its backend and reason).",
	}, []string{"to"})
)

func observeProbe(pm *probeMetrics, res probe.Result, d time.Duration) {
	pm.duration().Observe(d.Seconds())
	if res.OK {
		pm.counter(&pm.success, checksTotal, "success").Inc()
		return
	}
	pm.counter(&pm.failure, checksTotal, "failure").Inc()
	class := reasonClassIndex(res.Reason)
	pm.counter(&pm.failures[class], failuresTotal, reasonClasses[class]).Inc()
}

// probeMetrics are the series of one check type, resolved on first use: looking series up by
// their label values hashes the labels every time, thousands of times a second.
type probeMetrics struct {
	typ      string
	observer atomic.Pointer[prometheus.Observer]
	success  atomic.Pointer[prometheus.Counter]
	failure  atomic.Pointer[prometheus.Counter]
	failures [len(reasonClasses)]atomic.Pointer[prometheus.Counter]
}

// probeMetricsByType holds the probeMetrics of each check type.
var probeMetricsByType sync.Map // string -> *probeMetrics

// probeMetricsFor returns the series of check type typ.
func probeMetricsFor(typ string) *probeMetrics {
	if pm, ok := probeMetricsByType.Load(typ); ok {
		return pm.(*probeMetrics)
	}
	pm, _ := probeMetricsByType.LoadOrStore(typ, &probeMetrics{typ: typ})
	return pm.(*probeMetrics)
}

func (pm *probeMetrics) duration() prometheus.Observer {
	if o := pm.observer.Load(); o != nil {
		return *o
	}
	o := checkDuration.WithLabelValues(pm.typ)
	pm.observer.Store(&o)
	return o
}

// counter returns the series of vec for the type and label, resolved once into slot.
func (pm *probeMetrics) counter(slot *atomic.Pointer[prometheus.Counter], vec *prometheus.CounterVec, label string) prometheus.Counter {
	if c := slot.Load(); c != nil {
		return *c
	}
	c := vec.WithLabelValues(pm.typ, label)
	slot.Store(&c)
	return c
}

// reasonClasses are the label values of failures by reason; reasonClassIndex picks one.
var reasonClasses = [...]string{"mismatch", "status", "timeout", "refused", "reset", "unreachable", "tls", "other"}

// reasonClassWords map words of a failure reason (lower case) to their reasonClasses index.
// Order matters: a body mismatch is not a status, "dns rcode REFUSED" is no refused connection,
// and "grpc unavailable: ... connection refused" is one.
var reasonClassWords = []struct {
	word  string
	class int
}{
	{"match", 0}, {"rcode", 1},
	{"timeout", 2}, {"timed out", 2}, {"deadline", 2}, {"no reply", 2},
	{"refused", 3}, {"reset", 4}, {"unreachable", 5}, {"no route", 5},
	{"tls", 6}, {"x509", 6}, {"certificate", 6},
	{"http ", 1}, {"grpc ", 1}, {"exit status", 1},
}

// reasonClass maps a failure reason to a small, fixed set of label values.
func reasonClass(reason string) string { return reasonClasses[reasonClassIndex(reason)] }

func reasonClassIndex(reason string) int {
	r := reason
	if strings.ContainsFunc(r, unicode.IsUpper) {
		r = strings.ToLower(r)
	}
	for _, w := range reasonClassWords {
		if strings.Contains(r, w.word) {
			return w.class
		}
	}
	return len(reasonClasses) - 1 // other
}

func init() {
	for _, s := range []Status{Unknown, Up, Down, Stale} {
		backendsByState.WithLabelValues(s.String())
		transitionsTotal.WithLabelValues(s.String())
	}
}

// recordTransition updates the state gauges of a backend and counts the transition.
func recordTransition(from, to Status) {
	backendsByState.WithLabelValues(from.String()).Dec()
	backendsByState.WithLabelValues(to.String()).Inc()
	transitionsTotal.WithLabelValues(to.String()).Inc()
}

// stateCounts are changes of the counts of backends by state, added to the gauges at once:
// a Sync of hundreds of thousands of backends would otherwise look a series up for each.
type stateCounts [Stale + 1]float64

// add adds c to the gauges of backends by state.
func (c *stateCounts) add() {
	for st, n := range c {
		if n != 0 {
			backendsByState.WithLabelValues(Status(st).String()).Add(n)
		}
	}
}

// backendHealthy exports coredns_gslb_backend_healthy{record, backend}: 1 for a probed backend
// that is up, 0 for one that is down, no series while it is unknown. The series are made at
// scrape time from the running managers' backends rather than kept in a GaugeVec: at 30,000
// backends the kept label pairs cost about 10 MB, and series of removed backends cannot
// linger.
var backendHealthy = &healthyCollector{
	desc: prometheus.NewDesc("coredns_gslb_backend_healthy",
		"1 when a probed backend is up, 0 when it is down; no series while it is unknown.",
		[]string{"record", "backend"}, nil),
	managers: make(map[*Manager]bool),
}

func init() { prometheus.MustRegister(backendHealthy) }

// healthyCollector is the prometheus.Collector of backend_healthy over the running managers.
type healthyCollector struct {
	desc     *prometheus.Desc
	mu       sync.Mutex
	managers map[*Manager]bool
}

// add and remove start and end a manager's share of the series.
func (c *healthyCollector) add(m *Manager) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.managers[m] = true
}

func (c *healthyCollector) remove(m *Manager) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.managers, m)
}

// Describe implements prometheus.Collector.
func (c *healthyCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector. A backend that two managers probe (during a reload
// that replaced a block's manager) is reported once.
func (c *healthyCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	managers := slices.Collect(maps.Keys(c.managers))
	c.mu.Unlock()
	var seen map[[2]string]bool // only needed with two managers: 30,000 keys weigh megabytes
	if len(managers) > 1 {
		seen = make(map[[2]string]bool)
	}
	for _, m := range managers {
		series := m.healthySeries()
		for i := range series {
			s := &series[i]
			if seen != nil {
				labels := [2]string{*s.labels[1].Value, s.backend}
				if seen[labels] {
					continue
				}
				seen[labels] = true
			}
			ch <- s
		}
	}
}

// healthyMetric is one backend_healthy series of a scrape: a prometheus.Metric whose label
// pairs point at its own backend value and its record's pair, which the backends of one record
// share. A scrape allocates them all at once (96 bytes a series and 72 a record); the
// registry reads them, never writes them (see package scrapeseries).
type healthyMetric struct {
	backend string // the value backendPair points at: the backend's name when scraped
	// backendPair and labels[0] are the backend label; labels[1] is the record's pair.
	backendPair dto.LabelPair
	labels      [2]*dto.LabelPair
	up          bool
}

// healthyRecord is the record label of the series of one record's backends in a scrape.
type healthyRecord struct {
	record string
	pair   dto.LabelPair
}

// Desc implements prometheus.Metric.
func (h *healthyMetric) Desc() *prometheus.Desc { return backendHealthy.desc }

// Write implements prometheus.Metric.
func (h *healthyMetric) Write(out *dto.Metric) error {
	var f scrapeseries.Flag // for its shared gauges of 0 and 1
	return f.Set(backendHealthy.desc, h.labels[:], h.up).Write(out)
}

// healthyLabels are the label names of backend_healthy, in the sorted order the exposition
// wants.
var healthyLabels = [2]string{"backend", "record"}

// healthySeries returns the backend_healthy series of m's backends that have a status, made
// under m's lock (the names they point at are copies: a Sync may rename a backend while the
// scrape reads them). Consecutive backends of one record, as Sync keeps them, share its label.
func (m *Manager) healthySeries() []healthyMetric {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, records := 0, 0
	last := ""
	for _, b := range m.backends {
		if b.status != Unknown {
			if n == 0 || b.record != last {
				records++
				last = b.record
			}
			n++
		}
	}
	series := make([]healthyMetric, 0, n)
	recs := make([]healthyRecord, records)
	ri := -1
	for _, b := range m.backends {
		if b.status == Unknown {
			continue
		}
		if ri < 0 || b.record != recs[ri].record {
			ri++
			rec := &recs[ri]
			rec.record = b.record
			rec.pair.Name, rec.pair.Value = &healthyLabels[1], &rec.record
		}
		series = append(series, healthyMetric{backend: b.name, up: b.status == Up})
		h := &series[len(series)-1]
		h.backendPair.Name, h.backendPair.Value = &healthyLabels[0], &h.backend
		h.labels = [2]*dto.LabelPair{&h.backendPair, &recs[ri].pair}
	}
	return series
}
