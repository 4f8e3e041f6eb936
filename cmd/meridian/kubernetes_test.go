package main

import (
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// kubeDelayBound bounds how long a change applied through the Kubernetes API takes to change
// the answers: the informer's delay plus a reload.
const kubeDelayBound = 5 * time.Second

// TestKubernetes serves a record whose first backend is a Service, read from a real
// kube-apiserver with the kubeconfig option, and follows the cluster's changes to it: its
// LoadBalancer address answers while an endpoint is ready, the record's other backend while
// none is, an IPv6 address answers AAAA (once judged up: the record's other IPv6 backend
// answers until then), and the addresses leave when the Service loses them.
func TestKubernetes(t *testing.T) {
	t.Parallel()
	kube := testutil.StartKube(t)
	kube.Apply(t, testutil.KubeNamespace("shop"))
	s := serveZone(t, `records:
  app.example.org.:
    mode: failover
    backends:
      - {kubernetes: {namespace: shop, service: web}, priority: 1}
      - {address: 198.51.100.1, priority: 2}
      - {address: 2001:db8::99, priority: 2}
`, "  kubeconfig "+kube.Kubeconfig(t)+"\n  kubernetes_namespaces shop\n")

	answers := func(qtype uint16) []string { return addresses(s.Query(t, "udp", "app.example.org", qtype)) }
	follow := func(step string, start time.Time, qtype uint16, want ...string) {
		t.Helper()
		testutil.Eventually(t, kubeDelayBound, func() bool { return slices.Equal(answers(qtype), want) },
			"%s: the answer is %v, want %v\n%s", step, answers(qtype), want, s.Logs())
		t.Logf("%s: answered as wanted %s after the API call", step, time.Since(start).Round(time.Millisecond))
	}
	follow("before any Service", time.Now(), dns.TypeA, "198.51.100.1")

	start := time.Now()
	kube.Apply(t, testutil.KubeService("shop", "web"))
	kube.ApplyStatus(t, testutil.KubeService("shop", "web", "192.0.2.10"))
	kube.Apply(t, testutil.KubeEndpointSlice("shop", "web-1", "web", true))
	follow("address and a ready endpoint", start, dns.TypeA, "192.0.2.10")

	start = time.Now()
	kube.Apply(t, testutil.KubeEndpointSlice("shop", "web-1", "web", false))
	follow("no ready endpoint", start, dns.TypeA, "198.51.100.1")

	start = time.Now()
	kube.Apply(t, testutil.KubeEndpointSlice("shop", "web-1", "web", true))
	follow("ready again", start, dns.TypeA, "192.0.2.10")

	start = time.Now()
	kube.ApplyStatus(t, testutil.KubeService("shop", "web", "192.0.2.10", "2001:db8::10"))
	follow("an IPv6 address", start, dns.TypeAAAA, "2001:db8::10")

	start = time.Now()
	kube.ApplyStatus(t, testutil.KubeService("shop", "web"))
	follow("no LoadBalancer address", start, dns.TypeA, "198.51.100.1")
	follow("no LoadBalancer address, AAAA", start, dns.TypeAAAA, "2001:db8::99")
}

// TestK8gbAcrossClusters is k8gb's multi-cluster GSLB with Meridian in its place: two clusters
// (eu and us, each a real kube-apiserver), each with a Meridian that reads its own cluster and
// reads the other site over DNS. The same Gslb (failover, primary eu, embedded ingress) is
// applied to both: each Meridian keeps its Ingress, both answer eu's address while eu's
// Service is ready and us's when it is not, and each Gslb's status says so.
func TestK8gbAcrossClusters(t *testing.T) {
	t.Parallel()
	names := []string{"eu", "us"}
	ingressIPs := []string{"127.0.4.1", "127.0.4.2"}
	kubes := make([]*testutil.Kube, len(names))
	for i := range names {
		kubes[i] = testutil.StartKube(t)
		kubes[i].Apply(t, testutil.KubeNamespace("shop"))
		testutil.InstallGslbCRDs(t, kubes[i], "../../deploy/helm/meridian/crds")
		kubes[i].Apply(t, testutil.KubeService("shop", "app"))
		kubes[i].Apply(t, testutil.KubeEndpointSlice("shop", "app-1", "app", true))
		kubes[i].Apply(t, map[string]any{"apiVersion": "k8gb.io/v1beta1", "kind": "Gslb", "metadata": map[string]any{"name": "app", "namespace": "shop"},
			"spec": map[string]any{"ingress": testutil.KubeIngress("shop", "app", map[string][]string{"app.gslb.example.com": {"app"}})["spec"],
				"strategy": map[string]any{"type": "failover", "primaryGeoTag": "eu", "dnsTtlSeconds": 5}}})
	}
	procs := startSites(t, siteSetup{names: names, backends: []string{"", ""},
		yaml: func(int, []int) string {
			return "records:\n  static.gslb.example.com.:\n    backends: [{address: 198.51.100.1}]\n"
		},
		extra: func(i int) string { return "  kubeconfig " + kubes[i].Kubeconfig(t) + "\n  k8gb eu us\n" }})
	for i, k := range kubes { // the ingress controller of each cluster gives Meridian's Ingress its address
		testutil.Eventually(t, kubeDelayBound, func() bool { return k.Served("/apis/networking.k8s.io/v1/namespaces/shop/ingresses/app") },
			"%s: Meridian did not create the Gslb's Ingress\n%s", names[i], procs[i].srv.Logs())
		k.ApplyStatus(t, testutil.KubeIngress("shop", "app", map[string][]string{"app.gslb.example.com": {"app"}}, ingressIPs[i]))
	}
	budget := kubeDelayBound + siteThreshold + 2*sitePeerInterval + siteMargin
	waitAnswer(t, procs, budget, "app.gslb.example.com.", dns.TypeA, "127.0.4.1")
	status := func(i int) (st struct {
		Status struct {
			GeoTag         string              `json:"geoTag"`
			ServiceHealth  map[string]string   `json:"serviceHealth"`
			HealthyRecords map[string][]string `json:"healthyRecords"`
		}
	}) {
		if err := json.Unmarshal(kubes[i].Get(t, "/apis/k8gb.io/v1beta1/namespaces/shop/gslbs/app"), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	wantStatus := func(i int, health string, records ...string) {
		t.Helper()
		testutil.Eventually(t, budget+5*time.Second, func() bool {
			st := status(i).Status
			return st.GeoTag == names[i] && st.ServiceHealth["app.gslb.example.com"] == health && slices.Equal(st.HealthyRecords["app.gslb.example.com"], records)
		}, "%s: the Gslb's status is %+v, want %s and %v", names[i], status(i).Status, health, records)
	}
	// healthyRecords are what the record answers, as k8gb's: the primary's address.
	wantStatus(0, "Healthy", "127.0.4.1")
	wantStatus(1, "Healthy", "127.0.4.1")

	start := time.Now()
	kubes[0].Apply(t, testutil.KubeEndpointSlice("shop", "app-1", "app", false))
	waitAnswer(t, procs, budget, "app.gslb.example.com.", dns.TypeA, "127.0.4.2")
	t.Logf("eu's Service not ready: both clusters answer us's address after %s", time.Since(start).Round(time.Millisecond))
	wantStatus(0, "Unhealthy", "127.0.4.2")
	wantStatus(1, "Healthy", "127.0.4.2")
}

// TestKubernetesWithProbes: a Service's address that is also probed answers only while both
// say up: its endpoints are ready and its tcp check passes. The check failing takes it out
// although the cluster still says ready, and the cluster saying not ready takes it out
// although the check passes.
func TestKubernetesWithProbes(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.5.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go acceptAndClose(l)
	port := l.Addr().(*net.TCPAddr).Port
	kube := testutil.StartKube(t)
	kube.Apply(t, testutil.KubeNamespace("shop"))
	kube.Apply(t, testutil.KubeService("shop", "web"))
	kube.ApplyStatus(t, testutil.KubeService("shop", "web", "127.0.5.1"))
	kube.Apply(t, testutil.KubeEndpointSlice("shop", "web-1", "web", true))
	s := serveZone(t, fmt.Sprintf(`records:
  app.example.org.:
    mode: failover
    scrape_interval: 200ms
    scrape_timeout: 100ms
    backends:
      - {kubernetes: {namespace: shop, service: web}, priority: 1, fall: 1, healthchecks: [{type: tcp, params: {port: %d}}]}
      - {address: 198.51.100.1, priority: 2}
`, port), "  kubeconfig "+kube.Kubeconfig(t)+"\n")
	answer := func() []string { return addresses(s.Query(t, "udp", "app.example.org", dns.TypeA)) }
	want := func(step string, addr string) {
		t.Helper()
		testutil.Eventually(t, kubeDelayBound, func() bool { return slices.Equal(answer(), []string{addr}) }, "%s: the answer is %v, want %s\n%s", step, answer(), addr, s.Logs)
	}
	want("ready and probed up", "127.0.5.1")
	kube.Apply(t, testutil.KubeEndpointSlice("shop", "web-1", "web", false))
	want("not ready, probed up", "198.51.100.1")
	kube.Apply(t, testutil.KubeEndpointSlice("shop", "web-1", "web", true))
	want("ready again", "127.0.5.1")
	l.Close()
	want("ready, the probe fails", "198.51.100.1")
}
