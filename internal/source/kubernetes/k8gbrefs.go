package kubernetes

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meridian-gslb/meridian/internal/config"
)

// hostSource is one object a Gslb references, and the hosts it serves.
type hostSource struct {
	ref   config.KubernetesRef
	hosts []sourceHost
}

// sourceHost is a host an object serves and the Services behind it there.
type sourceHost struct {
	host     string
	services []serviceRef
}

// refKind is a kind of object a Gslb's resourceRef may name: its API versions (as k8gb
// accepts them) and how its objects are found and read.
type refKind struct {
	kind     config.KubernetesKind
	versions []string
	// list returns the objects of namespace whose labels sel matches, or the one named name
	// (when sel is nil), as hosts sources; g is the Gslb, for its annotations.
	list func(w *Watcher, g *unstructured.Unstructured, namespace, name string, sel labels.Selector) ([]hostSource, error)
}

// refKinds are the kinds a resourceRef may name, by kind.
var refKinds = map[string]refKind{
	"Ingress":        {config.KindIngress, []string{"networking.k8s.io/v1"}, (*Watcher).ingressSources},
	"Service":        {config.KindService, []string{"v1"}, (*Watcher).serviceSources},
	"VirtualService": {config.KindVirtualService, []string{"networking.istio.io/v1", "networking.istio.io/v1beta1"}, (*Watcher).virtualServiceSources},
	"HTTPRoute":      {config.KindHTTPRoute, []string{"gateway.networking.k8s.io/v1"}, (*Watcher).routeSources},
	"GRPCRoute":      {config.KindGRPCRoute, []string{"gateway.networking.k8s.io/v1"}, (*Watcher).routeSources},
	"TLSRoute":       {config.KindTLSRoute, []string{"gateway.networking.k8s.io/v1", "gateway.networking.k8s.io/v1alpha2", "gateway.networking.k8s.io/v1alpha3"}, (*Watcher).routeSources},
	"TCPRoute":       {config.KindTCPRoute, []string{"gateway.networking.k8s.io/v1alpha2", "gateway.networking.k8s.io/v1"}, (*Watcher).routeSources},
	"UDPRoute":       {config.KindUDPRoute, []string{"gateway.networking.k8s.io/v1alpha2", "gateway.networking.k8s.io/v1"}, (*Watcher).routeSources},
}

// resourceRefLocked returns the objects that obj's spec.resourceRef, ref, names (name, in its
// namespace or the Gslb's) or selects (matchLabels, matchExpressions, in the Gslb's
// namespace), with their hosts.
func (w *Watcher) resourceRefLocked(obj *unstructured.Unstructured, ref map[string]any) ([]hostSource, error) {
	kind, _ := ref["kind"].(string)
	apiVersion, _ := ref["apiVersion"].(string)
	rk, ok := refKinds[kind]
	if !ok || !slices.Contains(rk.versions, apiVersion) {
		return nil, fmt.Errorf("apiVersion %q, kind %q is not supported (Ingress, Service, VirtualService, HTTPRoute, GRPCRoute, TLSRoute, TCPRoute, UDPRoute, in k8gb's versions)", apiVersion, kind)
	}
	ns := obj.GetNamespace()
	var sel labels.Selector
	name, _ := ref["name"].(string)
	if name != "" {
		if n, _ := ref["namespace"].(string); n != "" {
			ns = n
		}
	} else {
		var ls metav1.LabelSelector
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(ref, &ls); err != nil {
			return nil, err
		}
		s, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil || s.Empty() {
			return nil, fmt.Errorf("it needs a name or a label selector (%v)", err)
		}
		sel = s
	}
	if !w.opts.Watches(ns) {
		return nil, fmt.Errorf("the namespace %s is not watched", ns)
	}
	found, err := rk.list(w, obj, ns, name, sel)
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		if sel == nil {
			return nil, fmt.Errorf("no %s %s/%s", kind, ns, name)
		}
		return nil, fmt.Errorf("no %s in %s matches %s", kind, ns, sel)
	}
	return found, nil
}

// ingressSources returns the Ingresses of a resourceRef, with their rules' hosts.
func (w *Watcher) ingressSources(_ *unstructured.Unstructured, ns, name string, sel labels.Selector) ([]hostSource, error) {
	found := selected(sel, func() *networkingv1.Ingress { return w.conn.ingress(ns, name) }, func() []*networkingv1.Ingress {
		if l := w.conn.ingresses[w.conn.factoryNamespace(ns)]; l != nil {
			list, _ := l.Ingresses(ns).List(sel) // a lister fails only on a bad selector
			return list
		}
		return nil
	})
	var out []hostSource
	for _, in := range found {
		out = append(out, ingressSource(in))
	}
	return out, nil
}

// ingressSource returns in as a hosts source: each rule's host with the Services of its
// paths.
func ingressSource(in *networkingv1.Ingress) hostSource {
	src := hostSource{ref: config.KubernetesRef{Namespace: in.Namespace, Kind: config.KindIngress, Name: in.Name}}
	for _, r := range in.Spec.Rules {
		h := sourceHost{host: r.Host}
		if r.HTTP != nil {
			for _, p := range r.HTTP.Paths {
				if s := p.Backend.Service; s != nil && s.Name != "" && !containsService(h.services, serviceRef{in.Namespace, s.Name}) {
					h.services = append(h.services, serviceRef{in.Namespace, s.Name})
				}
			}
		}
		src.hosts = append(src.hosts, h)
	}
	return src
}

