package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// k8gbCluster is one cluster of TestK8gbExamples: its API server and the addresses its
// ingress controller, Istio gateway, Gateway API gateway and LoadBalancer Service have.
type k8gbCluster struct {
	name                   string
	kube                   *testutil.Kube
	ingress, istio, gw, lb string
	// exposed is the k8gb.io/exposed-ip-addresses of its TLSRoutes' Gslbs.
	exposed string
}

// k8gbNamespaces are the namespaces of the examples: the static cases, and those whose
// application stops and starts.
var k8gbNamespaces = []string{"k8gb-test", "failover"}

// app returns the Service name of namespace (no address: a ClusterIP one, as k8gb's examples'
// podinfo) with one endpoint, ready or not.
func k8gbApp(namespace, name string, ready bool) []map[string]any {
	svc := testutil.KubeService(namespace, name)
	svc["spec"].(map[string]any)["type"] = "ClusterIP"
	return []map[string]any{svc, testutil.KubeEndpointSlice(namespace, name+"-1", name, ready)}
}

// gslb returns a Gslb of apiVersion in namespace with spec and annotations.
func k8gbGslb(apiVersion, namespace, name string, ann map[string]any, spec map[string]any) map[string]any {
	meta := map[string]any{"name": name, "namespace": namespace}
	if ann != nil {
		meta["annotations"] = ann
	}
	return map[string]any{"apiVersion": apiVersion, "kind": "Gslb", "metadata": meta, "spec": spec}
}

// k8gbRules returns an Ingress spec (also a Gslb's embedded ingress) of one rule a host, each
// to its Service.
func k8gbRules(hosts map[string]string) map[string]any {
	rules := []any{}
	for _, h := range slices.Sorted(maps.Keys(hosts)) {
		rules = append(rules, map[string]any{"host": h, "http": map[string]any{"paths": []any{map[string]any{"path": "/", "pathType": "Prefix",
			"backend": map[string]any{"service": map[string]any{"name": hosts[h], "port": map[string]any{"name": "http"}}}}}}})
	}
	return map[string]any{"ingressClassName": "nginx", "rules": rules}
}

// k8gbIngress returns the Ingress name of namespace with labels, annotations and rules, and
// the address its controller gives it.
func k8gbIngress(namespace, name string, labels, ann map[string]any, hosts map[string]string, addr string) map[string]any {
	meta := map[string]any{"name": name, "namespace": namespace}
	if labels != nil {
		meta["labels"] = labels
	}
	if ann != nil {
		meta["annotations"] = ann
	}
	return map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta, "spec": k8gbRules(hosts),
		"status": map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": addr}}}}}
}

// strategy returns a Gslb's strategy of typ, primary geo tag eu for failover, TTL 5 as k8gb's
// examples have, and weights.
func k8gbStrategy(typ string, weights map[string]any) map[string]any {
	s := map[string]any{"type": typ, "dnsTtlSeconds": 5}
	if typ == "failover" {
		s["primaryGeoTag"] = "eu"
	}
	if weights != nil {
		s["weight"] = weights
	}
	return s
}

