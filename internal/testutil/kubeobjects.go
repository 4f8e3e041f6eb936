package testutil

import (
	"fmt"
	"net/netip"
)

// KubeService returns a Service of type LoadBalancer in namespace, serving port 80, with
// ingress (IP addresses or host names) as its status.loadBalancer.ingress: apply it with
// Kube.Apply, and then Kube.ApplyStatus for the status, as a cloud controller would set it.
func KubeService(namespace, name string, ingress ...string) map[string]any {
	in := []any{}
	for _, a := range ingress {
		if _, err := netip.ParseAddr(a); err == nil {
			in = append(in, map[string]any{"ip": a})
		} else {
			in = append(in, map[string]any{"hostname": a})
		}
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{"type": "LoadBalancer", "selector": map[string]any{"app": name},
			"ports": []any{map[string]any{"name": "http", "port": 80, "protocol": "TCP"}}},
		"status": map[string]any{"loadBalancer": map[string]any{"ingress": in}},
	}
}

// KubeNamespace returns the Namespace name, to Apply before the objects in it.
func KubeNamespace(name string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}
}

// KubeEndpointSlice returns the EndpointSlice name of service in namespace, as the
// EndpointSlice controller would write it: one IPv4 endpoint per entry of ready, with that
// ready condition, each the pod SERVICE-I (I from 0).
func KubeEndpointSlice(namespace, name, service string, ready ...bool) map[string]any {
	endpoints := []any{}
	for i, r := range ready {
		endpoints = append(endpoints, map[string]any{
			"addresses":  []any{netip.AddrFrom4([4]byte{10, 1, 0, byte(i + 1)}).String()},
			"conditions": map[string]any{"ready": r},
			"targetRef":  map[string]any{"kind": "Pod", "namespace": namespace, "name": fmt.Sprintf("%s-%d", service, i)},
		})
	}
	return map[string]any{
		"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
		"metadata": map[string]any{"name": name, "namespace": namespace,
			"labels": map[string]any{"kubernetes.io/service-name": service}},
		"addressType": "IPv4",
		"ports":       []any{map[string]any{"name": "http", "port": 8080, "protocol": "TCP"}},
		"endpoints":   endpoints,
	}
}
