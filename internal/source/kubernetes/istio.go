package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/meridian-gslb/meridian/internal/source/istiosync"
)

// istioTimeout bounds one read of istiod's sync status.
const istioTimeout = 5 * time.Second

// istioCheck is the Istio check (istio_sync_check): the last judgement of each Istio ingress
// gateway Service, by namespace/name, from istiod's sync status of its ready pods' proxies,
// damped (istiosync.Damper): down at once, up again after istiosync.Recovery synced rounds.
type istioCheck struct {
	url    string
	client *http.Client
	damper istiosync.Damper
	// failing is why each checked Service fails ("" while it passes); the watcher's mu guards it.
	failing map[string]string
}

// newIstioCheck returns the check that reads url.
func newIstioCheck(url string) *istioCheck {
	return &istioCheck{url: url, client: &http.Client{Timeout: istioTimeout}, failing: map[string]string{}}
}

// failingReason returns why the Service key fails the check, empty when it passes.
func (c *istioCheck) failingReason(key string) string {
	why, ok := c.failing[key]
	if !ok {
		return "its sync status was not read yet"
	}
	return why
}

// isIstioGateway reports whether svc selects Istio's ingress gateway pods (istio:
// ingressgateway), the Services the Istio check applies to.
func isIstioGateway(svc *corev1.Service) bool { return svc.Spec.Selector["istio"] == "ingressgateway" }

// checkIstio reads istiod's sync status once, from every replica, and judges every Istio
// gateway Service with ready pods that a merged backend depends on: each of those pods'
// proxies must have listeners, routes, clusters and endpoints synced with the replica that
// serves it. The verdicts are refreshed after.
func (w *Watcher) checkIstio(ctx context.Context) {
	c := w.istio
	w.mu.Lock()
	pods := map[string][]string{} // the ready pods of each gateway Service
	if w.conn != nil {
		for _, u := range w.merged {
			t := w.targetLocked(u.ref, u.record)
			for _, s := range append(t.services, t.frontends...) {
				svc := w.conn.service(s.Namespace, s.Name)
				if svc == nil || !isIstioGateway(svc) {
					continue
				}
				// A Service without a ready pod fails on its endpoints already: it is not judged
				// here, and its pods' first read decides at once when they come back.
				if _, p := readyEndpoints(w.conn.endpointSlices(s.Namespace, s.Name)); len(p) > 0 {
					slices.Sort(p)
					pods[s.String()] = p
				}
			}
		}
	}
	urls := w.istiodURLsLocked()
	w.mu.Unlock()
	if len(pods) == 0 {
		c.damper.Forget(func(string) bool { return false })
		return
	}
	status, err := c.fetch(ctx, urls)
	if ctx.Err() != nil {
		return
	}
	istioReads.WithLabelValues(result(err)).Inc()
	if err != nil {
		w.log.Warningf("kubernetes: the Istio check: %v", err)
	}
	failing := make(map[string]string, len(pods))
	for key, p := range pods {
		synced, why := false, ""
		switch {
		case status == nil:
			why = "reading the sync status: " + err.Error()
		case err != nil:
			if synced, why = istiosync.Judge(status, p); !synced {
				why += " (a replica could not be read: " + err.Error() + ")"
			}
		default:
			synced, why = istiosync.Judge(status, p)
		}
		if c.damper.Observe(key, synced) {
			why = ""
		} else if synced {
			why = fmt.Sprintf("synced, but not yet in %d checks in a row", istiosync.Recovery)
		}
		failing[key] = why
	}
	c.damper.Forget(func(key string) bool { _, ok := pods[key]; return ok })
	w.mu.Lock()
	c.failing = failing
	w.mu.Unlock()
	w.kick()
}

// istiodURLsLocked returns the sync status URLs of every istiod replica: when the check's URL
// names a Service (SERVICE.NAMESPACE.svc...) whose EndpointSlices the informers hold, the URL
// of each ready endpoint (its address, and the endpoint port of the URL's Service port); else
// the URL itself (one replica answers it), which is logged once when there are replicas.
func (w *Watcher) istiodURLsLocked() []string {
	c := w.istio
	u, err := url.Parse(c.url)
	if err != nil || w.conn == nil {
		return []string{c.url}
	}
	labels := strings.Split(u.Hostname(), ".")
	if len(labels) < 3 || labels[2] != "svc" {
		return []string{c.url}
	}
	ref := serviceRef{labels[1], labels[0]}
	svc := w.conn.service(ref.Namespace, ref.Name)
	if svc == nil {
		w.warnOnce("istiod", "kubernetes: the Istio check: the Service %s is not watched (kubernetes_namespaces): only the replica %s answers is read", ref, c.url)
		return []string{c.url}
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	portName := ""
	for _, p := range svc.Spec.Ports {
		if strconv.Itoa(int(p.Port)) == port {
			portName = p.Name
		}
	}
	var urls []string
	for _, slice := range w.conn.endpointSlices(ref.Namespace, ref.Name) {
		target := ""
		for _, p := range slice.Ports {
			if p.Port != nil && (p.Name != nil && *p.Name == portName || len(slice.Ports) == 1) {
				target = strconv.Itoa(int(*p.Port))
			}
		}
		if target == "" {
			continue
		}
		for _, ep := range slice.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready || len(ep.Addresses) == 0 {
				continue
			}
			r := *u
			r.Host = net.JoinHostPort(ep.Addresses[0], target)
			urls = append(urls, r.String())
		}
	}
	if len(urls) == 0 {
		return []string{c.url}
	}
	slices.Sort(urls)
	return slices.Compact(urls)
}

// fetch reads the sync status at every URL of urls at once and merges what it read, with the
// errors of the replicas it could not read: a pod such a replica serves is not in the status,
// and fails. It returns a nil status when no replica could be read.
func (c *istioCheck) fetch(ctx context.Context, urls []string) (map[string]istiosync.Proxy, error) {
	statuses := make([]map[string]istiosync.Proxy, len(urls))
	errs := make([]error, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() { statuses[i], errs[i] = istiosync.Fetch(ctx, c.client, u) })
	}
	wg.Wait()
	err := errors.Join(errs...)
	if !slices.ContainsFunc(errs, func(e error) bool { return e == nil }) {
		return nil, err
	}
	return istiosync.Merge(statuses...), err
}
