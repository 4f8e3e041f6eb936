package kubernetes

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// gslbObject returns a Gslb of apiVersion in the namespace shop with spec.
func gslbObject(apiVersion, name string, spec map[string]any) map[string]any {
	return map[string]any{"apiVersion": apiVersion, "kind": "Gslb", "metadata": map[string]any{"name": name, "namespace": "shop"}, "spec": spec}
}

// embeddedIngress returns the spec.ingress of a Gslb with a rule for host to the Service app.
func embeddedIngress(host string) map[string]any {
	return testutil.KubeIngress("shop", "unused", map[string][]string{host: {"app"}})["spec"].(map[string]any)
}

// readGslbStatus returns the status the server holds for the Gslb name of group.
func readGslbStatus(t *testing.T, kube *testutil.Kube, group, name string) gslbStatus {
	var obj struct{ Status gslbStatus }
	if err := json.Unmarshal(kube.Get(t, "/apis/"+group+"/v1beta1/namespaces/shop/gslbs/"+name), &obj); err != nil {
		t.Fatal(err)
	}
	return obj.Status
}

// TestWatcherGslb serves k8gb's Gslb resources, applied through a real API server with the
// chart's CRDs, as k8gb would: a record per host, its mode and backends from the strategy
// (this cluster's Ingress, and a placeholder for each other site), the embedded ingress kept as
// an Ingress, and the status written back.
func TestWatcherGslb(t *testing.T) {
	t.Parallel()
	h := newZoneHarness(t, config.KubernetesOptions{K8gb: true, K8gbSites: []string{"eu", "us"}}, nil, `records:
  app.example.org.:
    backends: [{address: 198.51.100.1}]
`, func(k *testutil.Kube) { testutil.InstallGslbCRDs(t, k, "../../../deploy/helm/meridian/crds") })
	h.w.Configure("eu", h.snapshot)
	k := h.kube
	serviceWithEndpoints(t, k, "app", true)
	shared := testutil.KubeIngress("shop", "shared", map[string][]string{"weighted.example.org": {"app"}}, "192.0.2.61")
	labeled := testutil.KubeIngress("shop", "labeled", map[string][]string{"failover.example.org": {"app"}}, "192.0.2.62")
	labeled["metadata"].(map[string]any)["labels"] = map[string]any{"app": "legacy"}
	for _, in := range []map[string]any{shared, labeled} {
		k.Apply(t, in)
		k.ApplyStatus(t, in)
	}
	k.Apply(t, gslbObject("k8gb.io/v1beta1", "rr", map[string]any{"ingress": embeddedIngress("rr.example.org"), "strategy": map[string]any{"type": "roundRobin", "dnsTtlSeconds": 45}}))
	k.Apply(t, gslbObject("k8gb.io/v1beta1", "weighted", map[string]any{"resourceRef": map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "shared"},
		"strategy": map[string]any{"type": "roundRobin", "weight": map[string]any{"eu": 5, "us": 2}}}))
	k.Apply(t, gslbObject("k8gb.io/v1beta1", "selected", map[string]any{"resourceRef": map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "matchLabels": map[string]any{"app": "legacy"}},
		"strategy": map[string]any{"type": "failover", "primaryGeoTag": "us", "splitBrainThresholdSeconds": 300}}))
	k.Apply(t, gslbObject("k8gb.absa.oss/v1beta1", "legacy", map[string]any{"ingress": embeddedIngress("legacy.example.org"), "strategy": map[string]any{"type": "roundRobin", "weight": map[string]any{"eu": 30, "us": 70}}}))
	k.Apply(t, gslbObject("k8gb.io/v1beta1", "geo", map[string]any{"ingress": embeddedIngress("geo.example.org"), "strategy": map[string]any{"type": "geoip"}}))
	k.Apply(t, gslbObject("k8gb.io/v1beta1", "taken", map[string]any{"ingress": embeddedIngress("app.example.org"), "strategy": map[string]any{"type": "roundRobin"}}))

	// Meridian keeps the embedded ingresses as Ingresses; an ingress controller gives them an address.
	for name, addr := range map[string]string{"rr": "192.0.2.60", "geo": "192.0.2.63", "legacy": "192.0.2.64"} {
		testutil.Eventually(t, informerBound, func() bool { return h.w.ingressKnown("shop", name) }, "the Ingress of Gslb %s was not created", name)
		k.ApplyStatus(t, testutil.KubeIngress("shop", name, map[string][]string{name + ".example.org": {"app"}}, addr))
	}
	h.run([]step{
		{"roundRobin", nil, "rr.example.org.", []string{"192.0.2.60"}, health.Up, "1 ready endpoints of Ingress shop/rr"},
		{"weighted", nil, "weighted.example.org.", []string{"192.0.2.61"}, health.Up, "ready endpoints of Ingress shop/shared"},
		{"failover, by labels", nil, "failover.example.org.", []string{"192.0.2.62"}, health.Up, "ready endpoints of Ingress shop/labeled"},
		{"weighted, legacy group", nil, "legacy.example.org.", []string{"192.0.2.64"}, health.Up, "ready endpoints of Ingress shop/legacy"},
		{"geoip", nil, "geo.example.org.", []string{"192.0.2.63"}, health.Up, "ready endpoints of Ingress shop/geo"},
	})
	type backend struct {
		site             string
		priority, weight int
		location         string
	}
	tests := []struct {
		record   string
		mode     config.Mode
		ttl      uint32
		backends []backend
	}{
		{"rr.example.org.", config.ModeRandom, 45, []backend{{"", 0, 1, "eu"}, {"us", 0, 1, ""}}},
		{"weighted.example.org.", config.ModeWeighted, 30, []backend{{"", 0, 5, "eu"}, {"us", 0, 2, ""}}},
		{"failover.example.org.", config.ModeFailover, 30, []backend{{"", 2, 1, "eu"}, {"us", 1, 1, ""}}},
		{"geo.example.org.", config.ModeGeoIP, 30, []backend{{"", 0, 1, "eu"}, {"us", 0, 1, ""}}},
		{"legacy.example.org.", config.ModeWeighted, 30, []backend{{"", 0, 30, "eu"}, {"us", 0, 70, ""}}},
	}
	for _, tt := range tests {
		rec, _ := h.record(tt.record)
		var got []backend
		for _, b := range rec.Backends {
			got = append(got, backend{b.Site(), int(b.Priority), int(b.Weight), b.Labels().Location})
		}
		if rec.Mode != tt.mode || rec.TTL != tt.ttl || !slices.Equal(got, tt.backends) {
			t.Errorf("%s: mode %s TTL %d backends %+v, want %s %d %+v", tt.record, rec.Mode, rec.TTL, got, tt.mode, tt.ttl, tt.backends)
		}
	}
	if rec, _ := h.record("failover.example.org."); rec.Settings().SplitBrainThreshold != 5*time.Minute {
		t.Errorf("failover.example.org.: split-brain threshold %s, want splitBrainThresholdSeconds's 5m", rec.Settings().SplitBrainThreshold)
	}
	if rec, _ := h.record("app.example.org."); len(rec.Backends) != 1 {
		t.Errorf("the Gslb taken changed the zone files' record app.example.org.: %+v", rec.Backends)
	}

	want := gslbStatus{ServiceHealth: map[string]string{"rr.example.org": hostHealthy}, HealthyRecords: map[string][]string{"rr.example.org": {"192.0.2.60"}},
		GeoTag: "eu", Hosts: "rr.example.org", LoadBalancer: gslbLoadBalancer{ExposedIPs: []string{"192.0.2.60"}},
		Servers: []gslbServer{{Host: "rr.example.org", Services: []gslbService{{Namespace: "shop", Name: "app"}}}}}
	testutil.Eventually(t, informerBound+statusInterval, func() bool { return reflect.DeepEqual(readGslbStatus(t, k, "k8gb.io", "rr"), want) },
		"the status of Gslb rr is %+v, want %+v", readGslbStatus(t, k, "k8gb.io", "rr"), want)
	serviceWithEndpoints(t, k, "app", false)
	testutil.Eventually(t, informerBound+statusInterval, func() bool {
		return readGslbStatus(t, k, "k8gb.absa.oss", "legacy").ServiceHealth["legacy.example.org"] == hostUnhealthy
	}, "the legacy Gslb's host is not Unhealthy once its Service has no ready endpoint: %+v", readGslbStatus(t, k, "k8gb.absa.oss", "legacy"))
	// The Gslb whose host the zone files have: its status says how its Ingress is, and that
	// nothing is served for it.
	testutil.Eventually(t, informerBound+statusInterval, func() bool {
		st := readGslbStatus(t, k, "k8gb.io", "taken")
		_, listed := st.HealthyRecords["app.example.org"]
		return st.ServiceHealth["app.example.org"] == hostUnhealthy && !listed
	}, "the status of the Gslb that is not served: %+v", readGslbStatus(t, k, "k8gb.io", "taken"))
}
