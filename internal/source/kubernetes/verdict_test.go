package kubernetes

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// TestJudge checks the verdict on each combination of the signals: the object, its address,
// a Gateway's Programmed condition, and its Services' health under each policy.
func TestJudge(t *testing.T) {
	addr := []netip.Addr{netip.MustParseAddr("192.0.2.10")}
	ok := func(n int) serviceHealth { return serviceHealth{ready: n} }
	bad := func(why string) serviceHealth { return serviceHealth{failed: why} }
	svc := config.KubernetesRef{Namespace: "shop", Kind: config.KindService, Name: "web", Policy: config.PolicyAny}
	ing, ingAll := svc, svc
	ing.Kind, ingAll.Kind, ingAll.Policy = config.KindIngress, config.KindIngress, config.PolicyAll
	gw := config.KubernetesRef{Namespace: "shop", Kind: config.KindGateway, Name: "gw"}
	route := config.KubernetesRef{Namespace: "shop", Kind: config.KindHTTPRoute, Name: "web"}
	vs := config.KubernetesRef{Namespace: "shop", Kind: config.KindVirtualService, Name: "web"}
	tests := []struct {
		name     string
		ref      config.KubernetesRef
		t        target
		services map[string]serviceHealth
		want     health.Status
		reason   string
	}{
		{"no object", svc, target{}, nil, health.Down, "kubernetes: no Service shop/web"},
		{"no address", svc, target{found: true, services: []serviceRef{{"shop", "web"}}}, map[string]serviceHealth{"web": ok(1)}, health.Down, "no external address of Service shop/web"},
		{"no ready endpoint", svc, target{found: true, addrs: addr, services: []serviceRef{{"shop", "web"}}}, map[string]serviceHealth{"web": bad("no ready endpoint in the EndpointSlices of shop/web")}, health.Down, "no ready endpoint in the EndpointSlices of shop/web"},
		{"ready", svc, target{found: true, addrs: addr, services: []serviceRef{{"shop", "web"}}}, map[string]serviceHealth{"web": ok(2)}, health.Up, "2 ready endpoints of Service shop/web"},
		{"any: one of two", ing, target{found: true, addrs: addr, services: []serviceRef{{"shop", "a"}, {"shop", "b"}}}, map[string]serviceHealth{"a": ok(1), "b": bad("b is out")}, health.Up, "1 ready endpoints of Ingress shop/web (policy any; b is out)"},
		{"any: none", ing, target{found: true, addrs: addr, services: []serviceRef{{"shop", "a"}, {"shop", "b"}}}, map[string]serviceHealth{"a": bad("a is out"), "b": bad("b is out")}, health.Down, "a is out; b is out"},
		{"all: one of two", ingAll, target{found: true, addrs: addr, services: []serviceRef{{"shop", "a"}, {"shop", "b"}}}, map[string]serviceHealth{"a": ok(1), "b": bad("b is out")}, health.Down, "kubernetes: b is out"},
		{"all: both", ingAll, target{found: true, addrs: addr, services: []serviceRef{{"shop", "a"}, {"shop", "b"}}}, map[string]serviceHealth{"a": ok(1), "b": ok(3)}, health.Up, "4 ready endpoints"},
		{"gateway programmed, no Services", gw, target{found: true, addrs: addr}, nil, health.Up, "Gateway shop/gw has an address"},
		{"gateway not programmed", gw, target{found: true, addrs: addr, notProgrammed: "not programmed (Invalid)"}, nil, health.Down, "Gateway shop/gw is not programmed (Invalid)"},
		{"missing parent", route, target{found: true, missing: "no Gateway shop/gw (the parent of HTTPRoute shop/web)"}, nil, health.Down, "kubernetes: no Gateway shop/gw (the parent of HTTPRoute shop/web)"},
		{"frontend fails", vs, target{found: true, addrs: addr, frontends: []serviceRef{{"istio-system", "gw"}}, services: []serviceRef{{"shop", "a"}}}, map[string]serviceHealth{"gw": bad("no ready endpoint in the EndpointSlices of istio-system/gw"), "a": ok(1)}, health.Down, "no ready endpoint in the EndpointSlices of istio-system/gw (the gateway of VirtualService shop/web)"},
		{"frontend passes", vs, target{found: true, addrs: addr, frontends: []serviceRef{{"istio-system", "gw"}}, services: []serviceRef{{"shop", "a"}}}, map[string]serviceHealth{"gw": ok(2), "a": ok(1)}, health.Up, "1 ready endpoints of VirtualService shop/web"},
	}
	for _, tt := range tests {
		v := judge(tt.ref, tt.t, func(s serviceRef) serviceHealth { return tt.services[s.Name] })
		if v.status != tt.want || !strings.Contains(v.reason, tt.reason) {
			t.Errorf("%s: %v %q, want %v %q", tt.name, v.status, v.reason, tt.want, tt.reason)
		}
	}
}

// TestReadyEndpoints checks that an endpoint without a ready condition counts as ready, as
// the EndpointSlice API asks, and that the pods of the ready ones are named pod.namespace.
func TestReadyEndpoints(t *testing.T) {
	yes, no := true, false
	slice := func(ready ...*bool) *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{}
		s.Namespace = "shop"
		for i, r := range ready {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Conditions: discoveryv1.EndpointConditions{Ready: r},
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: fmt.Sprintf("gw-%d", i)}})
		}
		return s
	}
	tests := []struct {
		name   string
		slices []*discoveryv1.EndpointSlice
		ready  int
		pods   []string
	}{
		{"no slice", nil, 0, nil},
		{"none ready", []*discoveryv1.EndpointSlice{slice(&no, &no), slice()}, 0, nil},
		{"one of two slices", []*discoveryv1.EndpointSlice{slice(&no), slice(&no, &yes)}, 1, []string{"gw-1.shop"}},
		{"ready not set", []*discoveryv1.EndpointSlice{slice(nil)}, 1, []string{"gw-0.shop"}},
	}
	for _, tt := range tests {
		ready, pods := readyEndpoints(tt.slices)
		if ready != tt.ready || !slices.Equal(pods, tt.pods) {
			t.Errorf("%s: %d %v, want %d %v", tt.name, ready, pods, tt.ready, tt.pods)
		}
	}
}

// TestAddresses checks which status entries become addresses: IPs of both families
// (IPv4-mapped ones as IPv4), and host names once resolved.
func TestAddresses(t *testing.T) {
	in := []corev1.LoadBalancerIngress{{IP: "2001:db8::10"}, {IP: "192.0.2.10"}, {IP: "::ffff:192.0.2.10"}, {Hostname: "lb.example.test"}, {Hostname: "new.example.test"}, {IP: "not an address"}}
	resolved := map[string][]netip.Addr{"lb.example.test": {netip.MustParseAddr("192.0.2.30")}}
	addrs, hostnames := loadBalancer(in, resolved)
	want := []netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("192.0.2.30"), netip.MustParseAddr("2001:db8::10")}
	if !slices.Equal(addrs, want) || !slices.Equal(hostnames, []string{"lb.example.test", "new.example.test"}) {
		t.Errorf("loadBalancer = %v, %v; want %v and both host names", addrs, hostnames, want)
	}
}