// objects returns the objects of k8gb's example and test cases (written anew here, not copied)
// as cluster c has them.
func (c k8gbCluster) objects() []map[string]any {
	const ns = "k8gb-test"
	ref := func(apiVersion, kind, name string) map[string]any {
		return map[string]any{"apiVersion": apiVersion, "kind": kind, "name": name}
	}
	byLabels := func(apiVersion, kind, app string) map[string]any {
		return map[string]any{"apiVersion": apiVersion, "kind": kind, "matchLabels": map[string]any{"app": app}}
	}
	route := func(apiVersion, kind, name string, hosts ...string) map[string]any {
		return testutil.KubeRoute(apiVersion, kind, ns, name, "edge", hosts, "frontend-podinfo")
	}
	primary := "eu"
	if c.name == "us" {
		primary = "us"
	}
	split := k8gbStrategy("failover", nil)
	split["primaryGeoTag"] = primary // each cluster its own primary (k8gb's split failover)
	exposed := map[string]any{"k8gb.io/exposed-ip-addresses": c.exposed}
	lb := testutil.KubeService(ns, "frontend-lb", c.lb)
	objs := []map[string]any{
		// Round robin over three hosts: one healthy, one whose Service has no ready endpoint,
		// one whose Service does not exist.
		k8gbGslb("k8gb.io/v1beta1", ns, "roundrobin", nil, map[string]any{"ingress": k8gbRules(map[string]string{
			"rr-healthy.gslb.example.com": "frontend-podinfo", "rr-unhealthy.gslb.example.com": "unhealthy-app", "rr-notfound.gslb.example.com": "non-existing-app"}),
			"strategy": k8gbStrategy("roundRobin", nil)}),
		// Failover: embedded, referenced by name and by labels, and from annotations.
		k8gbGslb("k8gb.io/v1beta1", ns, "fo-embedded", nil, map[string]any{"ingress": k8gbRules(map[string]string{"fo-embedded.gslb.example.com": "frontend-podinfo"}), "strategy": k8gbStrategy("failover", nil)}),
		k8gbIngress(ns, "fo-ref", nil, nil, map[string]string{"fo-ref.gslb.example.com": "frontend-podinfo"}, c.ingress),
		k8gbGslb("k8gb.io/v1beta1", ns, "fo-ref", nil, map[string]any{"resourceRef": ref("networking.k8s.io/v1", "Ingress", "fo-ref"), "strategy": k8gbStrategy("failover", nil)}),
		k8gbIngress(ns, "fo-labels", map[string]any{"app": "fo-labels"}, nil, map[string]string{"fo-labels.gslb.example.com": "frontend-podinfo"}, c.ingress),
		k8gbGslb("k8gb.io/v1beta1", ns, "fo-labels", nil, map[string]any{"resourceRef": byLabels("networking.k8s.io/v1", "Ingress", "fo-labels"), "strategy": k8gbStrategy("failover", nil)}),
		k8gbIngress(ns, "fo-annotated", nil, map[string]any{"k8gb.io/strategy": "failover", "k8gb.io/primary-geotag": "eu", "k8gb.io/dns-ttl-seconds": "5"},
			map[string]string{"fo-annotated.gslb.example.com": "frontend-podinfo"}, c.ingress),
		k8gbIngress(ns, "broken-annotated", nil, map[string]any{"k8gb.io/strategy": "failover"}, map[string]string{"broken-annotated.gslb.example.com": "frontend-podinfo"}, c.ingress),
		k8gbGslb("k8gb.io/v1beta1", ns, "split", nil, map[string]any{"ingress": k8gbRules(map[string]string{"split.gslb.example.com": "frontend-podinfo"}), "strategy": split}),
		// Weights: equal ones, and a weight of 0, which takes no traffic.
		k8gbIngress(ns, "weighted", map[string]any{"app": "weighted"}, nil, map[string]string{"weighted.gslb.example.com": "frontend-podinfo"}, c.ingress),
		k8gbGslb("k8gb.io/v1beta1", ns, "weighted", nil, map[string]any{"resourceRef": byLabels("networking.k8s.io/v1", "Ingress", "weighted"), "strategy": k8gbStrategy("roundRobin", map[string]any{"eu": 5, "us": 5})}),
		k8gbGslb("k8gb.io/v1beta1", ns, "weight0", nil, map[string]any{"ingress": k8gbRules(map[string]string{"weight0.gslb.example.com": "frontend-podinfo"}), "strategy": k8gbStrategy("roundRobin", map[string]any{"eu": 0, "us": 100})}),
		// The legacy group.
		k8gbGslb("k8gb.absa.oss/v1beta1", ns, "legacy", nil, map[string]any{"ingress": k8gbRules(map[string]string{"legacy.gslb.example.com": "frontend-podinfo"}), "strategy": k8gbStrategy("roundRobin", nil)}),
		// An Istio VirtualService bound to the ingress gateway of istio-ingress.
		testutil.KubeIstioGateway("istio-ingress", "istio-fo", map[string]any{"app": "istio-ingressgateway"}, "istio-fo.gslb.example.com"),
		testutil.KubeVirtualService(ns, "istio-fo", map[string]any{"app": "istio-fo"}, "istio-ingress/istio-fo", []string{"istio-fo.gslb.example.com"}, "frontend-podinfo"),
		k8gbGslb("k8gb.io/v1beta1", ns, "istio-fo", nil, map[string]any{"resourceRef": byLabels("networking.istio.io/v1", "VirtualService", "istio-fo"), "strategy": k8gbStrategy("failover", nil)}),
		// The Gateway API's routes, TLSRoute in each version k8gb reads, with exposed addresses.
		route("gateway.networking.k8s.io/v1", "HTTPRoute", "http-rr", "http-rr.gslb.example.com"),
		k8gbGslb("k8gb.io/v1beta1", ns, "http-rr", nil, map[string]any{"resourceRef": ref("gateway.networking.k8s.io/v1", "HTTPRoute", "http-rr"), "strategy": k8gbStrategy("roundRobin", nil)}),
		route("gateway.networking.k8s.io/v1", "GRPCRoute", "grpc-fo", "grpc-fo.gslb.example.com"),
		k8gbGslb("k8gb.io/v1beta1", ns, "grpc-fo", nil, map[string]any{"resourceRef": ref("gateway.networking.k8s.io/v1", "GRPCRoute", "grpc-fo"), "strategy": k8gbStrategy("failover", nil)}),
		route("gateway.networking.k8s.io/v1alpha2", "TCPRoute", "tcp-fo"),
		k8gbGslb("k8gb.io/v1beta1", ns, "tcp-fo", map[string]any{"k8gb.io/hostname": "tcp-fo.gslb.example.com"}, map[string]any{"resourceRef": ref("gateway.networking.k8s.io/v1alpha2", "TCPRoute", "tcp-fo"), "strategy": k8gbStrategy("failover", nil)}),
		route("gateway.networking.k8s.io/v1alpha2", "UDPRoute", "udp-fo"),
		k8gbGslb("k8gb.io/v1beta1", ns, "udp-fo", map[string]any{"k8gb.io/hostname": "udp-fo.gslb.example.com"}, map[string]any{"resourceRef": ref("gateway.networking.k8s.io/v1alpha2", "UDPRoute", "udp-fo"), "strategy": k8gbStrategy("failover", nil)}),
		// A LoadBalancer Service, in the legacy group, its host from k8gb.io/hostname.
		lb,
		k8gbGslb("k8gb.absa.oss/v1beta1", ns, "lb-svc", map[string]any{"k8gb.io/hostname": "lb-svc.gslb.example.com"}, map[string]any{"resourceRef": ref("v1", "Service", "frontend-lb"), "strategy": k8gbStrategy("failover", nil)}),
		// The application that stops and starts.
		k8gbGslb("k8gb.io/v1beta1", "failover", "lifecycle", nil, map[string]any{"ingress": k8gbRules(map[string]string{"lifecycle.gslb.example.com": "frontend-podinfo"}), "strategy": k8gbStrategy("failover", nil)}),
	}
	for _, v := range []string{"v1", "v1alpha2", "v1alpha3"} {
		name := "tls-" + v
		objs = append(objs, route("gateway.networking.k8s.io/"+v, "TLSRoute", name, name+".gslb.example.com"),
			k8gbGslb("k8gb.io/v1beta1", ns, name, exposed, map[string]any{"resourceRef": ref("gateway.networking.k8s.io/"+v, "TLSRoute", name), "strategy": k8gbStrategy("roundRobin", nil)}))
	}
	return objs
}

