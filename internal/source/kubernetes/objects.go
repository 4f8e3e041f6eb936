package kubernetes

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/meridian-gslb/meridian/internal/config"
)

// serviceRef names a Service.
type serviceRef struct{ Namespace, Name string }

// String returns "namespace/name".
func (s serviceRef) String() string { return s.Namespace + "/" + s.Name }

// target is what the cluster says of the object one kubernetes backend stands for.
type target struct {
	// found is whether the object exists (as the informers last read it).
	found bool
	// missing, when set, says which object that the backend's address comes through does not
	// exist or is ambiguous (a VirtualService's Gateway, a route's parent): the backend has no
	// address.
	missing string
	// addrs are its external addresses, sorted and without repeats: its IPs and what its host
	// names resolved to; hostnames are those host names.
	addrs     []netip.Addr
	hostnames []string
	// notProgrammed is the reason a Gateway (a route's parent) is not programmed by its
	// controller (its Programmed condition is set and not True); empty otherwise.
	notProgrammed string
	// services are the Services whose ready endpoints judge the backend, by its policy.
	services []serviceRef
	// frontends are Services that must each pass besides: the Service of the Istio ingress
	// gateway a VirtualService's traffic enters by.
	frontends []serviceRef
}

// targetLocked returns what the informers say of ref, a backend of record.
func (w *Watcher) targetLocked(ref config.KubernetesRef, record string) target {
	var t target
	switch {
	case ref.Kind == config.KindService:
		svc := w.conn.service(ref.Namespace, ref.Name)
		if svc != nil {
			t.found = true
			t.addrs, t.hostnames = loadBalancer(svc.Status.LoadBalancer.Ingress, w.resolved)
		}
		t.services = []serviceRef{{ref.Namespace, ref.Name}}
	case ref.Kind == config.KindIngress:
		in := w.conn.ingress(ref.Namespace, ref.Name)
		if in != nil {
			t.found = true
			t.addrs, t.hostnames = ingressAddrs(in.Status.LoadBalancer.Ingress, w.resolved)
			for _, s := range ingressServices(in, record) {
				t.services = append(t.services, serviceRef{ref.Namespace, s})
			}
		}
	case ref.Kind == config.KindGateway:
		gw := w.conn.gateway(ref.Namespace, ref.Name)
		if gw != nil {
			t.found = true
			t.addrs, t.hostnames, t.notProgrammed = gatewayStatus(gw, w.resolved)
		}
	case ref.Kind == config.KindVirtualService:
		t = w.virtualServiceTarget(ref)
	case ref.Kind.IsRoute():
		t = w.routeTarget(ref)
	}
	if len(ref.Services) > 0 {
		t.services = nil
		for _, s := range ref.Services {
			t.services = append(t.services, serviceRef{ref.Namespace, s})
		}
	}
	if len(ref.Exposed) > 0 && t.found {
		var ips, hosts []string
		for _, e := range ref.Exposed {
			if _, err := netip.ParseAddr(e); err == nil {
				ips = append(ips, e)
			} else {
				hosts = append(hosts, e)
			}
		}
		t.addrs, t.hostnames = addresses(ips, hosts, w.resolved)
		t.missing = ""
	}
	return t
}

// service returns the Service namespace/name, nil when the informers do not know it.
func (c *conn) service(namespace, name string) *corev1.Service {
	l := c.services[c.factoryNamespace(namespace)]
	if l == nil {
		return nil
	}
	s, err := l.Services(namespace).Get(name)
	if err != nil {
		return nil
	}
	return s
}

// ingress returns the Ingress namespace/name, nil when the informers do not know it.
func (c *conn) ingress(namespace, name string) *networkingv1.Ingress {
	l := c.ingresses[c.factoryNamespace(namespace)]
	if l == nil {
		return nil
	}
	in, err := l.Ingresses(namespace).Get(name)
	if err != nil {
		return nil
	}
	return in
}

// gateway returns the Gateway namespace/name, nil when the informers do not know it (or the
// Gateway API is not served).
func (c *conn) gateway(namespace, name string) *unstructured.Unstructured {
	return c.dynamicGet(gatewayResource, namespace, name)
}

// endpointSlices returns the EndpointSlices of the Service namespace/name.
func (c *conn) endpointSlices(namespace, service string) []*discoveryv1.EndpointSlice {
	l := c.slices[c.factoryNamespace(namespace)]
	if l == nil {
		return nil
	}
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: service})
	slices, _ := l.EndpointSlices(namespace).List(sel) // a lister fails only on a bad selector
	return slices
}

