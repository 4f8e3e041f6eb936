package kubernetes

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// verdict is the health of one Service's backends, and why.
type verdict struct {
	status health.Status
	reason string
}

// judge returns the verdict on the backends of ref, whose Service is svc (nil when it does not
// exist) with the EndpointSlices slices and the LoadBalancer addresses addrs: up when it has an
// address and at least one ready endpoint, down otherwise. An endpoint whose ready condition
// is not set counts as ready, as the EndpointSlice API asks of its readers.
func judge(ref config.KubernetesRef, svc *corev1.Service, slices []*discoveryv1.EndpointSlice, addrs []netip.Addr) verdict {
	switch {
	case svc == nil:
		return verdict{health.Down, fmt.Sprintf("kubernetes: no Service %s", ref)}
	case len(addrs) == 0:
		return verdict{health.Down, fmt.Sprintf("kubernetes: no LoadBalancer address of %s", ref)}
	}
	ready := 0
	for _, s := range slices {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				ready++
			}
		}
	}
	if ready == 0 {
		return verdict{health.Down, fmt.Sprintf("kubernetes: no ready endpoint in the EndpointSlices of %s", ref)}
	}
	return verdict{health.Up, fmt.Sprintf("kubernetes: %d ready endpoints of %s", ready, ref)}
}

// ingress returns the LoadBalancer addresses of svc, sorted and without repeats: its ingress
// IPs, and what resolved gives for its ingress host names; and the host names.
func ingress(svc *corev1.Service, resolved map[string][]netip.Addr) (addrs []netip.Addr, hostnames []string) {
	if svc == nil {
		return nil, nil
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil {
			addrs = append(addrs, a.Unmap())
		}
		if in.Hostname != "" {
			hostnames = append(hostnames, in.Hostname)
			addrs = append(addrs, resolved[in.Hostname]...)
		}
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	return slices.Compact(addrs), hostnames
}
