package kubernetes

import (
	"context"
	"encoding/json"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
)

// gslbStatus is the status Meridian writes to a Gslb, in k8gb's fields.
type gslbStatus struct {
	ServiceHealth  map[string]string   `json:"serviceHealth"`
	HealthyRecords map[string][]string `json:"healthyRecords"`
	GeoTag         string              `json:"geoTag"`
	Hosts          string              `json:"hosts,omitempty"`
	LoadBalancer   gslbLoadBalancer    `json:"loadBalancer"`
	Servers        []gslbServer        `json:"servers,omitempty"`
}

// gslbLoadBalancer lists the Gslb's addresses in this cluster.
type gslbLoadBalancer struct {
	ExposedIPs []string `json:"exposedIps,omitempty"`
}

// gslbServer is a host of the Gslb and the Services behind it.
type gslbServer struct {
	Host     string        `json:"host"`
	Services []gslbService `json:"services,omitempty"`
}

// gslbService names a Service behind a host.
type gslbService struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// The health of a host in a Gslb's status.serviceHealth, as k8gb writes it.
const (
	hostHealthy   = "Healthy"
	hostUnhealthy = "Unhealthy"
	hostNotFound  = "NotFound"
)

// hostHealthLocked returns a host's status.serviceHealth as k8gb judges it, from its Services
// alone: with policy any, Healthy when one has a ready endpoint, else Unhealthy when one exists,
// else NotFound (no Service, or none exists); with policy all, NotFound when one does not
// exist, else Unhealthy when one has no ready endpoint, else Healthy.
func (w *Watcher) hostHealthLocked(services []serviceRef, policy config.HealthPolicy) string {
	var healthy, unhealthy, missing int
	for _, s := range services {
		switch {
		case w.conn.service(s.Namespace, s.Name) == nil:
			missing++
		case hasReadyAddress(w.conn, s):
			healthy++
		default:
			unhealthy++
		}
	}
	switch {
	case len(services) == 0:
		return hostNotFound
	case policy == config.PolicyAll && missing > 0:
		return hostNotFound
	case policy == config.PolicyAll && unhealthy > 0:
		return hostUnhealthy
	case policy == config.PolicyAll, healthy > 0:
		return hostHealthy
	case unhealthy > 0:
		return hostUnhealthy
	}
	return hostNotFound
}

// hasReadyAddress reports whether the Service s has an endpoint with an address that is
// ready (or whose readiness is not set), k8gb's test.
func hasReadyAddress(c *conn, s serviceRef) bool {
	for _, slice := range c.endpointSlices(s.Namespace, s.Name) {
		for _, ep := range slice.Endpoints {
			if len(ep.Addresses) > 0 && (ep.Conditions.Ready == nil || *ep.Conditions.Ready) {
				return true
			}
		}
	}
	return false
}

// statusLocked returns the status of g: each host's health in this cluster (serviceHealth, as
// k8gb judges it), the addresses the record answers with across sites (healthyRecords; a host
// answered with nothing is left out, as k8gb leaves it), this site's geo tag, and its objects'
// addresses and Services.
func (w *Watcher) statusLocked(g *gslb, answered map[string][]netip.Addr) gslbStatus {
	st := g.st
	status := gslbStatus{ServiceHealth: map[string]string{}, HealthyRecords: map[string][]string{}, GeoTag: w.site}
	var hosts []string
	exposed := map[netip.Addr]bool{}
	for _, h := range g.hosts {
		name := strings.TrimSuffix(h.name, ".")
		hosts = append(hosts, name)
		server := gslbServer{Host: name}
		for _, s := range h.services {
			server.Services = append(server.Services, gslbService(s))
		}
		status.Servers = append(status.Servers, server)
		status.ServiceHealth[name] = w.hostHealthLocked(h.services, st.policy)
		for _, ref := range h.refs {
			ref.Exposed = st.exposed
			for _, a := range w.targetLocked(ref, h.name).addrs {
				exposed[a] = true
			}
		}
		if addrs := answered[h.name]; h.served && len(addrs) > 0 {
			for _, a := range addrs {
				status.HealthyRecords[name] = append(status.HealthyRecords[name], a.String())
			}
		}
	}
	for _, a := range slices.SortedFunc(maps.Keys(exposed), netip.Addr.Compare) {
		status.LoadBalancer.ExposedIPs = append(status.LoadBalancer.ExposedIPs, a.String())
	}
	status.Hosts = strings.Join(hosts, ", ")
	return status
}