// readyEndpoints returns the ready endpoints of slices, and the names of the pods they are.
// An endpoint whose ready condition is not set counts as ready, as the EndpointSlice API asks
// of its readers.
func readyEndpoints(slices []*discoveryv1.EndpointSlice) (ready int, pods []string) {
	for _, s := range slices {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			ready++
			if ep.TargetRef != nil && ep.TargetRef.Kind == "Pod" {
				pods = append(pods, ep.TargetRef.Name+"."+s.Namespace)
			}
		}
	}
	return ready, pods
}

// loadBalancer returns the addresses of a Service's LoadBalancer ingress: its IPs, and what
// resolved gives for its host names; and the host names.
func loadBalancer(ingress []corev1.LoadBalancerIngress, resolved map[string][]netip.Addr) ([]netip.Addr, []string) {
	var ips, hosts []string
	for _, in := range ingress {
		ips, hosts = append(ips, in.IP), append(hosts, in.Hostname)
	}
	return addresses(ips, hosts, resolved)
}

// ingressAddrs is loadBalancer for an Ingress's status, whose entries have the same IP and
// Hostname.
func ingressAddrs(ingress []networkingv1.IngressLoadBalancerIngress, resolved map[string][]netip.Addr) ([]netip.Addr, []string) {
	as := make([]corev1.LoadBalancerIngress, len(ingress))
	for i, in := range ingress {
		as[i] = corev1.LoadBalancerIngress{IP: in.IP, Hostname: in.Hostname}
	}
	return loadBalancer(as, resolved)
}

// addresses returns ips (those that parse) with what resolved gives for hosts, sorted and
// without repeats, and the host names among hosts (empty ones left out).
func addresses(ips, hosts []string, resolved map[string][]netip.Addr) (addrs []netip.Addr, hostnames []string) {
	for _, ip := range ips {
		if a, err := netip.ParseAddr(ip); err == nil {
			addrs = append(addrs, a.Unmap())
		}
	}
	for _, h := range hosts {
		if h != "" {
			hostnames = append(hostnames, h)
			addrs = append(addrs, resolved[h]...)
		}
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	return slices.Compact(addrs), hostnames
}

// ingressServices returns the Services in's rules route to for host (the record's name, a
// canonical FQDN), and its default backend's; every rule's when no rule is for host.
func ingressServices(in *networkingv1.Ingress, host string) []string {
	var forHost, all []string
	add := func(list []string, b *networkingv1.IngressBackend) []string {
		if b != nil && b.Service != nil && !slices.Contains(list, b.Service.Name) {
			list = append(list, b.Service.Name)
		}
		return list
	}
	for _, r := range in.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for _, p := range r.HTTP.Paths {
			all = add(all, &p.Backend)
			if config.CanonicalName(r.Host) == host {
				forHost = add(forHost, &p.Backend)
			}
		}
	}
	if len(forHost) == 0 {
		forHost = all
	}
	forHost = add(forHost, in.Spec.DefaultBackend)
	slices.Sort(forHost)
	return forHost
}

// gatewayStatus returns a Gateway's addresses (status.addresses: IPAddress values, and what
// resolved gives for Hostname values), its host names, and why it is not programmed (its
// Programmed condition is set and not True; empty otherwise).
func gatewayStatus(gw *unstructured.Unstructured, resolved map[string][]netip.Addr) ([]netip.Addr, []string, string) {
	list, _, _ := unstructured.NestedSlice(gw.Object, "status", "addresses")
	var ips, hosts []string
	for _, item := range list {
		a, _ := item.(map[string]any)
		value, _ := a["value"].(string)
		switch typ, _ := a["type"].(string); typ {
		case "", "IPAddress":
			ips = append(ips, value)
		case "Hostname":
			hosts = append(hosts, value)
		}
	}
	addrs, hostnames := addresses(ips, hosts, resolved)
	conditions, _, _ := unstructured.NestedSlice(gw.Object, "status", "conditions")
	for _, item := range conditions {
		c, _ := item.(map[string]any)
		if c["type"] == "Programmed" && c["status"] != "True" {
			reason, _ := c["reason"].(string)
			return addrs, hostnames, "not programmed (" + reason + ")"
		}
	}
	return addrs, hostnames, ""
}
