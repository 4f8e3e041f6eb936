package kubernetes

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/kubeapi"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// chartCRDs is the chart's directory of k8gb's CRDs.
const chartCRDs = "../../../deploy/helm/meridian/crds"

// withAnnotations returns obj with metadata.annotations ann.
func withAnnotations(obj map[string]any, ann map[string]any) map[string]any {
	obj["metadata"].(map[string]any)["annotations"] = ann
	return obj
}

// gslbRef returns the spec of a Gslb whose resourceRef names kind in apiVersion by name, with
// a roundRobin strategy.
func gslbRef(apiVersion, kind, name string) map[string]any {
	return map[string]any{"resourceRef": map[string]any{"apiVersion": apiVersion, "kind": kind, "name": name},
		"strategy": map[string]any{"type": "roundRobin"}}
}

// meshSetup installs k8gb's, the Gateway API's (experimental channel) and Istio's CRDs.
func meshSetup(t *testing.T) func(*testutil.Kube) {
	return func(k *testutil.Kube) {
		testutil.InstallGslbCRDs(t, k, chartCRDs)
		testutil.InstallGatewayAPIExperimental(t, k)
		testutil.InstallIstioCRDs(t, k)
	}
}

// TestWatcherGslbReferences serves Gslbs whose resourceRef names every kind k8gb serves, in a
// real API server with the Gateway API's and Istio's own CRDs: a LoadBalancer Service (its
// host from k8gb.io/hostname), an Istio VirtualService (the address of its Gateway's
// Service), and the Gateway API's routes (their parent Gateway's address; TCPRoute's and
// UDPRoute's host from k8gb.io/hostname; TLSRoute in each version k8gb reads), and one that
// overrides its addresses with k8gb.io/exposed-ip-addresses. Each follows its kind's signals.
func TestWatcherGslbReferences(t *testing.T) {
	t.Parallel()
	h := newZoneHarness(t, config.KubernetesOptions{K8gb: true}, nil, "records: {}\n", meshSetup(t))
	h.w.Configure("eu", h.snapshot)
	k := h.kube
	serviceWithEndpoints(t, k, "app", true)
	// A LoadBalancer Service, and one that is not.
	lb := testutil.KubeService("shop", "lb", "192.0.2.80")
	k.Apply(t, lb)
	k.ApplyStatus(t, lb)
	k.Apply(t, testutil.KubeEndpointSlice("shop", "lb-1", "lb", true))
	plain := testutil.KubeService("shop", "plain")
	plain["spec"].(map[string]any)["type"] = "ClusterIP"
	k.Apply(t, plain)
	// Istio's ingress gateway: its Service, labeled as the Gateway's selector selects.
	k.Apply(t, testutil.KubeNamespace("istio-ingress"))
	igw := testutil.KubeService("istio-ingress", "istio-ingressgateway", "192.0.2.81")
	igw["metadata"].(map[string]any)["labels"] = map[string]any{"app": "istio-ingressgateway"}
	k.Apply(t, igw)
	k.ApplyStatus(t, igw)
	k.Apply(t, testutil.KubeEndpointSlice("istio-ingress", "igw-1", "istio-ingressgateway", true))
	k.Apply(t, testutil.KubeIstioGateway("istio-ingress", "gw", map[string]any{"app": "istio-ingressgateway"}, "vs.example.org"))
	k.Apply(t, testutil.KubeVirtualService("shop", "vs", map[string]any{"app": "vs"}, "istio-ingress/gw", []string{"vs.example.org"}, "app"))
	// The Gateway API: a programmed Gateway and a route of each kind.
	k.Apply(t, testutil.KubeGatewayClass(testutil.KubeGatewayClassName))
	edge := testutil.KubeGateway("shop", "edge", "192.0.2.82")
	k.Apply(t, edge)
	k.ApplyStatus(t, edge)
	routes := map[string]map[string]any{
		"http":    testutil.KubeRoute("gateway.networking.k8s.io/v1", "HTTPRoute", "shop", "http", "edge", []string{"http.example.org"}, "app"),
		"grpc":    testutil.KubeRoute("gateway.networking.k8s.io/v1", "GRPCRoute", "shop", "grpc", "edge", []string{"grpc.example.org"}, "app"),
		"tls":     testutil.KubeRoute("gateway.networking.k8s.io/v1", "TLSRoute", "shop", "tls", "edge", []string{"tls.example.org"}, "app"),
		"tlsa2":   testutil.KubeRoute("gateway.networking.k8s.io/v1alpha2", "TLSRoute", "shop", "tlsa2", "edge", []string{"tlsa2.example.org"}, "app"),
		"tlsa3":   testutil.KubeRoute("gateway.networking.k8s.io/v1alpha3", "TLSRoute", "shop", "tlsa3", "edge", []string{"tlsa3.example.org"}, "app"),
		"tcp":     testutil.KubeRoute("gateway.networking.k8s.io/v1alpha2", "TCPRoute", "shop", "tcp", "edge", nil, "app"),
		"udp":     testutil.KubeRoute("gateway.networking.k8s.io/v1alpha2", "UDPRoute", "shop", "udp", "edge", nil, "app"),
		"exposed": testutil.KubeRoute("gateway.networking.k8s.io/v1", "HTTPRoute", "shop", "exposed", "edge", []string{"exposed.example.org"}, "app"),
	}
	for _, r := range routes {
		k.Apply(t, r)
	}
	hostname := func(host string) map[string]any { return map[string]any{annotationHostname: host} }
	gslbs := []map[string]any{
		withAnnotations(gslbObject("k8gb.io/v1beta1", "svc", gslbRef("v1", "Service", "lb")), hostname("svc.example.org")),
		withAnnotations(gslbObject("k8gb.io/v1beta1", "notlb", gslbRef("v1", "Service", "plain")), hostname("notlb.example.org")),
		gslbObject("k8gb.io/v1beta1", "nohost", gslbRef("v1", "Service", "lb")),
		gslbObject("k8gb.io/v1beta1", "vs", map[string]any{"resourceRef": map[string]any{"apiVersion": "networking.istio.io/v1", "kind": "VirtualService", "matchLabels": map[string]any{"app": "vs"}},
			"strategy": map[string]any{"type": "failover", "primaryGeoTag": "eu"}}),
		withAnnotations(gslbObject("k8gb.io/v1beta1", "exposed", gslbRef("gateway.networking.k8s.io/v1", "HTTPRoute", "exposed")), map[string]any{annotationExposedIPs: "192.0.2.90,192.0.2.91"}),
	}
	for _, kind := range []struct{ name, apiVersion, kind string }{
		{"http", "gateway.networking.k8s.io/v1", "HTTPRoute"}, {"grpc", "gateway.networking.k8s.io/v1", "GRPCRoute"},
		{"tls", "gateway.networking.k8s.io/v1", "TLSRoute"}, {"tlsa2", "gateway.networking.k8s.io/v1alpha2", "TLSRoute"},
		{"tlsa3", "gateway.networking.k8s.io/v1alpha3", "TLSRoute"},
	} {
		gslbs = append(gslbs, gslbObject("k8gb.io/v1beta1", kind.name, gslbRef(kind.apiVersion, kind.kind, kind.name)))
	}
	gslbs = append(gslbs,
		withAnnotations(gslbObject("k8gb.io/v1beta1", "tcp", gslbRef("gateway.networking.k8s.io/v1alpha2", "TCPRoute", "tcp")), hostname("tcp.example.org")),
		withAnnotations(gslbObject("k8gb.io/v1beta1", "udp", gslbRef("gateway.networking.k8s.io/v1alpha2", "UDPRoute", "udp")), hostname("udp.example.org")))
	for _, g := range gslbs {
		k.Apply(t, g)
	}
	var steps []step
	for _, s := range []struct{ record, addr, reason string }{
		{"svc", "192.0.2.80", "1 ready endpoints of Service shop/lb"},
		{"vs", "192.0.2.81", "1 ready endpoints of VirtualService shop/vs"},
		{"http", "192.0.2.82", "1 ready endpoints of HTTPRoute shop/http"},
		{"grpc", "192.0.2.82", "1 ready endpoints of GRPCRoute shop/grpc"},
		{"tls", "192.0.2.82", "1 ready endpoints of TLSRoute shop/tls"},
		{"tlsa2", "192.0.2.82", "TLSRoute shop/tlsa2"},
		{"tlsa3", "192.0.2.82", "TLSRoute shop/tlsa3"},
		{"tcp", "192.0.2.82", "1 ready endpoints of TCPRoute shop/tcp"},
		{"udp", "192.0.2.82", "1 ready endpoints of UDPRoute shop/udp"},
	} {
		steps = append(steps, step{s.record, nil, s.record + ".example.org.", []string{s.addr}, health.Up, s.reason})
	}
	steps = append(steps,
		step{"exposed addresses", nil, "exposed.example.org.", []string{"192.0.2.90", "192.0.2.91"}, health.Up, "HTTPRoute shop/exposed"},
		step{"the Gateway not programmed", func() { k.ApplyStatus(t, testutil.KubeGatewayProgrammed(edge, false)) }, "http.example.org.", []string{"192.0.2.82"}, health.Down, "HTTPRoute shop/http is of Gateway shop/edge, not programmed (Pending)"},
		step{"the Istio gateway without a ready pod", func() {
			k.Apply(t, testutil.KubeEndpointSlice("istio-ingress", "igw-1", "istio-ingressgateway", false))
		}, "vs.example.org.", []string{"192.0.2.81"}, health.Down, "no ready endpoint in the EndpointSlices of istio-ingress/istio-ingressgateway (the gateway of VirtualService shop/vs)"},
	)
	h.run(steps)
	for _, name := range []string{"notlb.example.org.", "nohost.example.org."} {
		if _, ok := h.record(name); ok {
			t.Errorf("%s is served; the Gslb is one k8gb refuses", name)
		}
	}
	testutil.Eventually(t, informerBound+statusInterval, func() bool {
		st := readGslbStatus(t, k, "k8gb.io", "svc")
		return st.Hosts == "svc.example.org" && st.ServiceHealth["svc.example.org"] == hostHealthy
	}, "the status of the Service's Gslb: %+v", readGslbStatus(t, k, "k8gb.io", "svc"))
	testutil.Eventually(t, informerBound+statusInterval, func() bool {
		return slices.Equal(readGslbStatus(t, k, "k8gb.io", "exposed").LoadBalancer.ExposedIPs, []string{"192.0.2.90", "192.0.2.91"})
	}, "the status of the Gslb with exposed addresses: %+v", readGslbStatus(t, k, "k8gb.io", "exposed"))
}

