package kubernetes

import (
	"context"
	"fmt"
	"net"
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

// replica is a stand-in for one istiod replica's /debug/syncz on loopback: it lists only the
// proxy of its own pod, synced or with its routes stale.
type replica struct {
	mu     sync.Mutex
	pod    string
	synced bool
	failed bool // answer 503: the replica cannot be read
}

func (r *replica) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed {
		http.Error(w, "istiod is restarting", http.StatusServiceUnavailable)
		return
	}
	acked := "n3"
	if !r.synced {
		acked = "n2"
	}
	fmt.Fprintf(w, `[{"proxy":%q,"cluster_sent":"n1","cluster_acked":"n1","listener_sent":"n1","listener_acked":"n1","route_sent":"n3","route_acked":%q,"endpoint_sent":"n1","endpoint_acked":"n1"}]`, r.pod, acked)
}

func (r *replica) set(synced bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.synced = synced
}

// TestWatcherIstioReplicas checks that the Istio check reads every istiod replica, found from
// the EndpointSlices of the Service its URL names (istiod.istio-system.svc): each gateway pod
// is judged by the replica it is connected to (each stand-in lists only its own pod), so that
// the gateway is up while both are synced, and down when one replica's pod is not, or a
// replica cannot be read. An EndpointSlice may not hold loopback addresses, so the replicas'
// endpoints are documentation addresses (192.0.2.1, .2) that the check's HTTP client dials on
// the loopback stand-ins instead (127.0.0.1, .2): nothing leaves the machine.
func TestWatcherIstioReplicas(t *testing.T) {
	t.Parallel()
	first, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := first.Addr().(*net.TCPAddr).Port
	second, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", fmt.Sprint(port)))
	if err != nil {
		first.Close()
		t.Skipf("127.0.0.2:%d is taken: %v", port, err)
	}
	replicas := []*replica{{pod: "gw-0.shop", synced: true}, {pod: "gw-1.shop", synced: true}}
	for i, l := range []net.Listener{first, second} {
		srv := &http.Server{Handler: replicas[i], ReadHeaderTimeout: time.Second}
		go func() { _ = srv.Serve(l) }()
		t.Cleanup(func() { srv.Close() })
	}
	loopback := map[string]string{"192.0.2.1": "127.0.0.1", "192.0.2.2": "127.0.0.2"}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, p, err := net.SplitHostPort(addr)
		if err != nil || loopback[host] == "" {
			return nil, fmt.Errorf("the test dials only the replicas, not %s", addr)
		}
		return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(loopback[host], p))
	}
	h := newPreparedHarness(t, config.KubernetesOptions{IstioSyncURL: config.DefaultIstioSyncURL, IstioSyncInterval: 50 * time.Millisecond}, nil, `records:
  gw.example.org.:
    kubernetes: {namespace: shop, service: gw}
`, nil, func(w *Watcher) { w.istio.client.Transport = &http.Transport{DialContext: dial} })
	k := h.kube
	k.Apply(t, testutil.KubeNamespace("istio-system"))
	istiod := testutil.KubeService("istio-system", "istiod")
	istiod["spec"] = map[string]any{"type": "ClusterIP", "selector": map[string]any{"app": "istiod"},
		"ports": []any{map[string]any{"name": "http-monitoring", "port": 15014, "targetPort": port}}}
	k.Apply(t, istiod)
	k.Apply(t, map[string]any{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
		"metadata":    map[string]any{"name": "istiod-1", "namespace": "istio-system", "labels": map[string]any{"kubernetes.io/service-name": "istiod"}},
		"addressType": "IPv4", "ports": []any{map[string]any{"name": "http-monitoring", "port": port, "protocol": "TCP"}},
		"endpoints": []any{
			map[string]any{"addresses": []any{"192.0.2.1"}, "conditions": map[string]any{"ready": true}},
			map[string]any{"addresses": []any{"192.0.2.2"}, "conditions": map[string]any{"ready": true}},
		}})
	gw := testutil.KubeService("shop", "gw", "192.0.2.70")
	gw["spec"].(map[string]any)["selector"] = map[string]any{"istio": "ingressgateway"}
	k.Apply(t, gw)
	k.ApplyStatus(t, gw)
	k.Apply(t, testutil.KubeEndpointSlice("shop", "gw-1", "gw", true, true))
	h.run([]step{
		{"each pod synced with its replica", nil, "gw.example.org.", []string{"192.0.2.70"}, health.Up, "2 ready endpoints of Service shop/gw"},
		{"the second replica's pod stale", func() { replicas[1].set(false) }, "gw.example.org.", []string{"192.0.2.70"}, health.Down, "pod gw-1.shop: RDS STALE"},
		{"synced again, 3 reads later", func() { replicas[1].set(true) }, "gw.example.org.", []string{"192.0.2.70"}, health.Up, "2 ready endpoints of Service shop/gw"},
		{"the second replica failing", func() {
			replicas[1].mu.Lock()
			replicas[1].failed = true
			replicas[1].mu.Unlock()
		}, "gw.example.org.", []string{"192.0.2.70"}, health.Down, "no sync status for pod gw-1.shop (a replica could not be read"},
	})
}
