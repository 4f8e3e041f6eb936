package testutil

// KubeRoute returns the Gateway API route of kind (HTTPRoute, GRPCRoute, TLSRoute, TCPRoute,
// UDPRoute) in apiVersion, name in namespace, attached to the Gateway gateway of the same
// namespace, for hostnames (none for TCPRoute and UDPRoute, which have no such field), with
// one rule sending to services (port 80, as KubeService serves).
func KubeRoute(apiVersion, kind, namespace, name, gateway string, hostnames []string, services ...string) map[string]any {
	backends := []any{}
	for _, s := range services {
		backends = append(backends, map[string]any{"name": s, "port": 80})
	}
	spec := map[string]any{
		"parentRefs": []any{map[string]any{"name": gateway}},
		"rules":      []any{map[string]any{"backendRefs": backends}},
	}
	if len(hostnames) > 0 {
		spec["hostnames"] = hostnames
	}
	return map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": namespace}, "spec": spec}
}

// KubeIstioGateway returns the Istio Gateway (networking.istio.io/v1) name in namespace, whose
// selector is selector, serving hosts over HTTP on port 8080.
func KubeIstioGateway(namespace, name string, selector map[string]any, hosts ...string) map[string]any {
	h := []any{}
	for _, s := range hosts {
		h = append(h, s)
	}
	return map[string]any{"apiVersion": "networking.istio.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{"selector": selector,
			"servers": []any{map[string]any{"hosts": h, "port": map[string]any{"name": "http", "number": 8080, "protocol": "HTTP"}}}}}
}

// KubeVirtualService returns the Istio VirtualService (networking.istio.io/v1) name in
// namespace, labeled labels, bound to the Istio Gateway gateway ("namespace/name"), for hosts,
// with one HTTP route to each of destinations (Service host names).
func KubeVirtualService(namespace, name string, labels map[string]any, gateway string, hosts []string, destinations ...string) map[string]any {
	h := []any{}
	for _, s := range hosts {
		h = append(h, s)
	}
	routes := []any{}
	for _, d := range destinations {
		routes = append(routes, map[string]any{"destination": map[string]any{"host": d, "port": map[string]any{"number": 80}}})
	}
	return map[string]any{"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
		"metadata": map[string]any{"name": name, "namespace": namespace, "labels": labels},
		"spec":     map[string]any{"gateways": []any{gateway}, "hosts": h, "http": []any{map[string]any{"route": routes}}}}
}
