package cluster

import (
	"testing"
	"time"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestGaugesFollowTheConnection is not parallel: the gauges are the process's, and the fleet
// tests' clients, which run in parallel, would move them too.
func TestGaugesFollowTheConnection(t *testing.T) {
	connected, fallback := promtest.ToFloat64(connectedGauge), promtest.ToFloat64(fallbackGauge)
	want := func(c, f float64, when string) {
		t.Helper()
		testutil.Eventually(t, 10*time.Second, func() bool {
			return promtest.ToFloat64(connectedGauge) == connected+c && promtest.ToFloat64(fallbackGauge) == fallback+f
		}, "%s: connected %v, fallback %v; want +%v, +%v", when,
			promtest.ToFloat64(connectedGauge)-connected, promtest.ToFloat64(fallbackGauge)-fallback, c, f)
	}
	r := testutil.StartRedis(t)
	b := &fakeBackend{}
	in := startInstance(t, redisOptions(r, config.SyncLock), checkSpec(b, 0))
	want(1, 0, "connected")
	r.Kill()
	want(0, 1, "Redis lost")
	r.Restart(t)
	want(1, 0, "Redis back")
	in.stop()
	want(0, 0, "closed")

	// A client that never reached Redis counts in fallback until it is closed.
	r.Kill()
	down := startInstance(t, redisOptions(r, config.SyncLock))
	want(0, 1, "started without Redis")
	down.stop()
	want(0, 0, "closed without Redis")
}