// setup starts c's API server with every CRD the examples need, and applies the applications,
// the gateways with their addresses, and the examples.
func (c *k8gbCluster) setup(t *testing.T) {
	c.kube = testutil.StartKube(t)
	k := c.kube
	for _, ns := range append([]string{"istio-ingress"}, k8gbNamespaces...) {
		k.Apply(t, testutil.KubeNamespace(ns))
	}
	testutil.InstallGslbCRDs(t, k, "../../deploy/helm/meridian/crds")
	testutil.InstallGatewayAPIExperimental(t, k)
	testutil.InstallIstioCRDs(t, k)
	for _, ns := range k8gbNamespaces {
		for _, obj := range append(k8gbApp(ns, "frontend-podinfo", true), k8gbApp(ns, "unhealthy-app", false)...) {
			k.Apply(t, obj)
		}
	}
	igw := testutil.KubeService("istio-ingress", "istio-ingressgateway", c.istio)
	igw["metadata"].(map[string]any)["labels"] = map[string]any{"app": "istio-ingressgateway"}
	k.Apply(t, testutil.KubeGatewayClass(testutil.KubeGatewayClassName))
	edge := testutil.KubeGateway("k8gb-test", "edge", c.gw)
	for _, obj := range []map[string]any{igw, edge} {
		k.Apply(t, obj)
		k.ApplyStatus(t, obj)
	}
	k.Apply(t, testutil.KubeEndpointSlice("istio-ingress", "igw-1", "istio-ingressgateway", true))
	k.Apply(t, testutil.KubeEndpointSlice("k8gb-test", "frontend-lb-1", "frontend-lb", true))
	for _, obj := range c.objects() {
		k.Apply(t, obj)
		if _, ok := obj["status"]; ok {
			k.ApplyStatus(t, obj)
		}
	}
}

