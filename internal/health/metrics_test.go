package health

import (
	"strconv"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/health/probe"
	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

func TestReasonClass(t *testing.T) {
	tests := map[string]string{
		"http 503":                                     "status",
		`http 200, body does not match "ok"`:           "mismatch",
		"dns rcode REFUSED":                            "status",
		"dns rcode NOERROR, expected NXDOMAIN":         "status",
		"connect: connection refused":                  "refused",
		"grpc unavailable: connection refused":         "refused",
		"grpc NOT_SERVING":                             "status",
		"timeout after 5s":                             "timeout",
		"read: connection reset by peer":               "reset",
		"connect: no route to host":                    "unreachable",
		"tls: certificate signed by unknown authority": "tls",
		`tcp: expect "x" not matched`:                  "mismatch",
		"exit status 2":                                "status",
		"icmp: no reply from 192.0.2.1 after 1s":       "timeout",
		"lua: attempt to call a nil value":             "other",
	}
	for reason, want := range tests {
		if got := reasonClass(reason); got != want {
			t.Errorf("reasonClass(%q) = %q, want %q", reason, got, want)
		}
	}
}

func TestObserveProbeCountsByTypeAndReason(t *testing.T) {
	// A type of its own, new in every run (-count): its series start at zero.
	typ := "observe-test-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	pm := probeMetricsFor(typ)
	if probeMetricsFor(typ) != pm {
		t.Fatal("a type's series are resolved twice")
	}
	for _, res := range []probe.Result{probe.Pass("ok"), probe.Fail("timeout after 5s"), probe.Fail("Connect: Connection Refused"), probe.Fail("timeout after 1s")} {
		observeProbe(pm, res, time.Millisecond)
	}
	for _, tc := range []struct {
		c    prometheus.Collector
		want float64
	}{
		{checksTotal.WithLabelValues(typ, "success"), 1},
		{checksTotal.WithLabelValues(typ, "failure"), 3},
		{failuresTotal.WithLabelValues(typ, "timeout"), 2},
		{failuresTotal.WithLabelValues(typ, "refused"), 1},
		{failuresTotal.WithLabelValues(typ, "other"), 0},
	} {
		if got := promtest.ToFloat64(tc.c); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.c.(prometheus.Metric).Desc(), got, tc.want)
		}
	}
	var m dto.Metric
	if err := checkDuration.WithLabelValues(typ).(prometheus.Metric).Write(&m); err != nil || m.GetHistogram().GetSampleCount() != 4 {
		t.Errorf("durations observed: %v (%v)", m.GetHistogram().GetSampleCount(), err)
	}
}
