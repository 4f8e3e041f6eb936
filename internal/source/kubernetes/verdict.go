package kubernetes

import (
	"fmt"
	"strings"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// verdict is the health of one kubernetes backend's addresses, and why.
type verdict struct {
	status health.Status
	reason string
}

// serviceHealth is one Service's signals: how many of its endpoints are ready, and why it
// fails (empty when it passes).
type serviceHealth struct {
	ready  int
	failed string
}

// judge returns the verdict on the backends of ref, whose object the cluster describes as t,
// with health giving each Service's signals: down when the object is missing, has no
// external address (or a part of the chain it needs is missing), is a Gateway (or a route
// whose parent Gateway) its controller has not programmed, or a frontend Service fails; else,
// with Services to judge it, up when any of them passes (policy any) or all of them do (all);
// else up.
func judge(ref config.KubernetesRef, t target, health func(serviceRef) serviceHealth) verdict {
	switch {
	case !t.found:
		return down("no %s", ref)
	case t.missing != "":
		return down("%s", t.missing)
	case len(t.addrs) == 0:
		return down("no external address of %s", ref)
	case t.notProgrammed != "":
		return down("%s is %s", ref, t.notProgrammed)
	}
	for _, f := range t.frontends {
		if h := health(f); h.failed != "" {
			return down("%s (the gateway of %s)", h.failed, ref)
		}
	}
	if len(t.services) == 0 {
		return up("%s has an address", ref)
	}
	var passed, ready int
	var failed []string
	for _, s := range t.services {
		h := health(s)
		if h.failed != "" {
			failed = append(failed, h.failed)
			continue
		}
		passed++
		ready += h.ready
	}
	switch {
	case passed == 0, ref.Policy == config.PolicyAll && len(failed) > 0:
		return down("%s", strings.Join(failed, "; "))
	case len(failed) > 0:
		return up("%d ready endpoints of %s (policy any; %s)", ready, ref, strings.Join(failed, "; "))
	}
	return up("%d ready endpoints of %s", ready, ref)
}

// down and up return the verdicts with a reason formatted as fmt.Sprintf does.
func down(format string, args ...any) verdict {
	return verdict{health.Down, "kubernetes: " + fmt.Sprintf(format, args...)}
}

func up(format string, args ...any) verdict {
	return verdict{health.Up, "kubernetes: " + fmt.Sprintf(format, args...)}
}

// serviceHealthLocked returns the signals of the Service namespace/name: it exists, has a
// ready endpoint and, with the Istio check on and for a Service of Istio's ingress gateway,
// its pods' proxies are synced.
func (w *Watcher) serviceHealthLocked(ref serviceRef) serviceHealth {
	namespace, name := ref.Namespace, ref.Name
	svc := w.conn.service(namespace, name)
	if svc == nil {
		return serviceHealth{failed: fmt.Sprintf("no Service %s/%s", namespace, name)}
	}
	ready, _ := readyEndpoints(w.conn.endpointSlices(namespace, name))
	if ready == 0 {
		return serviceHealth{failed: fmt.Sprintf("no ready endpoint in the EndpointSlices of %s/%s", namespace, name)}
	}
	if w.istio != nil && isIstioGateway(svc) {
		if why := w.istio.failingReason(namespace + "/" + name); why != "" {
			return serviceHealth{failed: fmt.Sprintf("the istio-proxy of %s/%s: %s", namespace, name, why)}
		}
	}
	return serviceHealth{ready: ready}
}
