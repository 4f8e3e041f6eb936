package testutil

import (
	"slices"
	"strconv"
	"testing"
)

// gatewayStatus is what the tests read of a stored Gateway.
type gatewayStatus struct {
	Spec struct {
		GatewayClassName string
		Listeners        []struct{ Port int }
	}
	Status struct {
		Addresses  []struct{ Type, Value string }
		Conditions []struct{ Type, Status, Reason string }
	}
}

// condition returns the status of the Gateway's condition typ, or "".
func (g gatewayStatus) condition(typ string) string {
	for _, c := range g.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

// TestKubeGatewayAPI installs the Gateway API's standard CRDs in a real kube-apiserver, applies
// a GatewayClass, a Gateway and an HTTPRoute, writes the Gateway's status through the status
// subresource as its controller would, and reads them back; the server validates them against
// the real schemas, as it shows by refusing a Gateway without listeners.
func TestKubeGatewayAPI(t *testing.T) {
	k := StartKube(t)
	InstallGatewayAPI(t, k)
	if !k.Served("/apis/gateway.networking.k8s.io/v1") {
		t.Fatal("gateway.networking.k8s.io/v1 is not served after InstallGatewayAPI")
	}
	k.Apply(t, KubeNamespace("shop"))
	k.Apply(t, KubeGatewayClass(KubeGatewayClassName))
	const path = "/apis/gateway.networking.k8s.io/v1/namespaces/shop/gateways/edge"

	var gw gatewayStatus
	k.Apply(t, KubeGateway("shop", "edge", "192.0.2.10"))
	decode(t, k.Get(t, path), &gw)
	if gw.Spec.GatewayClassName != KubeGatewayClassName || len(gw.Spec.Listeners) != 1 || gw.Spec.Listeners[0].Port != 80 {
		t.Errorf("the stored Gateway's spec: %+v", gw.Spec)
	}
	if len(gw.Status.Addresses) != 0 || gw.condition("Programmed") == "True" {
		t.Errorf("the Gateway's status before the status apply: %+v, want no address and not programmed", gw.Status)
	}

	for _, tc := range []struct {
		name       string
		gateway    map[string]any
		addresses  []string // type=value
		programmed string
	}{
		{"an address", KubeGateway("shop", "edge", "192.0.2.10"), []string{"IPAddress=192.0.2.10"}, "True"},
		{"addresses of each type", KubeGateway("shop", "edge", "2001:db8::10", "lb.example.net"),
			[]string{"IPAddress=2001:db8::10", "Hostname=lb.example.net"}, "True"},
		{"not programmed", KubeGatewayProgrammed(KubeGateway("shop", "edge"), false), nil, "False"},
		{"programmed again", KubeGatewayProgrammed(KubeGatewayProgrammed(KubeGateway("shop", "edge", "192.0.2.11"), false), true),
			[]string{"IPAddress=192.0.2.11"}, "True"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got gatewayStatus
			decode(t, k.ApplyStatus(t, tc.gateway), &got)
			var addrs []string
			for _, a := range got.Status.Addresses {
				addrs = append(addrs, a.Type+"="+a.Value)
			}
			if !slices.Equal(addrs, tc.addresses) || got.condition("Programmed") != tc.programmed || got.condition("Accepted") != "True" {
				t.Errorf("the stored status: %+v, want addresses %q, Accepted True and Programmed %s", got.Status, tc.addresses, tc.programmed)
			}
		})
	}

	var route struct {
		Spec struct {
			ParentRefs []struct{ Name string }
			Hostnames  []string
			Rules      []struct {
				BackendRefs []struct {
					Name string
					Port int
				}
			}
		}
	}
	decode(t, k.Apply(t, KubeHTTPRoute("shop", "web", "edge", []string{"app.example.org"}, "web")), &route)
	if s := route.Spec; len(s.ParentRefs) != 1 || s.ParentRefs[0].Name != "edge" || !slices.Equal(s.Hostnames, []string{"app.example.org"}) ||
		len(s.Rules) != 1 || len(s.Rules[0].BackendRefs) != 1 || s.Rules[0].BackendRefs[0].Name != "web" || s.Rules[0].BackendRefs[0].Port != 80 {
		t.Errorf("the stored HTTPRoute's spec: %+v", s)
	}

	noListeners := KubeGateway("shop", "closed")
	noListeners["spec"].(map[string]any)["listeners"] = []any{}
	if status, out := k.TryApply(t, noListeners); status/100 == 2 {
		t.Errorf("a Gateway without listeners was accepted (%d): %s", status, out)
	}
}

// TestKubeIngress applies Ingresses to a real kube-apiserver, writes their load balancer
// status through the status subresource as an ingress controller would, and reads them back.
func TestKubeIngress(t *testing.T) {
	k := StartKube(t)
	k.Apply(t, KubeNamespace("shop"))
	type rule struct {
		Host string
		HTTP struct {
			Paths []struct {
				Path     string
				PathType string
				Backend  struct {
					Service struct {
						Name string
						Port struct{ Number int }
					}
				}
			}
		}
	}
	// stored is what the test reads of a stored Ingress.
	type stored struct {
		Spec   struct{ Rules []rule }
		Status struct {
			LoadBalancer struct {
				Ingress []struct{ IP, Hostname string }
			}
		}
	}
	for _, tc := range []struct {
		name    string
		hosts   map[string][]string
		ingress []string
		rules   []string // host path service:port, in order
		status  []string // ip or hostname=NAME
	}{
		{"one host", map[string][]string{"app.example.org": {"web"}}, []string{"192.0.2.10"},
			[]string{"app.example.org /web web:80"}, []string{"192.0.2.10"}},
		{"hosts and services", map[string][]string{"b.example.org": {"web", "api"}, "a.example.org": {"web"}, "": {"web"}},
			[]string{"2001:db8::10", "lb.example.net"},
			[]string{" /web web:80", "a.example.org /web web:80", "b.example.org /web web:80", "b.example.org /api api:80"},
			[]string{"2001:db8::10", "hostname=lb.example.net"}},
		{"no address", map[string][]string{"app.example.org": {"web"}}, nil, []string{"app.example.org /web web:80"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ing := KubeIngress("shop", "web", tc.hosts, tc.ingress...)
			k.Apply(t, ing)
			var got stored
			decode(t, k.ApplyStatus(t, ing), &got)
			var rules, status []string
			for _, r := range got.Spec.Rules {
				for _, p := range r.HTTP.Paths {
					if p.PathType != "Prefix" {
						t.Errorf("path %s of %q is a %s, want a Prefix", p.Path, r.Host, p.PathType)
					}
					rules = append(rules, r.Host+" "+p.Path+" "+p.Backend.Service.Name+":"+strconv.Itoa(p.Backend.Service.Port.Number))
				}
			}
			for _, in := range got.Status.LoadBalancer.Ingress {
				if in.Hostname != "" {
					in.IP = "hostname=" + in.Hostname
				}
				status = append(status, in.IP)
			}
			if !slices.Equal(rules, tc.rules) || !slices.Equal(status, tc.status) {
				t.Errorf("the stored Ingress: rules %q, status %q; want %q and %q", rules, status, tc.rules, tc.status)
			}
		})
	}
	if status, out := k.TryApply(t, KubeIngress("shop", "empty", nil)); status/100 == 2 {
		t.Errorf("an Ingress without rules nor a default backend was accepted (%d): %s", status, out)
	}
}