// k8gbStatusOf is what the tests read of a Gslb's status.
type k8gbStatusOf struct {
	Metadata struct {
		OwnerReferences []struct{ Kind, Name string }
	}
	Spec struct {
		ResourceRef struct{ Kind, Name string }
	}
	Status struct {
		GeoTag         string
		Hosts          string
		ServiceHealth  map[string]string
		HealthyRecords map[string][]string
		LoadBalancer   struct{ ExposedIPs []string }
	}
}

// gslbStatus returns what c's API server holds of the Gslb namespace/name of group.
func (c *k8gbCluster) gslbStatus(t *testing.T, group, namespace, name string) (st k8gbStatusOf, ok bool) {
	path := fmt.Sprintf("/apis/%s/v1beta1/namespaces/%s/gslbs/%s", group, namespace, name)
	if !c.kube.Served(path) {
		return st, false
	}
	return st, json.Unmarshal(c.kube.Get(t, path), &st) == nil
}

// TestK8gbExamples runs the cases of k8gb's own examples and tests (its docs/examples,
// terratest/examples and chainsaw tests, written anew here) against two clusters, eu and us,
// each a real API server with k8gb's, the Gateway API's and Istio's CRDs and a Meridian in
// k8gb's place: every Gslb is answered as k8gb's tests expect, across both clusters, and its
// status says what k8gb's says; when the primary cluster's application stops, both answer the
// other's; when no cluster's is healthy, both answer nothing; and back.
func TestK8gbExamples(t *testing.T) {
	t.Parallel()
	clusters := []*k8gbCluster{
		{name: "eu", ingress: "127.0.7.1", istio: "127.0.7.2", gw: "127.0.7.3", lb: "127.0.7.4", exposed: "192.0.2.91,192.0.2.92"},
		{name: "us", ingress: "127.0.8.1", istio: "127.0.8.2", gw: "127.0.8.3", lb: "127.0.8.4", exposed: "198.51.100.91"},
	}
	for _, c := range clusters {
		c.setup(t)
	}
	procs := startSites(t, siteSetup{names: []string{"eu", "us"}, backends: []string{"", ""},
		yaml:  func(int, []int) string { return "records: {}\n" },
		extra: func(i int) string { return "  kubeconfig " + clusters[i].kube.Kubeconfig(t) + "\n  k8gb eu us\n" }})
	// The ingress controller of each cluster gives the embedded ingresses Meridian keeps their
	// address.
	embedded := map[string]map[string]string{
		"k8gb-test/roundrobin":  {"rr-healthy.gslb.example.com": "frontend-podinfo", "rr-unhealthy.gslb.example.com": "unhealthy-app", "rr-notfound.gslb.example.com": "non-existing-app"},
		"k8gb-test/fo-embedded": {"fo-embedded.gslb.example.com": "frontend-podinfo"}, "k8gb-test/split": {"split.gslb.example.com": "frontend-podinfo"},
		"k8gb-test/weight0": {"weight0.gslb.example.com": "frontend-podinfo"}, "k8gb-test/legacy": {"legacy.gslb.example.com": "frontend-podinfo"},
		"failover/lifecycle": {"lifecycle.gslb.example.com": "frontend-podinfo"},
	}
	for _, c := range clusters {
		for key, hosts := range embedded {
			ns, name, _ := strings.Cut(key, "/")
			path := "/apis/networking.k8s.io/v1/namespaces/" + ns + "/ingresses/" + name
			testutil.Eventually(t, kubeDelayBound, func() bool { return c.kube.Served(path) }, "%s: Meridian did not keep the Ingress %s", c.name, key)
			c.kube.ApplyStatus(t, k8gbIngress(ns, name, nil, nil, hosts, c.ingress))
		}
	}
	budget := kubeDelayBound + siteThreshold + 2*sitePeerInterval + siteMargin
	eu, us := clusters[0], clusters[1]
	nothing := []string{}
	for _, tc := range []struct {
		host string
		want []string
	}{
		{"rr-healthy", []string{eu.ingress, us.ingress}},
		{"rr-unhealthy", nothing},
		{"rr-notfound", nothing},
		{"fo-embedded", []string{eu.ingress}},
		{"fo-ref", []string{eu.ingress}},
		{"fo-labels", []string{eu.ingress}},
		{"fo-annotated", []string{eu.ingress}},
		{"broken-annotated", []string{"NXDOMAIN"}},
		{"legacy", []string{eu.ingress, us.ingress}},
		{"istio-fo", []string{eu.istio}},
		{"http-rr", []string{eu.gw, us.gw}},
		{"grpc-fo", []string{eu.gw}},
		{"tcp-fo", []string{eu.gw}},
		{"udp-fo", []string{eu.gw}},
		{"tls-v1", []string{"192.0.2.91", "192.0.2.92", "198.51.100.91"}},
		{"tls-v1alpha2", []string{"192.0.2.91", "192.0.2.92", "198.51.100.91"}},
		{"tls-v1alpha3", []string{"192.0.2.91", "192.0.2.92", "198.51.100.91"}},
		{"lb-svc", []string{eu.lb}},
		{"weight0", []string{us.ingress}},
		{"lifecycle", []string{eu.ingress}},
	} {
		waitAnswer(t, procs, budget, tc.host+".gslb.example.com.", dns.TypeA, tc.want...)
	}
	// Each cluster its own primary: each answers its own address.
	waitAnswer(t, procs[:1], budget, "split.gslb.example.com.", dns.TypeA, eu.ingress)
	waitAnswer(t, procs[1:], budget, "split.gslb.example.com.", dns.TypeA, us.ingress)
	// Weights: each answer one address, drawn by weight; a weight of 0 never.
	seen := map[string]int{}
	for range 100 {
		for _, a := range procs[0].answer("weighted.gslb.example.com.", dns.TypeA) {
			seen[a]++
		}
		if got := procs[0].answer("weight0.gslb.example.com.", dns.TypeA); !slices.Equal(got, []string{us.ingress}) {
			t.Fatalf("weight0 answered %v: a weight of 0 takes no traffic", got)
		}
	}
	if seen[eu.ingress] < 20 || seen[us.ingress] < 20 || len(seen) != 2 {
		t.Errorf("equal weights: answers %v, want both addresses about as often", seen)
	}

	// The status, as k8gb's tests read it.
	wantStatus := func(c *k8gbCluster, group, ns, name string, check func(k8gbStatusOf) bool) {
		t.Helper()
		testutil.Eventually(t, budget+5*time.Second, func() bool { st, ok := c.gslbStatus(t, group, ns, name); return ok && check(st) },
			"%s: the status of %s %s/%s: %+v", c.name, group, ns, name, func() k8gbStatusOf { st, _ := c.gslbStatus(t, group, ns, name); return st }())
	}
	for _, c := range clusters {
		wantStatus(c, "k8gb.io", "k8gb-test", "roundrobin", func(st k8gbStatusOf) bool {
			h := st.Status.ServiceHealth
			return st.Status.GeoTag == c.name && h["rr-healthy.gslb.example.com"] == "Healthy" && h["rr-unhealthy.gslb.example.com"] == "Unhealthy" && h["rr-notfound.gslb.example.com"] == "NotFound" &&
				slices.Equal(st.Status.HealthyRecords["rr-healthy.gslb.example.com"], []string{eu.ingress, us.ingress}) && len(st.Status.HealthyRecords) == 1
		})
		wantStatus(c, "k8gb.io", "k8gb-test", "fo-annotated", func(st k8gbStatusOf) bool {
			o := st.Metadata.OwnerReferences
			return len(o) == 1 && o[0].Kind == "Ingress" && o[0].Name == "fo-annotated" && st.Spec.ResourceRef.Name == "fo-annotated" && st.Status.ServiceHealth["fo-annotated.gslb.example.com"] == "Healthy"
		})
		wantStatus(c, "k8gb.absa.oss", "k8gb-test", "lb-svc", func(st k8gbStatusOf) bool {
			return st.Status.Hosts == "lb-svc.gslb.example.com" && slices.Equal(st.Status.LoadBalancer.ExposedIPs, []string{c.lb})
		})
		wantStatus(c, "k8gb.io", "k8gb-test", "tls-v1", func(st k8gbStatusOf) bool {
			return slices.Equal(st.Status.LoadBalancer.ExposedIPs, strings.Split(c.exposed, ","))
		})
		if _, ok := c.gslbStatus(t, "k8gb.io", "k8gb-test", "broken-annotated"); ok {
			t.Errorf("%s: a Gslb was made of an Ingress whose failover has no primary geo tag", c.name)
		}
	}
	// k8gb's broken manifests are refused.
	for _, spec := range []map[string]any{
		{"ingress": map[string]any{"rules": []any{map[string]any{"host": "broken.gslb.example.com"}}}, "strategy": k8gbStrategy("failover", nil)},
		{"ingress": map[string]any{"rules": []any{map[string]any{"host": "broken.gslb.example.com", "https": k8gbRules(map[string]string{"x": "frontend-podinfo"})["rules"].([]any)[0].(map[string]any)["http"]}}}, "strategy": k8gbStrategy("failover", nil)},
	} {
		if status, body := eu.kube.TryApply(t, k8gbGslb("k8gb.io/v1beta1", "k8gb-test", "broken", nil, spec)); status/100 == 2 {
			t.Errorf("a broken Gslb was accepted: %s", body)
		}
	}

	// The lifecycle: the primary's application stops, then the other's; they come back.
	const host = "lifecycle.gslb.example.com."
	app := func(c *k8gbCluster, ready bool) {
		c.kube.Apply(t, testutil.KubeEndpointSlice("failover", "frontend-podinfo-1", "frontend-podinfo", ready))
	}
	for _, step := range []struct {
		name  string
		apply func()
		want  []string
	}{
		{"eu's application stops", func() { app(eu, false) }, []string{us.ingress}},
		{"us's stops too: no cluster is healthy", func() { app(us, false) }, nothing},
		{"us's starts", func() { app(us, true) }, []string{us.ingress}},
		{"eu's starts: back to the primary", func() { app(eu, true) }, []string{eu.ingress}},
	} {
		start := time.Now()
		step.apply()
		waitAnswer(t, procs, budget, host, dns.TypeA, step.want...)
		t.Logf("%s: both clusters answer %v after %s", step.name, step.want, time.Since(start).Round(time.Millisecond))
		if step.name == "us's stops too: no cluster is healthy" {
			for _, c := range clusters {
				wantStatus(c, "k8gb.io", "failover", "lifecycle", func(st k8gbStatusOf) bool {
					_, listed := st.Status.HealthyRecords["lifecycle.gslb.example.com"]
					return st.Status.ServiceHealth["lifecycle.gslb.example.com"] == "Unhealthy" && !listed
				})
			}
		}
	}
}
