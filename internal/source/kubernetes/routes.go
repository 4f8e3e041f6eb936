package kubernetes

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/meridian-gslb/meridian/internal/config"
)

// virtualServiceTarget returns what the informers say of the Istio VirtualService ref: its
// address is that of the LoadBalancer Service of the one Istio Gateway it binds (besides the
// mesh), found as k8gb finds it: the Service whose labels the Gateway's selector matches; its
// Services are its routes' destinations, and the gateway's Service is a frontend.
func (w *Watcher) virtualServiceTarget(ref config.KubernetesRef) target {
	var t target
	vs := w.conn.dynamicGet(virtualServiceResource, ref.Namespace, ref.Name)
	if vs == nil {
		return t
	}
	t.found = true
	t.services = virtualServiceDestinations(vs)
	var gateways []string
	for _, g := range stringsAt(vs, "spec", "gateways") {
		if g != "mesh" {
			gateways = append(gateways, g)
		}
	}
	if len(gateways) != 1 {
		t.missing = fmt.Sprintf("%s binds %d Gateways besides the mesh, not one", ref, len(gateways))
		return t
	}
	ns, name, ok := strings.Cut(gateways[0], "/")
	if !ok {
		ns, name = ref.Namespace, gateways[0]
	}
	gw := w.conn.dynamicGet(istioGatewayResource, ns, name)
	if gw == nil {
		t.missing = fmt.Sprintf("no Istio Gateway %s/%s (bound by %s)", ns, name, ref)
		return t
	}
	selector, _, _ := unstructured.NestedStringMap(gw.Object, "spec", "selector")
	svcs := w.conn.servicesLabeled(labels.SelectorFromSet(selector))
	if len(selector) == 0 || len(svcs) != 1 {
		t.missing = fmt.Sprintf("%d Services are labeled as the selector of Istio Gateway %s/%s (%v), not one", len(svcs), ns, name, selector)
		return t
	}
	svc := svcs[0]
	t.addrs, t.hostnames = loadBalancer(svc.Status.LoadBalancer.Ingress, w.resolved)
	t.frontends = []serviceRef{{svc.Namespace, svc.Name}}
	return t
}

// virtualServiceDestinations returns the Services vs routes to: the destination hosts of its
// http, tls and tcp routes, a short name being a Service of vs's namespace and
// name.namespace[.svc...] one of that namespace.
func virtualServiceDestinations(vs *unstructured.Unstructured) []serviceRef {
	var out []serviceRef
	for _, kind := range []string{"http", "tls", "tcp"} {
		for _, rule := range mapsAt(vs, "spec", kind) {
			routes, _ := rule["route"].([]any)
			for _, r := range routes {
				route, _ := r.(map[string]any)
				host, _, _ := unstructured.NestedString(route, "destination", "host")
				if host == "" {
					continue
				}
				ref := serviceRef{vs.GetNamespace(), host}
				if name, rest, ok := strings.Cut(host, "."); ok {
					ns, _, _ := strings.Cut(rest, ".")
					ref = serviceRef{ns, name}
				}
				if !slices.Contains(out, ref) {
					out = append(out, ref)
				}
			}
		}
	}
	return out
}

// routeTarget returns what the informers say of the Gateway API route ref: its address and
// Programmed condition are its one parent Gateway's, its Services its rules' backends.
func (w *Watcher) routeTarget(ref config.KubernetesRef) target {
	var t target
	route := w.conn.dynamicGet(routeResources[string(ref.Kind)], ref.Namespace, ref.Name)
	if route == nil {
		return t
	}
	t.found = true
	t.services = routeBackends(route)
	var parents []serviceRef
	for _, p := range mapsAt(route, "spec", "parentRefs") {
		if kind, _ := p["kind"].(string); kind != "" && kind != "Gateway" {
			continue
		}
		parent := serviceRef{route.GetNamespace(), ""}
		parent.Name, _ = p["name"].(string)
		if ns, _ := p["namespace"].(string); ns != "" {
			parent.Namespace = ns
		}
		if !slices.Contains(parents, parent) {
			parents = append(parents, parent)
		}
	}
	if len(parents) != 1 {
		t.missing = fmt.Sprintf("%s has %d parent Gateways, not one", ref, len(parents))
		return t
	}
	gw := w.conn.gateway(parents[0].Namespace, parents[0].Name)
	if gw == nil {
		t.missing = fmt.Sprintf("no Gateway %s (the parent of %s)", parents[0], ref)
		return t
	}
	var why string
	t.addrs, t.hostnames, why = gatewayStatus(gw, w.resolved)
	if why != "" {
		t.notProgrammed = "of Gateway " + parents[0].String() + ", " + why
	}
	return t
}

// routeBackends returns the Services route's rules send traffic to (backendRefs of the core
// group and kind Service, in the route's namespace unless they name theirs).
func routeBackends(route *unstructured.Unstructured) []serviceRef {
	var out []serviceRef
	for _, rule := range mapsAt(route, "spec", "rules") {
		backends, _ := rule["backendRefs"].([]any)
		for _, b := range backends {
			br, _ := b.(map[string]any)
			group, _ := br["group"].(string)
			kind, _ := br["kind"].(string)
			if group != "" || kind != "" && kind != "Service" {
				continue
			}
			ref := serviceRef{route.GetNamespace(), ""}
			ref.Name, _ = br["name"].(string)
			if ns, _ := br["namespace"].(string); ns != "" {
				ref.Namespace = ns
			}
			if ref.Name != "" && !slices.Contains(out, ref) {
				out = append(out, ref)
			}
		}
	}
	return out
}

// servicesLabeled returns the Services of every watched namespace whose labels sel matches,
// sorted by namespace and name.
func (c *conn) servicesLabeled(sel labels.Selector) []*corev1.Service {
	var out []*corev1.Service
	for _, l := range c.services {
		found, _ := l.List(sel) // a lister fails only on a bad selector
		out = append(out, found...)
	}
	slices.SortFunc(out, func(a, b *corev1.Service) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out
}

// stringsAt returns the strings of the list at fields of obj (those that are strings).
func stringsAt(obj *unstructured.Unstructured, fields ...string) []string {
	list, _, _ := unstructured.NestedSlice(obj.Object, fields...)
	var out []string
	for _, v := range list {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// mapsAt returns the objects of the list at fields of obj (those that are objects).
func mapsAt(obj *unstructured.Unstructured, fields ...string) []map[string]any {
	list, _, _ := unstructured.NestedSlice(obj.Object, fields...)
	var out []map[string]any
	for _, v := range list {
		if m, ok := v.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}
