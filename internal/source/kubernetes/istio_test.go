package kubernetes

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/source/istiosync"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// syncz is a stand-in for istiod's /debug/syncz on loopback (no istiod runs here): it answers
// its nth request with the sync status of the pod gw-0.shop that script gives for n (from 1),
// synced or with its routes stale, in istiod's legacy format.
type syncz struct {
	mu     sync.Mutex
	served int
	script func(n int) bool
}

func (s *syncz) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	s.served++
	synced := s.script(s.served)
	s.mu.Unlock()
	route := "n3"
	if !synced {
		route = "n2"
	}
	fmt.Fprintf(w, `[{"cluster_id":"Kubernetes","proxy":"gw-0.shop","cluster_sent":"n1","cluster_acked":"n1","listener_sent":"n1","listener_acked":"n1","route_sent":"n3","route_acked":%q,"endpoint_sent":"n1","endpoint_acked":"n1"}]`, route)
}

func (s *syncz) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served
}

// TestWatcherIstio checks the Istio check on a Service of Istio's ingress gateway: synced at
// the first read, it is up at once; a read that finds its routes stale takes it down at once,
// and it is up again only after istiosync.Recovery synced reads in a row.
func TestWatcherIstio(t *testing.T) {
	t.Parallel()
	status := &syncz{script: func(n int) bool { return n != 2 }}
	srv := httptest.NewServer(status)
	t.Cleanup(srv.Close)
	h := newZoneHarness(t, config.KubernetesOptions{IstioSyncURL: srv.URL + "/debug/syncz", IstioSyncInterval: 50 * time.Millisecond}, nil, `records:
  gw.example.org.:
    kubernetes: {namespace: shop, service: gw}
`, nil)
	h.rep.mu.Lock()
	h.rep.stamp = status.count
	h.rep.mu.Unlock()
	gw := testutil.KubeService("shop", "gw", "192.0.2.70")
	gw["spec"].(map[string]any)["selector"] = map[string]any{"istio": "ingressgateway"}
	h.kube.Apply(t, gw)
	h.kube.ApplyStatus(t, gw)
	h.kube.Apply(t, testutil.KubeEndpointSlice("shop", "gw-1", "gw", true))
	testutil.Eventually(t, 10*time.Second, func() bool { return status.count() > 2+istiosync.Recovery+2 }, "istiod's stand-in was read %d times", status.count())
	h.waitRecord(time.Now(), "gw.example.org.", []string{"192.0.2.70"}, health.Up, "1 ready endpoints of Service shop/gw")

	h.rep.mu.Lock()
	defer h.rep.mu.Unlock()
	var seen []stamped // the changes of the verdict
	for _, r := range h.rep.history {
		if len(seen) == 0 || seen[len(seen)-1].status != r.status {
			seen = append(seen, r)
		}
	}
	// Down before the first read (no endpoint, then not read yet), up after it, down after the
	// second, up only after the fifth.
	want := []struct {
		status   health.Status
		minStamp int
		reason   string
	}{
		{health.Down, 0, "kubernetes: "},
		{health.Up, 1, "ready endpoints"},
		{health.Down, 2, "the istio-proxy of shop/gw: pod gw-0.shop: RDS STALE"},
		{health.Up, 2 + istiosync.Recovery, "ready endpoints"},
	}
	if len(seen) != len(want) {
		t.Fatalf("the verdict changed %d times (%+v), want %d", len(seen), seen, len(want))
	}
	for i, w := range want {
		if seen[i].status != w.status || seen[i].stamp < w.minStamp || !strings.Contains(seen[i].reason, w.reason) {
			t.Errorf("change %d: %v after %d reads (%q), want %v after at least %d reads (%q)", i, seen[i].status, seen[i].stamp, seen[i].reason, w.status, w.minStamp, w.reason)
		}
	}
}
