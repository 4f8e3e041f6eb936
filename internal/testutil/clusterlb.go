package testutil

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// The cluster's load balancers, as a cloud's controller provides them: every Service of type
// LoadBalancer gets an external address in its status, spec.loadBalancerIP when it asks for
// one, else the next free address of ClusterExternalAddress from 100 on. The host routes those
// addresses to the bridge, and kube-proxy answers them for the Service (its KUBE-EXT rules), so
// the address works as a cloud's load balancer's does, from the host and from the pods.

// lbInterval is how often the load-balancer controller looks for Services without an address.
const lbInterval = 200 * time.Millisecond

// serveLoadBalancers runs the load-balancer controller until the test ends.
func (c *Cluster) serveLoadBalancers(t testing.TB) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	t.Cleanup(func() { close(done); <-stopped })
	go func() {
		defer close(stopped)
		next := 100
		tick := time.NewTicker(lbInterval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				next = c.assignLoadBalancers(t, next)
			}
		}
	}()
}

// lbService is what the controller reads of a Service.
type lbService struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Type           string `json:"type"`
		LoadBalancerIP string `json:"loadBalancerIP"`
	} `json:"spec"`
	Status struct {
		LoadBalancer struct {
			Ingress []struct {
				IP string `json:"ip"`
			} `json:"ingress"`
		} `json:"loadBalancer"`
	} `json:"status"`
}

// assignLoadBalancers gives an address to each LoadBalancer Service that has none, the next
// free one from next on unless it asks for one, and returns the next address to try. Errors
// (the API server stopping at the end of the test) wait for the next round.
func (c *Cluster) assignLoadBalancers(t testing.TB, next int) int {
	status, body, err := c.do(http.MethodGet, "/api/v1/services", "", nil)
	var list struct{ Items []lbService }
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &list) != nil {
		return next
	}
	used := map[string]bool{}
	for _, s := range list.Items {
		for _, in := range s.Status.LoadBalancer.Ingress {
			used[in.IP] = true
		}
	}
	for _, s := range list.Items {
		if s.Spec.Type != "LoadBalancer" || len(s.Status.LoadBalancer.Ingress) > 0 {
			continue
		}
		addr := s.Spec.LoadBalancerIP
		for ; addr == "" && next < 255; next++ {
			if a := ClusterExternalAddress(next); !used[a] {
				addr = a
			}
		}
		if addr == "" {
			t.Logf("load balancers: no address left for %s/%s", s.Metadata.Namespace, s.Metadata.Name)
			continue
		}
		used[addr] = true
		svc := KubeService(s.Metadata.Namespace, s.Metadata.Name, addr)
		data, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": svc["metadata"], "status": svc["status"]})
		if err != nil {
			continue
		}
		path := "/api/v1/namespaces/" + s.Metadata.Namespace + "/services/" + s.Metadata.Name + "/status?fieldManager=meridian-test-lb&force=true"
		_, _, _ = c.do(http.MethodPatch, path, "application/apply-patch+yaml", data)
	}
	return next
}
