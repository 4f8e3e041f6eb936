package kubernetes

import (
	"context"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// custom is a custom resource the watcher reads once the API server serves it: the versions
// it may be served in, best first (the first the API server serves is watched; an object of
// another version of the same definition reads the same).
type custom struct {
	name     string
	versions []schema.GroupVersionResource
	// clusterScoped is set for a resource of no namespace, watched whatever
	// kubernetes_namespaces says.
	clusterScoped bool
}

// gvr returns the group version resource of group, version and resource.
func gvr(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

// The custom resources the watcher reads: the Gateway API's Gateways and routes, Istio's
// VirtualServices and Gateways (what k8gb's Gslb resources may reference), k8gb's Gslb in its
// two groups and its ZoneDelegation.
var (
	gatewayResource        = custom{name: "gateways.gateway.networking.k8s.io", versions: []schema.GroupVersionResource{gvr("gateway.networking.k8s.io", "v1", "gateways")}}
	virtualServiceResource = custom{name: "virtualservices.networking.istio.io", versions: istioVersions("virtualservices")}
	istioGatewayResource   = custom{name: "gateways.networking.istio.io", versions: istioVersions("gateways")}
	gslbResource           = custom{name: "gslbs.k8gb.io", versions: []schema.GroupVersionResource{gvr("k8gb.io", "v1beta1", "gslbs")}}
	legacyGslbResource     = custom{name: "gslbs.k8gb.absa.oss", versions: []schema.GroupVersionResource{gvr(legacyGroup, "v1beta1", "gslbs")}}
	zoneDelegationResource = custom{name: "zonedelegations.k8gb.io", versions: []schema.GroupVersionResource{gvr("k8gb.io", "v1beta1", "zonedelegations")}, clusterScoped: true}
	// routeResources are the Gateway API's routes by kind, in the versions k8gb reads them
	// (and TCPRoute's and UDPRoute's v1, which the Gateway API made standard after).
	routeResources = map[string]custom{
		"HTTPRoute": routeResource("httproutes", "v1"),
		"GRPCRoute": routeResource("grpcroutes", "v1"),
		"TLSRoute":  routeResource("tlsroutes", "v1", "v1alpha3", "v1alpha2"),
		"TCPRoute":  routeResource("tcproutes", "v1", "v1alpha2"),
		"UDPRoute":  routeResource("udproutes", "v1", "v1alpha2"),
	}
	// gslbResources are k8gb's Gslb in its groups, the current one first.
	gslbResources = []custom{gslbResource, legacyGslbResource}
)

// istioVersions returns the versions of Istio's networking resource, best first.
func istioVersions(resource string) []schema.GroupVersionResource {
	return []schema.GroupVersionResource{gvr("networking.istio.io", "v1", resource), gvr("networking.istio.io", "v1beta1", resource), gvr("networking.istio.io", "v1alpha3", resource)}
}

// routeResource returns the Gateway API's route resource in versions, best first.
func routeResource(resource string, versions ...string) custom {
	c := custom{name: resource + ".gateway.networking.k8s.io"}
	for _, v := range versions {
		c.versions = append(c.versions, gvr("gateway.networking.k8s.io", v, resource))
	}
	return c
}

// wantedLocked returns the custom resources the watcher reads with its options.
func (w *Watcher) wantedLocked() []custom {
	want := []custom{gatewayResource}
	if w.opts.K8gb {
		want = append(want, virtualServiceResource, istioGatewayResource, gslbResource, legacyGslbResource, zoneDelegationResource)
		for _, kind := range slices.Sorted(maps.Keys(routeResources)) {
			want = append(want, routeResources[kind])
		}
	}
	return want
}

// watched is a custom resource's informers: the version watched and a lister per watched
// namespace.
type watched struct {
	res     schema.GroupVersionResource
	listers map[string]cache.GenericLister
}

// servedVersion returns the first version of c that the API server serves, and whether it serves
// one.
func (w *Watcher) servedVersion(ctx context.Context, c *conn, res custom) (schema.GroupVersionResource, bool) {
	for _, v := range res.versions {
		list, err := c.client.Discovery().ServerResourcesForGroupVersion(v.GroupVersion().String())
		if ctx.Err() != nil {
			return v, false
		}
		if err != nil {
			continue // not served (yet): asked again in discoverInterval
		}
		if slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == v.Resource }) {
			return v, true
		}
	}
	return schema.GroupVersionResource{}, false
}

// discover starts the informers of the custom resources the watcher wants that the API server
// serves and that are not started.
func (w *Watcher) discover(ctx context.Context) {
	w.mu.Lock()
	c := w.conn
	var missing []custom
	if c != nil {
		for _, res := range w.wantedLocked() {
			if c.custom[res.name] == nil {
				missing = append(missing, res)
			}
		}
	}
	w.mu.Unlock()
	type found struct {
		res custom
		gvr schema.GroupVersionResource
	}
	var founds []found
	for _, res := range missing {
		if v, ok := w.servedVersion(ctx, c, res); ok {
			founds = append(founds, found{res, v})
		}
	}
	if len(founds) == 0 || ctx.Err() != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conn != c || !w.started {
		return
	}
	for _, f := range founds {
		listers := map[string]cache.GenericLister{}
		for i, ns := range w.namespaces() {
			inf := c.dynamics[i].ForResource(f.gvr)
			if f.res.clusterScoped {
				ns, inf = "", c.clusterDynamic.ForResource(f.gvr)
			}
			if _, err := inf.Informer().AddEventHandler(w.handler()); err != nil {
				w.log.Warningf("kubernetes: watch %s: %v", f.gvr, err)
				continue
			}
			listers[ns] = inf.Lister()
			if f.res.clusterScoped {
				break
			}
		}
		c.custom[f.res.name] = &watched{res: f.gvr, listers: listers}
		resourceServed.WithLabelValues(f.res.name).Set(1)
		w.log.Infof("kubernetes: the API server serves %s (%s); watching it", f.res.name, f.gvr.Version)
	}
	c.run()
}
