// Package scrapeseries makes the series that collectors compute at scrape time, one for each of
// tens of thousands of records or backends, without the copies prometheus.NewConstMetric makes
// (seven allocations a series, its labels copied into pairs of its own): a scrape allocates
// the series of all records or backends at once, their label pairs point at strings that
// outlive the scrape, series may share their labels, and the gauges of 0 and 1 are shared.
package scrapeseries

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// MaxLabels is how many labels a series of Labels can carry.
const MaxLabels = 2

// Labels are the label pairs of one or more series of a scrape.
type Labels struct {
	values [MaxLabels]string
	pairs  [MaxLabels]dto.LabelPair
	ptrs   [MaxLabels]*dto.LabelPair
}

// Set makes l the labels names (in the sorted order the exposition wants; the strings must
// outlive the scrape, a package's table of names) with values, at most MaxLabels of each, and
// returns them as series carry them. l must outlive the scrape too.
func (l *Labels) Set(names []string, values ...string) []*dto.LabelPair {
	for i := range values {
		l.values[i] = values[i]
		l.pairs[i].Name, l.pairs[i].Value = &names[i], &l.values[i]
		l.ptrs[i] = &l.pairs[i]
	}
	return l.ptrs[:len(values)]
}

// Flag is a gauge series of a scrape whose value is 0 or 1.
type Flag struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	on     bool
}

// Set makes f the series of desc with labels (from Labels.Set) and value 1 when on, 0
// otherwise, and returns it.
func (f *Flag) Set(desc *prometheus.Desc, labels []*dto.LabelPair, on bool) *Flag {
	f.desc, f.labels, f.on = desc, labels, on
	return f
}

// Desc implements prometheus.Metric.
func (f *Flag) Desc() *prometheus.Desc { return f.desc }

// Write implements prometheus.Metric. The gauge is one of two that every Flag shares: the
// registry only reads it.
func (f *Flag) Write(out *dto.Metric) error {
	out.Label = f.labels
	out.Gauge = &gauges[0]
	if f.on {
		out.Gauge = &gauges[1]
	}
	return nil
}

// gauges are the gauges of value 0 and 1, which no one writes.
var gauges = [2]dto.Gauge{{Value: &values[0]}, {Value: &values[1]}}

// values are the values of gauges.
var values = [2]float64{0, 1}
