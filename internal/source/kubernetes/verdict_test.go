package kubernetes

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// TestJudge checks the verdict on each combination of the two signals, and that an endpoint
// without a ready condition counts as ready, as the EndpointSlice API asks.
func TestJudge(t *testing.T) {
	ref := config.KubernetesRef{Namespace: "shop", Service: "web"}
	yes, no := true, false
	slice := func(ready ...*bool) *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{}
		for _, r := range ready {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Conditions: discoveryv1.EndpointConditions{Ready: r}})
		}
		return s
	}
	addr := []netip.Addr{netip.MustParseAddr("192.0.2.10")}
	tests := []struct {
		name   string
		svc    *corev1.Service
		slices []*discoveryv1.EndpointSlice
		addrs  []netip.Addr
		want   health.Status
		reason string
	}{
		{"no Service", nil, nil, nil, health.Down, "no Service shop/web"},
		{"no address", &corev1.Service{}, []*discoveryv1.EndpointSlice{slice(&yes)}, nil, health.Down, "no LoadBalancer address of shop/web"},
		{"no slice", &corev1.Service{}, nil, addr, health.Down, "no ready endpoint in the EndpointSlices of shop/web"},
		{"none ready", &corev1.Service{}, []*discoveryv1.EndpointSlice{slice(&no, &no), slice()}, addr, health.Down, "no ready endpoint"},
		{"one ready of two slices", &corev1.Service{}, []*discoveryv1.EndpointSlice{slice(&no), slice(&yes)}, addr, health.Up, "1 ready endpoints of shop/web"},
		{"ready not set", &corev1.Service{}, []*discoveryv1.EndpointSlice{slice(nil)}, addr, health.Up, "1 ready endpoints"},
	}
	for _, tt := range tests {
		v := judge(ref, tt.svc, tt.slices, tt.addrs)
		if v.status != tt.want || !strings.Contains(v.reason, tt.reason) {
			t.Errorf("%s: %v %q, want %v %q", tt.name, v.status, v.reason, tt.want, tt.reason)
		}
	}
}

// TestIngress checks which LoadBalancer ingress entries become addresses: IPs of both families
// (IPv4-mapped ones as IPv4), and host names once resolved.
func TestIngress(t *testing.T) {
	svc := &corev1.Service{Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
		{IP: "2001:db8::10"}, {IP: "192.0.2.10"}, {IP: "::ffff:192.0.2.10"}, {Hostname: "lb.example.test"}, {Hostname: "new.example.test"}, {IP: "not an address"},
	}}}}
	resolved := map[string][]netip.Addr{"lb.example.test": {netip.MustParseAddr("192.0.2.30")}}
	addrs, hostnames := ingress(svc, resolved)
	want := []netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("192.0.2.30"), netip.MustParseAddr("2001:db8::10")}
	if !slices.Equal(addrs, want) || !slices.Equal(hostnames, []string{"lb.example.test", "new.example.test"}) {
		t.Errorf("ingress = %v, %v; want %v and both host names", addrs, hostnames, want)
	}
}