// TestWatcherK8gbForms serves k8gb's other forms: an Ingress annotated k8gb.io/strategy
// becomes a Gslb (made as k8gb makes it: owned by the Ingress, referencing it; one whose
// annotations are wrong makes none); a legacy Gslb labeled for migration gets its k8gb.io twin
// (which is served, the legacy one not) and lets its Ingress go; a Service annotated with the
// gateway GSLB's gslb.tetrate.io/name joins the record of that name in the zone; and a
// ZoneDelegation adds its zone, with every cluster's name server named as k8gb names it.
func TestWatcherK8gbForms(t *testing.T) {
	t.Parallel()
	h := newZoneHarness(t, config.KubernetesOptions{K8gb: true, K8gbSites: []string{"us"}}, nil, "records: {}\n",
		func(k *testutil.Kube) { testutil.InstallGslbCRDs(t, k, chartCRDs) })
	h.w.Configure("eu", h.snapshot)
	k := h.kube
	serviceWithEndpoints(t, k, "app", true)
	annotated := withAnnotations(testutil.KubeIngress("shop", "web", map[string][]string{"web.example.org": {"app"}}, "192.0.2.70"),
		map[string]any{annotationStrategy: "failover", annotationPrimary: "eu", annotationTTL: "5", annotationExposedIPs: "192.0.2.71"})
	broken := withAnnotations(testutil.KubeIngress("shop", "broken", map[string][]string{"broken.example.org": {"app"}}),
		map[string]any{annotationStrategy: "failover"})
	legacy := gslbObject("k8gb.absa.oss/v1beta1", "old", map[string]any{"ingress": embeddedIngress("old.example.org"),
		"strategy": map[string]any{"type": "failover", "primaryGeoTag": "eu"}})
	legacy["metadata"].(map[string]any)["labels"] = map[string]any{labelMigrationRequested: "true"}
	tetrate := withAnnotations(testutil.KubeService("shop", "edge", "192.0.2.75"), map[string]any{AnnotationTetrate: "edge-internal"})
	for _, obj := range []map[string]any{annotated, broken, legacy, tetrate} {
		k.Apply(t, obj)
	}
	k.ApplyStatus(t, annotated)
	k.ApplyStatus(t, tetrate)
	k.Apply(t, testutil.KubeEndpointSlice("shop", "edge-1", "edge", true))
	k.Apply(t, map[string]any{"apiVersion": "k8gb.io/v1beta1", "kind": "ZoneDelegation", "metadata": map[string]any{"name": "cloud-example-org"},
		"spec": map[string]any{"loadBalancedZone": "cloud.example.org", "parentZone": "example.org", "dnsZoneNegTTL": 10}})
	k.Apply(t, gslbObject("k8gb.io/v1beta1", "deep", map[string]any{"ingress": embeddedIngress("app.cloud.example.org"), "strategy": map[string]any{"type": "roundRobin"}}))

	var made struct {
		Metadata struct {
			Annotations     map[string]string
			OwnerReferences []struct{ Kind, Name string }
		}
		Spec struct {
			ResourceRef struct{ APIVersion, Kind, Name string }
			Ingress     map[string]any
			Strategy    struct {
				Type          string
				PrimaryGeoTag string
				DNSTTLSeconds int `json:"dnsTtlSeconds"`
			}
		}
	}
	read := func(path string) bool {
		if !k.Served(path) {
			return false
		}
		return json.Unmarshal(k.Get(t, path), &made) == nil
	}
	testutil.Eventually(t, informerBound+statusInterval, func() bool { return read("/apis/k8gb.io/v1beta1/namespaces/shop/gslbs/web") },
		"no Gslb was made of the annotated Ingress")
	if o := made.Metadata.OwnerReferences; len(o) != 1 || o[0].Kind != "Ingress" || o[0].Name != "web" ||
		made.Spec.ResourceRef != (struct{ APIVersion, Kind, Name string }{"networking.k8s.io/v1", "Ingress", "web"}) ||
		made.Spec.Strategy.Type != "failover" || made.Spec.Strategy.PrimaryGeoTag != "eu" || made.Spec.Strategy.DNSTTLSeconds != 5 ||
		made.Metadata.Annotations[annotationExposedIPs] != "192.0.2.71" {
		t.Errorf("the Gslb made of the annotated Ingress: %+v", made)
	}
	testutil.Eventually(t, informerBound+statusInterval, func() bool { return read("/apis/k8gb.io/v1beta1/namespaces/shop/gslbs/old") },
		"the legacy Gslb was not migrated")
	if made.Spec.ResourceRef.Name != "old" || made.Spec.ResourceRef.Kind != "Ingress" || len(made.Spec.Ingress) != 0 {
		t.Errorf("the migrated Gslb: %+v, want a reference to the legacy one's Ingress", made.Spec)
	}
	testutil.Eventually(t, informerBound+statusInterval, func() bool {
		var old struct {
			Metadata struct{ Labels map[string]string }
		}
		_ = json.Unmarshal(k.Get(t, "/apis/k8gb.absa.oss/v1beta1/namespaces/shop/gslbs/old"), &old)
		var ing struct {
			Metadata struct{ OwnerReferences []struct{ APIVersion string } }
		}
		_ = json.Unmarshal(k.Get(t, "/apis/networking.k8s.io/v1/namespaces/shop/ingresses/old"), &ing)
		return old.Metadata.Labels[labelMigrated] == "true" && !slices.ContainsFunc(ing.Metadata.OwnerReferences, func(o struct{ APIVersion string }) bool {
			return strings.HasPrefix(o.APIVersion, legacyGroup)
		})
	}, "the legacy Gslb is not labeled migrated, or still owns its Ingress")
	if k.Served("/apis/k8gb.io/v1beta1/namespaces/shop/gslbs/broken") {
		t.Error("a Gslb was made of an Ingress whose failover has no primary geo tag")
	}
	h.run([]step{
		{"the annotated Ingress's Gslb", nil, "web.example.org.", []string{"192.0.2.71"}, health.Up, "ready endpoints of Ingress shop/web"},
		{"the gateway GSLB's annotation", nil, "edge-internal.example.org.", []string{"192.0.2.75"}, health.Up, "ready endpoints of Service shop/edge"},
	})
	testutil.Eventually(t, informerBound, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, z := range h.zones {
			if z.Origin == "cloud.example.org." {
				return slices.Equal(z.NS, []string{"gslb-ns-eu-cloud.example.org.", "gslb-ns-us-cloud.example.org."}) && z.SOA.Minimum == 10 &&
					slices.ContainsFunc(z.Records, func(r config.Record) bool { return r.Name == "app.cloud.example.org." })
			}
		}
		return false
	}, "the kubeapi.ZoneDelegation's zone is not served with its name servers and the Gslb's host")
	if zds := h.w.ZoneDelegations(); len(zds) != 1 || zds[0] != (kubeapi.ZoneDelegation{Name: "cloud-example-org", Zone: "cloud.example.org.", Parent: "example.org.", NegTTL: 10}) {
		t.Errorf("ZoneDelegations() = %+v", zds)
	}
	if rec, ok := h.record("old.example.org."); !ok || rec.Mode != config.ModeFailover || len(rec.Backends) == 0 || rec.Backends[0].Pos.File() != "Gslb shop/old" {
		t.Errorf("old.example.org.: %+v, %v; want the migrated Gslb's record", rec, ok)
	}
}

