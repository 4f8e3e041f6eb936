package cluster

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// CoreDNS-GSLB's Redis metrics, made at scrape time from the cluster metrics above:
// gslb_redis_connected is cluster_redis_connected, gslb_redis_errors_total{operation} is
// cluster_errors_total{op}, and gslb_redis_operations_total{operation, result} splits
// cluster_operations_total{op} (every attempt) into result="error" (cluster_errors_total{op})
// and result="success" (the rest).
var (
	cgRedisConnected = prometheus.NewDesc("gslb_redis_connected",
		"Cluster-mode gslb blocks connected to Redis (CoreDNS-GSLB's name of coredns_gslb_cluster_redis_connected).", nil, nil)
	cgRedisErrors = prometheus.NewDesc("gslb_redis_errors_total",
		"Failed Redis operations by operation (CoreDNS-GSLB's name of coredns_gslb_cluster_errors_total).", []string{"operation"}, nil)
	cgRedisOperations = prometheus.NewDesc("gslb_redis_operations_total",
		"Redis operations by operation and result (success or error): coredns_gslb_cluster_operations_total split by coredns_gslb_cluster_errors_total.", []string{"operation", "result"}, nil)
)

func init() { prometheus.MustRegister(cgRedis{}) }

// cgRedis is the prometheus.Collector of CoreDNS-GSLB's Redis series.
type cgRedis struct{}

// Describe implements prometheus.Collector.
func (cgRedis) Describe(ch chan<- *prometheus.Desc) {
	ch <- cgRedisConnected
	ch <- cgRedisErrors
	ch <- cgRedisOperations
}

// Collect implements prometheus.Collector.
func (cgRedis) Collect(ch chan<- prometheus.Metric) {
	var m dto.Metric
	if connectedGauge.Write(&m) == nil {
		ch <- prometheus.MustNewConstMetric(cgRedisConnected, prometheus.GaugeValue, m.GetGauge().GetValue())
	}
	errs := counts(errorsTotal)
	for op, v := range errs {
		ch <- prometheus.MustNewConstMetric(cgRedisErrors, prometheus.CounterValue, v, op)
	}
	for op, v := range counts(operationsTotal) {
		// operations_total counts every attempt, errors_total the failed ones.
		ch <- prometheus.MustNewConstMetric(cgRedisOperations, prometheus.CounterValue, max(v-errs[op], 0), op, "success")
		ch <- prometheus.MustNewConstMetric(cgRedisOperations, prometheus.CounterValue, errs[op], op, "error")
	}
}

// counts returns the values of a counter vector with one label, by label value.
func counts(vec *prometheus.CounterVec) map[string]float64 {
	out := make(map[string]float64)
	ch := make(chan prometheus.Metric, 16)
	go func() {
		vec.Collect(ch)
		close(ch)
	}()
	for metric := range ch {
		var m dto.Metric
		if metric.Write(&m) == nil && len(m.GetLabel()) == 1 {
			out[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	return out
}