// embeddedSource returns the Ingress a Gslb embeds (spec.ingress, kept as an Ingress of its
// name) as a hosts source.
func embeddedSource(g *gslb, embedded map[string]any) ([]hostSource, error) {
	var spec networkingv1.IngressSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(ingressSpec(embedded), &spec); err != nil {
		return nil, fmt.Errorf("spec.ingress: %w", err)
	}
	in := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: g.namespace, Name: g.name}, Spec: spec}
	return []hostSource{ingressSource(in)}, nil
}

// ingressSpec returns the Ingress spec of a Gslb's embedded ingress, whose default backend is
// named backend (k8gb's field) where an Ingress's is defaultBackend.
func ingressSpec(embedded map[string]any) map[string]any {
	b, ok := embedded["backend"]
	if !ok {
		return embedded
	}
	spec := make(map[string]any, len(embedded))
	for k, v := range embedded {
		if k != "backend" {
			spec[k] = v
		}
	}
	spec["defaultBackend"] = b
	return spec
}

// serviceSources returns the LoadBalancer Services of a resourceRef, each serving the Gslb's
// k8gb.io/hostname.
func (w *Watcher) serviceSources(g *unstructured.Unstructured, ns, name string, sel labels.Selector) ([]hostSource, error) {
	host := strings.TrimSpace(g.GetAnnotations()[annotationHostname])
	if host == "" {
		return nil, fmt.Errorf("a Service needs the Gslb's annotation %s: the host it serves", annotationHostname)
	}
	found := selected(sel, func() *corev1.Service { return w.conn.service(ns, name) }, func() []*corev1.Service {
		if l := w.conn.services[w.conn.factoryNamespace(ns)]; l != nil {
			list, _ := l.Services(ns).List(sel) // a lister fails only on a bad selector
			return list
		}
		return nil
	})
	var out []hostSource
	for _, svc := range found {
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
			return nil, fmt.Errorf("the Service %s/%s is not of type LoadBalancer", svc.Namespace, svc.Name)
		}
		s := serviceRef{svc.Namespace, svc.Name}
		out = append(out, hostSource{ref: config.KubernetesRef{Namespace: s.Namespace, Kind: config.KindService, Name: s.Name},
			hosts: []sourceHost{{host: host, services: []serviceRef{s}}}})
	}
	return out, nil
}

// virtualServiceSources returns the Istio VirtualServices of a resourceRef, each serving its
// hosts, behind its routes' destinations.
func (w *Watcher) virtualServiceSources(_ *unstructured.Unstructured, ns, name string, sel labels.Selector) ([]hostSource, error) {
	var out []hostSource
	for _, vs := range w.customObjects(virtualServiceResource, ns, name, sel) {
		src := hostSource{ref: config.KubernetesRef{Namespace: vs.GetNamespace(), Kind: config.KindVirtualService, Name: vs.GetName()}}
		for _, h := range stringsAt(vs, "spec", "hosts") {
			src.hosts = append(src.hosts, sourceHost{host: h, services: virtualServiceDestinations(vs)})
		}
		out = append(out, src)
	}
	return out, nil
}

// routeSources returns the Gateway API routes of a resourceRef, each serving its hostnames
// (for a TCPRoute or a UDPRoute, which have none, the Gslb's k8gb.io/hostname), behind its
// backends.
func (w *Watcher) routeSources(g *unstructured.Unstructured, ns, name string, sel labels.Selector) ([]hostSource, error) {
	ref, _, _ := unstructured.NestedString(g.Object, "spec", "resourceRef", "kind")
	res := routeResources[ref]
	var out []hostSource
	for _, route := range w.customObjects(res, ns, name, sel) {
		src := hostSource{ref: config.KubernetesRef{Namespace: route.GetNamespace(), Kind: config.KubernetesKind(ref), Name: route.GetName()}}
		hosts := stringsAt(route, "spec", "hostnames")
		if ref == "TCPRoute" || ref == "UDPRoute" {
			hosts = nil
			if h := strings.TrimSpace(g.GetAnnotations()[annotationHostname]); h != "" {
				hosts = []string{h}
			}
		}
		if len(hosts) == 0 {
			return nil, fmt.Errorf("the %s %s/%s has no host name (a TCPRoute or UDPRoute takes the Gslb's annotation %s)", ref, route.GetNamespace(), route.GetName(), annotationHostname)
		}
		for _, h := range hosts {
			src.hosts = append(src.hosts, sourceHost{host: h, services: routeBackends(route)})
		}
		out = append(out, src)
	}
	return out, nil
}

// selected returns, when sel is nil, the object get returns (none when it is nil), and else
// the objects list returns, sorted by name.
func selected[T interface {
	comparable
	GetName() string
}](sel labels.Selector, get func() T, list func() []T) []T {
	if sel == nil {
		var none T
		if o := get(); o != none {
			return []T{o}
		}
		return nil
	}
	found := list()
	slices.SortFunc(found, func(a, b T) int { return strings.Compare(a.GetName(), b.GetName()) })
	return found
}

// customObjects returns the custom resources of res named name in ns, or (sel set) whose labels
// sel matches there.
func (w *Watcher) customObjects(res custom, ns, name string, sel labels.Selector) []*unstructured.Unstructured {
	if sel != nil {
		return w.conn.dynamicList(res, ns, sel)
	}
	if o := w.conn.dynamicGet(res, ns, name); o != nil {
		return []*unstructured.Unstructured{o}
	}
	return nil
}
