package kubernetes

import (
	"context"
	"fmt"
	"net/http"
	"slices"
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

// checkIstio reads istiod's sync status once and judges every Istio gateway Service with
// ready pods that a merged backend depends on: each of those pods' proxies must have
// listeners, routes, clusters and endpoints synced. The verdicts are refreshed after.
func (w *Watcher) checkIstio(ctx context.Context) {
	c := w.istio
	w.mu.Lock()
	pods := map[string][]string{} // the ready pods of each gateway Service
	if w.conn != nil {
		for _, u := range w.merged {
			t := w.targetLocked(u.ref, u.record)
			for _, s := range t.services {
				svc := w.conn.service(u.ref.Namespace, s)
				if svc == nil || !isIstioGateway(svc) {
					continue
				}
				// A Service without a ready pod fails on its endpoints already: it is not judged
				// here, and its pods' first read decides at once when they come back.
				if _, p := readyEndpoints(w.conn.endpointSlices(u.ref.Namespace, s)); len(p) > 0 {
					slices.Sort(p)
					pods[u.ref.Namespace+"/"+s] = p
				}
			}
		}
	}
	w.mu.Unlock()
	if len(pods) == 0 {
		c.damper.Forget(func(string) bool { return false })
		return
	}
	status, err := istiosync.Fetch(ctx, c.client, c.url)
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
		if err != nil {
			why = "reading the sync status: " + err.Error()
		} else {
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