// writeStatuses writes the status of every served Gslb whose status changed since written,
// and keeps the objects Meridian keeps for k8gb's resources (keepObjects). A write that fails
// is logged, and tried again at the next round.
func (w *Watcher) writeStatuses(ctx context.Context) {
	type write struct {
		g   *gslb
		st  gslbStatus
		obj *unstructured.Unstructured
	}
	w.statusMu.Lock() // one round at a time: the refresh loop's and the periodic one
	defer w.statusMu.Unlock()
	w.mu.Lock()
	if w.conn == nil || !w.opts.K8gb {
		w.mu.Unlock()
		return
	}
	c := w.conn
	keeps := w.keepsLocked()
	served := map[string]bool{}
	for _, g := range w.gslbs {
		served[string(g.uid)] = true
	}
	maps.DeleteFunc(w.written, func(uid string, _ gslbStatus) bool { return !served[uid] })
	var writes []write
	answered := map[string][]netip.Addr{}
	for _, g := range w.gslbs {
		for _, h := range g.hosts {
			answered[h.name] = nil
		}
	}
	if w.served != nil {
		answeredAddrs(w.served(), answered)
	}
	for _, g := range w.gslbs {
		obj := c.dynamicGet(g.res, g.namespace, g.name)
		if obj == nil {
			continue
		}
		status := w.statusLocked(g, answered)
		if last, ok := w.written[string(g.uid)]; ok && reflect.DeepEqual(last, status) {
			continue
		}
		writes = append(writes, write{g, status, obj})
	}
	w.mu.Unlock()
	for _, k := range keeps {
		err := k.apply(ctx, c)
		statusWrites.WithLabelValues(result(err)).Inc()
		if err != nil {
			w.log.Warningf("kubernetes: %s: %v", k.what, err)
			continue
		}
		w.mu.Lock()
		w.keptLocked(k)
		w.mu.Unlock()
	}
	for _, wr := range writes {
		err := updateStatus(ctx, c, wr.g, wr.obj, wr.st)
		statusWrites.WithLabelValues(result(err)).Inc()
		if err != nil {
			w.log.Warningf("kubernetes: writing the status of Gslb %s/%s: %v", wr.g.namespace, wr.g.name, err)
			continue
		}
		w.mu.Lock()
		w.written[string(wr.g.uid)] = wr.st
		w.mu.Unlock()
	}
}

// updateStatus writes st as the status of obj, the Gslb g, through the status subresource.
// A conflict (the object changed since the informers read it) reads it again and retries,
// without a log line: the next write is the one that counts.
func updateStatus(ctx context.Context, c *conn, g *gslb, obj *unstructured.Unstructured, st gslbStatus) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	var status map[string]any
	if err := json.Unmarshal(data, &status); err != nil {
		return err
	}
	client := c.dynamic.Resource(c.custom[g.res.name].res).Namespace(g.namespace)
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			fresh, err := client.Get(ctx, g.name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if fresh.GetUID() != g.uid {
				return apierrors.NewNotFound(c.custom[g.res.name].res.GroupResource(), g.name)
			}
			obj = fresh
		}
		first = false
		obj = obj.DeepCopy()
		obj.Object["status"] = status
		_, err := client.UpdateStatus(ctx, obj, metav1.UpdateOptions{FieldManager: fieldManager})
		if apierrors.IsConflict(err) {
			statusConflicts.Inc()
		}
		return err
	})
}

// fieldManager is the field manager of Meridian's writes.
const fieldManager = "meridian"

// answeredAddrs fills answered, whose keys are record names, with the addresses each record of
// snap answers with, sorted: its healthy backends, and for failover those of the priority
// group it answers with.
func answeredAddrs(snap *catalog.Snapshot, answered map[string][]netip.Addr) {
	if snap == nil {
		return
	}
	for _, r := range snap.Records() {
		if _, ok := answered[r.Name()]; !ok {
			continue
		}
		v := r.View()
		var addrs []netip.Addr
		for f := range v.Healthy {
			healthy := v.Healthy[f]
			if r.Config.Mode == config.ModeFailover && v.Sets[f] != nil {
				var idx []int
				for _, i := range v.Sets[f].Pick(netip.Addr{}, nil) {
					if i < len(healthy) {
						idx = append(idx, i)
					}
				}
				picked := make([]*catalog.Backend, 0, len(idx))
				for _, i := range idx {
					picked = append(picked, healthy[i])
				}
				healthy = picked
			}
			for _, b := range healthy {
				if b.Config.IP.IsValid() {
					addrs = append(addrs, b.Config.IP)
				}
			}
		}
		slices.SortFunc(addrs, netip.Addr.Compare)
		answered[r.Name()] = slices.Compact(addrs)
	}
}

// ingressKnown reports whether the informers hold the Ingress namespace/name.
func (w *Watcher) ingressKnown(namespace, name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.conn != nil && w.conn.ingress(namespace, name) != nil
}
