package kubernetes

import (
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// step is one change applied through the API, and what a record's kubernetes backends must
// then be: their addresses and the verdict on them.
type step struct {
	name   string
	apply  func()
	record string
	addrs  []string
	status health.Status
	reason string
}

// run applies each step and waits for its backends and verdicts, logging how long each took.
func (h *harness) run(steps []step) {
	h.t.Helper()
	for _, s := range steps {
		start := time.Now()
		if s.apply != nil {
			s.apply()
		}
		d := h.waitRecord(start, s.record, s.addrs, s.status, s.reason)
		h.t.Logf("%s: %s in %s", s.name, s.record, d.Round(time.Millisecond))
	}
}

// serviceWithEndpoints applies the Service name (of no address) with one EndpointSlice whose
// endpoints have the ready conditions ready.
func serviceWithEndpoints(t *testing.T, kube *testutil.Kube, name string, ready ...bool) {
	kube.Apply(t, testutil.KubeService("shop", name))
	kube.Apply(t, testutil.KubeEndpointSlice("shop", name+"-1", name, ready...))
}

// TestWatcherIngress follows an Ingress: its addresses are its status's, and its health its
// backend Services' for the record's host (policy any), or the Services listed (policy all).
func TestWatcherIngress(t *testing.T) {
	t.Parallel()
	h := newZoneHarness(t, config.KubernetesOptions{}, nil, `records:
  shop.example.org.:
    mode: roundrobin
    kubernetes: {namespace: shop, ingress: web}
  all.example.org.:
    kubernetes: {namespace: shop, ingress: web, services: [a, b], policy: all}
`, nil)
	k := h.kube
	ingress := func(addrs ...string) map[string]any {
		return testutil.KubeIngress("shop", "web", map[string][]string{"shop.example.org": {"a"}, "other.example.org": {"b"}}, addrs...)
	}
	h.run([]step{
		{"an address, both Services ready", func() {
			serviceWithEndpoints(t, k, "a", true)
			serviceWithEndpoints(t, k, "b", true)
			k.Apply(t, ingress())
			k.ApplyStatus(t, ingress("192.0.2.20"))
		}, "shop.example.org.", []string{"192.0.2.20"}, health.Up, "1 ready endpoints of Ingress shop/web"},
		{"the listed Services both count", nil, "all.example.org.", []string{"192.0.2.20"}, health.Up, "2 ready endpoints of Ingress shop/web"},
		{"b not ready: all fails", func() { serviceWithEndpoints(t, k, "b", false) }, "all.example.org.", []string{"192.0.2.20"}, health.Down, "no ready endpoint in the EndpointSlices of shop/b"},
		{"b not ready: the host's Service is a", nil, "shop.example.org.", []string{"192.0.2.20"}, health.Up, "1 ready endpoints"},
		{"a not ready", func() { serviceWithEndpoints(t, k, "a", false) }, "shop.example.org.", []string{"192.0.2.20"}, health.Down, "no ready endpoint in the EndpointSlices of shop/a"},
		{"a second address, IPv6", func() { k.ApplyStatus(t, ingress("192.0.2.20", "2001:db8::20")) }, "shop.example.org.", []string{"192.0.2.20", "2001:db8::20"}, health.Down, "no ready endpoint"},
		{"no address", func() { k.ApplyStatus(t, ingress()) }, "shop.example.org.", nil, 0, ""},
	})
}

// TestWatcherGateway follows a Gateway of the Gateway API (its real CRDs installed): its
// addresses are its status's, and it is healthy while its controller says it is programmed
// and, when Services are listed, while they have ready endpoints.
func TestWatcherGateway(t *testing.T) {
	t.Parallel()
	h := newZoneHarness(t, config.KubernetesOptions{}, nil, `records:
  gw.example.org.:
    kubernetes: {namespace: shop, gateway: gw}
  routed.example.org.:
    kubernetes: {namespace: shop, gateway: gw, services: [a]}
`, func(k *testutil.Kube) { testutil.InstallGatewayAPI(t, k) })
	k := h.kube
	gw := func(programmed bool, addrs ...string) map[string]any {
		return testutil.KubeGatewayProgrammed(testutil.KubeGateway("shop", "gw", addrs...), programmed)
	}
	h.run([]step{
		{"programmed with an address", func() {
			k.Apply(t, testutil.KubeGatewayClass(testutil.KubeGatewayClassName))
			k.Apply(t, gw(true))
			k.ApplyStatus(t, gw(true, "192.0.2.40"))
			serviceWithEndpoints(t, k, "a", true)
		}, "gw.example.org.", []string{"192.0.2.40"}, health.Up, "Gateway shop/gw has an address"},
		{"with a Service", nil, "routed.example.org.", []string{"192.0.2.40"}, health.Up, "1 ready endpoints of Gateway shop/gw"},
		{"the Service not ready", func() { serviceWithEndpoints(t, k, "a", false) }, "routed.example.org.", []string{"192.0.2.40"}, health.Down, "no ready endpoint in the EndpointSlices of shop/a"},
		{"not programmed", func() { k.ApplyStatus(t, gw(false, "192.0.2.40")) }, "gw.example.org.", []string{"192.0.2.40"}, health.Down, "Gateway shop/gw is not programmed (Pending)"},
		{"programmed, both families", func() { k.ApplyStatus(t, gw(true, "192.0.2.40", "2001:db8::40")) }, "gw.example.org.", []string{"192.0.2.40", "2001:db8::40"}, health.Up, "has an address"},
		{"no address", func() { k.ApplyStatus(t, gw(true)) }, "gw.example.org.", nil, 0, ""},
	})
}

// TestWatcherAnnotations puts Services in records by their meridian.io/record annotation:
// into a record of the zone files, next to its backends, and into a record it creates with the
// annotated mode and TTL; a wrong annotation is ignored, and a removed one takes the backends
// away.
func TestWatcherAnnotations(t *testing.T) {
	t.Parallel()
	h := newZoneHarness(t, config.KubernetesOptions{On: true}, nil, `records:
  app.example.org.:
    backends: [{address: 198.51.100.1}]
`, nil)
	k := h.kube
	annotated := func(ann map[string]any, addrs ...string) map[string]any {
		svc := testutil.KubeService("shop", "lb", addrs...)
		svc["metadata"].(map[string]any)["annotations"] = ann
		return svc
	}
	good := map[string]any{AnnotationRecord: "app.example.org., new.example.org, elsewhere.example.com.",
		AnnotationWeight: "3", AnnotationMode: "weighted", AnnotationTTL: "60"}
	h.run([]step{
		{"annotated", func() {
			k.Apply(t, annotated(good))
			k.ApplyStatus(t, annotated(good, "192.0.2.50"))
			k.Apply(t, testutil.KubeEndpointSlice("shop", "lb-1", "lb", true))
		}, "app.example.org.", []string{"192.0.2.50"}, health.Up, "1 ready endpoints of Service shop/lb"},
		{"a record created", nil, "new.example.org.", []string{"192.0.2.50"}, health.Up, "ready endpoints"},
	})
	rec, _ := h.record("app.example.org.")
	if len(rec.Backends) != 2 || rec.Backends[0].Address != "198.51.100.1" || rec.Backends[1].Weight != 3 {
		t.Errorf("app.example.org.: backends %+v, want the static one and the Service with weight 3", rec.Backends)
	}
	if rec, ok := h.record("new.example.org."); !ok || rec.Mode != config.ModeWeighted || rec.TTL != 60 {
		t.Errorf("new.example.org.: %+v, want mode weighted and TTL 60", rec)
	}
	if _, ok := h.record("elsewhere.example.com."); ok {
		t.Error("a record outside the zone was created")
	}
	bad := map[string]any{AnnotationRecord: "app.example.org.", AnnotationWeight: "heavy"}
	h.run([]step{
		{"a wrong weight", func() { k.Apply(t, annotated(bad)) }, "app.example.org.", nil, 0, ""},
	})
	if _, ok := h.record("new.example.org."); ok {
		t.Error("new.example.org. is still served after its annotation went wrong")
	}
	h.run([]step{
		{"right again", func() { k.Apply(t, annotated(good)) }, "new.example.org.", []string{"192.0.2.50"}, health.Up, "ready endpoints"},
		{"not annotated", func() { k.Apply(t, annotated(map[string]any{})) }, "app.example.org.", nil, 0, ""},
	})
}
