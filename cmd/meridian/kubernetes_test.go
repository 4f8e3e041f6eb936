package main

import (
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