// TestGslbDefinitions applies k8gb's own cases of valid and broken objects to a real API
// server holding the chart's definitions: the server accepts what k8gb's definitions accept and
// refuses what they refuse.
func TestGslbDefinitions(t *testing.T) {
	t.Parallel()
	k := testutil.StartKube(t)
	k.Apply(t, testutil.KubeNamespace("shop"))
	testutil.InstallGslbCRDs(t, k, chartCRDs)
	rule := func(host string, http any) map[string]any {
		r := map[string]any{"host": host}
		if http != nil {
			r["http"] = http
		}
		return r
	}
	paths := map[string]any{"paths": []any{map[string]any{"path": "/", "pathType": "Prefix",
		"backend": map[string]any{"service": map[string]any{"name": "app", "port": map[string]any{"name": "http"}}}}}}
	failover := map[string]any{"type": "failover", "primaryGeoTag": "eu"}
	tests := []struct {
		name string
		obj  map[string]any
		ok   bool
	}{
		{"embedded", gslbObject("k8gb.io/v1beta1", "a", map[string]any{"ingress": map[string]any{"rules": []any{rule("a.example.org", paths)}}, "strategy": failover}), true},
		{"a rule without http", gslbObject("k8gb.io/v1beta1", "b", map[string]any{"ingress": map[string]any{"rules": []any{rule("b.example.org", nil)}}, "strategy": failover}), false},
		{"https for http", gslbObject("k8gb.io/v1beta1", "c", map[string]any{"ingress": map[string]any{"rules": []any{map[string]any{"host": "c.example.org", "https": paths}}}, "strategy": failover}), false},
		{"a path without pathType", gslbObject("k8gb.io/v1beta1", "d", map[string]any{"ingress": map[string]any{"rules": []any{rule("d.example.org",
			map[string]any{"paths": []any{map[string]any{"path": "/", "backend": map[string]any{"service": map[string]any{"name": "app"}}}}})}}, "strategy": failover}), false},
		{"no strategy", gslbObject("k8gb.io/v1beta1", "e", map[string]any{"resourceRef": map[string]any{"apiVersion": "v1", "kind": "Service", "name": "lb"}}), false},
		{"a strategy without type", gslbObject("k8gb.io/v1beta1", "f", map[string]any{"resourceRef": map[string]any{"name": "x"}, "strategy": map[string]any{"primaryGeoTag": "eu"}}), false},
		{"a string weight", gslbObject("k8gb.io/v1beta1", "g", map[string]any{"resourceRef": map[string]any{"name": "x"}, "strategy": map[string]any{"type": "roundRobin", "weight": map[string]any{"eu": "30%"}}}), false},
		{"an unknown policy", gslbObject("k8gb.io/v1beta1", "h", map[string]any{"resourceRef": map[string]any{"name": "x"}, "strategy": failover, "serviceHealthPolicy": "Most"}), false},
		{"an unknown strategy type (k8gb's definition has no enum)", gslbObject("k8gb.io/v1beta1", "i", map[string]any{"resourceRef": map[string]any{"name": "x"}, "strategy": map[string]any{"type": "nearest"}}), true},
		{"legacy with a resourceRef and weights", gslbObject("k8gb.absa.oss/v1beta1", "j", map[string]any{"resourceRef": map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "matchLabels": map[string]any{"app": "x"}},
			"strategy": map[string]any{"type": "roundRobin", "weight": map[string]any{"eu": 5, "us": 0}}}), true},
		{"legacy with a percentage", gslbObject("k8gb.absa.oss/v1beta1", "k", map[string]any{"resourceRef": map[string]any{"name": "x"}, "strategy": map[string]any{"type": "roundRobin", "weight": map[string]any{"eu": "30%"}}}), false},
		{"a zone delegation", zoneDelegation("cloud.example.com", "example.com"), true},
		{"a zone delegated from itself", zoneDelegation("example.com", "example.com"), false},
		{"a zone delegated from another", zoneDelegation("cloud.example.net", "example.com"), false},
	}
	for _, tt := range tests {
		status, body := k.TryApply(t, tt.obj)
		if ok := status/100 == 2; ok != tt.ok {
			t.Errorf("%s: the API server answered %d (%s), want accepted %v", tt.name, status, body, tt.ok)
		}
	}
}

// zoneDelegation returns the ZoneDelegation of zone, delegated from parent.
func zoneDelegation(zone, parent string) map[string]any {
	return map[string]any{"apiVersion": "k8gb.io/v1beta1", "kind": "ZoneDelegation",
		"metadata": map[string]any{"name": strings.ReplaceAll(zone, ".", "-")},
		"spec":     map[string]any{"loadBalancedZone": zone, "parentZone": parent, "dnsZoneNegTTL": 30}}
}
