package cluster

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// cgRedisValues gathers the CoreDNS-GSLB Redis series, by name and label values.
func cgRedisValues(t *testing.T) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(cgRedis{})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			k := f.GetName()
			for _, l := range m.GetLabel() {
				k += " " + l.GetValue()
			}
			out[k] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return out
}

// TestCoreDNSGSLBRedisSeries checks that the Redis series of CoreDNS-GSLB follow the cluster
// counters: operations split into errors and the rest. It changes the package's counters, so
// it does not run in parallel, and compares differences.
func TestCoreDNSGSLBRedisSeries(t *testing.T) {
	before := cgRedisValues(t)
	operationsTotal.WithLabelValues(opClaim).Add(3)
	errorsTotal.WithLabelValues(opClaim).Inc()
	errorsTotal.WithLabelValues(opSubscribe).Inc()
	connectedGauge.Inc()
	defer connectedGauge.Dec()
	after := cgRedisValues(t)
	for _, c := range []struct {
		key  string
		diff float64
	}{
		{"gslb_redis_operations_total claim success", 2},
		{"gslb_redis_operations_total claim error", 1},
		{"gslb_redis_errors_total claim", 1},
		{"gslb_redis_errors_total subscribe", 1},
		{"gslb_redis_operations_total publish success", 0},
		{"gslb_redis_connected", 1},
	} {
		if _, ok := after[c.key]; !ok {
			t.Errorf("no series %s", c.key)
			continue
		}
		if d := after[c.key] - before[c.key]; d != c.diff {
			t.Errorf("%s grew by %v, want %v", c.key, d, c.diff)
		}
	}
}
