package realcluster

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// signalsValues serve a failover record whose first backend is the Service web of the
// namespace shop, read by the release's pods through the chart's service account and RBAC.
const signalsValues = `
config:
  zones:
    example.test.yml: |
      records:
        app.example.test.:
          mode: failover
          record_ttl: 5
          backends:
            - {kubernetes: {namespace: shop, service: web}, priority: 1}
            - {address: 192.0.2.99, priority: 2}
`

// testServiceReadiness: a Deployment behind a LoadBalancer Service (its address given by the
// cluster's load-balancer controller, as a cloud's would) is the first backend of a failover
// record. The record answers the Service's address while its pods are ready; when they fail
// their readiness probe and the kubelet marks them not ready, it answers the second backend;
// when they pass again, the Service's address again. The answered address serves the pods.
func (e *env) testServiceReadiness(t *testing.T) {
	const shop = "shop"
	e.namespace(t, shop)
	e.runApp(t, shop, "web", 2)
	lb := e.loadBalancerIP(t, shop, "web")
	e.install(t, "signals", "gslb", signalsValues)
	dnsIP := e.serviceIP(t, "signals", "gslb-meridian")

	took := waitAnswer(t, []string{dnsIP}, "app.example.test", lb)
	t.Logf("answering the Service's address %s %s after the install", lb, took.Round(time.Millisecond))
	resp, err := http.Get("http://" + lb + "/")
	if err != nil {
		t.Fatalf("GET the answered address: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(string(body), "web-") {
		t.Errorf("GET http://%s/: %s %q, want a web pod's answer", lb, resp.Status, body)
	}

	start := time.Now()
	e.setReady(t, shop, "web", false)
	waitAnswer(t, []string{dnsIP}, "app.example.test", "192.0.2.99")
	t.Logf("pods failing their readiness probe: the record answers its second backend after %s", time.Since(start).Round(time.Millisecond))
	for _, p := range e.pods(t, shop, "app%3Dweb") {
		if p.ready() {
			t.Errorf("pod %s is still ready after the record failed over", p.Metadata.Name)
		}
	}

	start = time.Now()
	e.setReady(t, shop, "web", true)
	waitAnswer(t, []string{dnsIP}, "app.example.test", lb)
	t.Logf("pods passing again: the record answers the Service's address after %s", time.Since(start).Round(time.Millisecond))
}

// loadBalancerIP waits until the Service has its external address, and returns it.
func (e *env) loadBalancerIP(t *testing.T, namespace, name string) string {
	t.Helper()
	deadline := time.Now().Add(answerTimeout)
	for {
		var svc struct {
			Status struct {
				LoadBalancer struct {
					Ingress []struct{ IP string } `json:"ingress"`
				} `json:"loadBalancer"`
			} `json:"status"`
		}
		if err := json.Unmarshal(e.c.Get(t, "/api/v1/namespaces/"+namespace+"/services/"+name), &svc); err != nil {
			t.Fatal(err)
		}
		if in := svc.Status.LoadBalancer.Ingress; len(in) > 0 {
			return in[0].IP
		}
		if time.Now().After(deadline) {
			t.Fatalf("Service %s/%s has no external address after %s", namespace, name, answerTimeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
