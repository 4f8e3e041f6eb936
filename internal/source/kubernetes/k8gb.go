package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// gslb is one of k8gb's Gslb resources as Meridian serves it.
type gslb struct {
	res             schema.GroupVersionResource
	namespace, name string
	uid             types.UID
	// embedded is the Ingress spec the Gslb embeds (spec.ingress), which Meridian keeps as an
	// Ingress of the Gslb's name; nil for a Gslb with a resourceRef.
	embedded map[string]any
	// hosts are the hosts of its Ingresses' rules, sorted.
	hosts []*gslbHost
}

// gslbHost is one host of a Gslb: a record, whose backends in this cluster are the Ingresses
// with a rule for it.
type gslbHost struct {
	gslb      *gslb
	name      string // canonical
	ingresses []config.KubernetesRef
	// served is set by the merge that added the record to a zone.
	served bool
}

// gslbStatus is the status Meridian writes to a Gslb, in k8gb's fields.
type gslbStatus struct {
	ServiceHealth  map[string]string   `json:"serviceHealth"`
	HealthyRecords map[string][]string `json:"healthyRecords"`
	GeoTag         string              `json:"geoTag,omitempty"`
	Hosts          string              `json:"hosts"`
	LoadBalancer   gslbLoadBalancer    `json:"loadBalancer"`
	Servers        []gslbServer        `json:"servers"`
}

// gslbLoadBalancer lists the Gslb's addresses in this cluster.
type gslbLoadBalancer struct {
	ExposedIPs []string `json:"exposedIps"`
}

// gslbServer is a host of the Gslb and the Services behind it.
type gslbServer struct {
	Host     string        `json:"host"`
	Services []gslbService `json:"services"`
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

// gslbAdditionsLocked returns the records of the Gslb resources the informers hold, one per
// host (see strategy for how a Gslb's strategy becomes the record's mode and backends). A
// Gslb that cannot be served is logged.
func (w *Watcher) gslbAdditionsLocked() []addition {
	var adds []addition
	for _, res := range gslbResources {
		for _, obj := range w.conn.dynamicList(res) {
			g, st, err := w.parseGslbLocked(res, obj)
			from := fmt.Sprintf("Gslb %s/%s (%s)", obj.GetNamespace(), obj.GetName(), res.Group)
			if err != nil {
				w.warnOnce(from, "kubernetes: %s: %v; it is not served", from, err)
				continue
			}
			for _, h := range g.hosts {
				adds = append(adds, addition{record: h.name, mode: st.mode, ttl: st.ttl, splitBrain: st.splitBrain, backends: st.backends(h, w.site, w.opts.K8gbSites),
					from: from, exclusive: true, host: h})
			}
		}
	}
	return adds
}

// strategy is a Gslb's spec.strategy (and serviceHealthPolicy) in Meridian's terms.
type strategy struct {
	mode config.Mode
	ttl  uint32
	// splitBrain is splitBrainThresholdSeconds: the record's split-brain threshold (0: the
	// block's).
	splitBrain time.Duration
	primary    string
	weights    map[string]int32
	policy     config.HealthPolicy
}

// backends returns the backends of host: its Ingresses in this cluster (this site's), and a
// placeholder for each other site, whose targets the sites source learns from it; with the
// weight of their geo tag (weighted round robin), or priority 1 for the primary geo tag and 2
// for the others (failover).
func (s strategy) backends(h *gslbHost, own string, others []string) []config.Backend {
	shape := func(b config.Backend, site string) config.Backend {
		b.Enable, b.Priority, b.Weight = true, config.DefaultPriority, config.DefaultWeight
		if s.mode == config.ModeFailover {
			b.Priority = 2
			if site == s.primary {
				b.Priority = 1
			}
		}
		if s.weights != nil {
			b.Weight = s.weights[site]
		}
		if b.Site() == "" {
			l := b.Labels()
			l.Location = site
			b.SetLabels(l)
		}
		return b
	}
	var out []config.Backend
	pos := config.InFile("Gslb " + h.gslb.namespace + "/" + h.gslb.name)
	for _, ref := range h.ingresses {
		ref.Policy = s.policy
		out = append(out, shape(config.Backend{Pos: pos}.WithOrigin(config.Origin{Kubernetes: &ref}), own))
	}
	if own == "" {
		return out // no sites: this cluster only
	}
	for _, site := range others {
		if site != own {
			out = append(out, shape(config.Backend{Pos: pos}.WithOrigin(config.Origin{Site: site}), site))
		}
	}
	return out
}

// parseGslbLocked returns the Gslb obj of res and its strategy: its hosts come from its
// embedded ingress, or from the Ingresses its resourceRef names or selects.
func (w *Watcher) parseGslbLocked(res schema.GroupVersionResource, obj *unstructured.Unstructured) (*gslb, strategy, error) {
	g := &gslb{res: res, namespace: obj.GetNamespace(), name: obj.GetName(), uid: obj.GetUID()}
	st, err := parseStrategy(obj)
	if err != nil {
		return nil, st, err
	}
	var ingresses []*networkingv1.Ingress
	if embedded, ok, _ := unstructured.NestedMap(obj.Object, "spec", "ingress"); ok && len(embedded) > 0 {
		g.embedded = embedded
		var spec networkingv1.IngressSpec
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(embedded, &spec); err != nil {
			return nil, st, fmt.Errorf("spec.ingress: %w", err)
		}
		ingresses = []*networkingv1.Ingress{{ObjectMeta: metav1.ObjectMeta{Namespace: g.namespace, Name: g.name}, Spec: spec}}
	} else if ingresses, err = w.resourceRefLocked(obj); err != nil {
		return nil, st, err
	}
	byHost := map[string]*gslbHost{}
	for _, in := range ingresses {
		for _, r := range in.Spec.Rules {
			if r.Host == "" || strings.HasPrefix(r.Host, "*") {
				continue
			}
			name := config.CanonicalName(r.Host)
			h := byHost[name]
			if h == nil {
				h = &gslbHost{gslb: g, name: name}
				byHost[name] = h
			}
			ref := config.KubernetesRef{Namespace: in.Namespace, Kind: config.KindIngress, Name: in.Name}
			if !slices.ContainsFunc(h.ingresses, func(x config.KubernetesRef) bool { return x.Key() == ref.Key() }) {
				h.ingresses = append(h.ingresses, ref)
			}
		}
	}
	if len(byHost) == 0 {
		return nil, st, fmt.Errorf("its ingress has no rule with a host")
	}
	for _, name := range slices.Sorted(maps.Keys(byHost)) {
		g.hosts = append(g.hosts, byHost[name])
	}
	return g, st, nil
}

// resourceRefLocked returns the Ingresses that obj's spec.resourceRef names (name) or selects
// (matchLabels, matchExpressions), in obj's namespace.
func (w *Watcher) resourceRefLocked(obj *unstructured.Unstructured) ([]*networkingv1.Ingress, error) {
	ref, ok, _ := unstructured.NestedMap(obj.Object, "spec", "resourceRef")
	if !ok {
		return nil, fmt.Errorf("it has neither spec.ingress nor spec.resourceRef")
	}
	if kind, _ := ref["kind"].(string); kind != "" && kind != "Ingress" {
		return nil, fmt.Errorf("spec.resourceRef: kind %s is not supported (only Ingress)", kind)
	}
	ns := obj.GetNamespace()
	if n, _ := ref["namespace"].(string); n != "" {
		ns = n
	}
	if name, _ := ref["name"].(string); name != "" {
		in := w.conn.ingress(ns, name)
		if in == nil {
			return nil, fmt.Errorf("spec.resourceRef: no Ingress %s/%s", ns, name)
		}
		return []*networkingv1.Ingress{in}, nil
	}
	var sel metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(ref, &sel); err != nil {
		return nil, fmt.Errorf("spec.resourceRef: %w", err)
	}
	selector, err := metav1.LabelSelectorAsSelector(&sel)
	if err != nil || selector.Empty() {
		return nil, fmt.Errorf("spec.resourceRef: it needs a name or a label selector (%v)", err)
	}
	l := w.conn.ingresses[w.conn.factoryNamespace(ns)]
	if l == nil {
		return nil, fmt.Errorf("spec.resourceRef: the namespace %s is not watched", ns)
	}
	found, _ := l.Ingresses(ns).List(selector)
	if len(found) == 0 {
		return nil, fmt.Errorf("spec.resourceRef: no Ingress in %s matches %s", ns, selector)
	}
	slices.SortFunc(found, func(a, b *networkingv1.Ingress) int { return strings.Compare(a.Name, b.Name) })
	return found, nil
}

// parseStrategy returns obj's strategy: roundRobin is round robin, or weighted round robin
// with weights; failover needs a primaryGeoTag; geoip is geoip over the sites' geo tags.
func parseStrategy(obj *unstructured.Unstructured) (strategy, error) {
	s := strategy{policy: config.PolicyAny}
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec", "strategy")
	typ, _ := spec["type"].(string)
	switch typ {
	case "roundRobin":
		s.mode = config.ModeRoundRobin
	case "failover":
		s.mode = config.ModeFailover
		if s.primary, _ = spec["primaryGeoTag"].(string); s.primary == "" {
			return s, fmt.Errorf("strategy failover needs a primaryGeoTag")
		}
	case "geoip":
		s.mode = config.ModeGeoIP
	default:
		return s, fmt.Errorf("unknown strategy type %q (valid: roundRobin, failover, geoip)", typ)
	}
	if weights, ok := spec["weight"].(map[string]any); ok && len(weights) > 0 {
		s.weights = map[string]int32{}
		for tag, v := range weights {
			n, err := weight(v)
			if err != nil {
				return s, fmt.Errorf("strategy weight %s: %w", tag, err)
			}
			s.weights[tag] = n
		}
		if s.mode == config.ModeRoundRobin {
			s.mode = config.ModeWeighted
		}
	}
	if ttl, ok := spec["dnsTtlSeconds"].(int64); ok && ttl > 0 {
		s.ttl = uint32(min(ttl, 1<<31-1))
	}
	if secs, ok := spec["splitBrainThresholdSeconds"].(int64); ok && secs > 0 {
		s.splitBrain = time.Duration(min(secs, math.MaxInt64/int64(time.Second))) * time.Second
	}
	if p, _, _ := unstructured.NestedString(obj.Object, "spec", "serviceHealthPolicy"); p != "" {
		policy, err := config.ParseHealthPolicy(p)
		if err != nil {
			return s, fmt.Errorf("serviceHealthPolicy: %w", err)
		}
		s.policy = policy
	}
	return s, nil
}

// weight returns a geo tag's weight: a number (k8gb.io), or a percentage such as "30%" (the
// legacy k8gb.absa.oss group).
func weight(v any) (int32, error) {
	switch v := v.(type) {
	case int64:
		if v >= 0 && v <= math.MaxInt32 {
			return int32(v), nil
		}
	case float64:
		if v >= 0 && v <= math.MaxInt32 && v == float64(int32(v)) {
			return int32(v), nil
		}
	case string:
		if n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), "%"), 10, 32); err == nil && n >= 0 {
			return int32(n), nil
		}
	}
	return 0, fmt.Errorf("%v is not a weight (a number, or a percentage such as 30%%)", v)
}

// statusLocked returns the status of g: each host's health in this cluster (serviceHealth:
// the verdict on its Ingresses, NotFound when none exists), the addresses the record is
// answered with across sites (healthyRecords), this site's geo tag, and its Ingresses'
// addresses and Services.
func (w *Watcher) statusLocked(g *gslb, healthy map[string][]netip.Addr) gslbStatus {
	st := gslbStatus{ServiceHealth: map[string]string{}, HealthyRecords: map[string][]string{}, GeoTag: w.site,
		LoadBalancer: gslbLoadBalancer{ExposedIPs: []string{}}, Servers: []gslbServer{}}
	var hosts []string
	exposed := map[netip.Addr]bool{}
	for _, h := range g.hosts {
		name := strings.TrimSuffix(h.name, ".")
		hosts = append(hosts, name)
		state, server := hostNotFound, gslbServer{Host: name, Services: []gslbService{}}
		for _, ref := range h.ingresses {
			t := w.targetLocked(ref, h.name)
			if !t.found {
				continue
			}
			for _, a := range t.addrs {
				exposed[a] = true
			}
			for _, s := range t.services {
				server.Services = append(server.Services, gslbService{Namespace: ref.Namespace, Name: s})
			}
			v := judge(ref, t, func(s string) serviceHealth { return w.serviceHealthLocked(ref.Namespace, s) })
			if v.status == health.Up {
				state = hostHealthy
			} else if state == hostNotFound {
				state = hostUnhealthy
			}
		}
		st.ServiceHealth[name] = state
		st.Servers = append(st.Servers, server)
		st.HealthyRecords[name] = []string{}
		if h.served {
			for _, a := range healthy[h.name] {
				st.HealthyRecords[name] = append(st.HealthyRecords[name], a.String())
			}
		}
	}
	for _, a := range slices.SortedFunc(maps.Keys(exposed), netip.Addr.Compare) {
		st.LoadBalancer.ExposedIPs = append(st.LoadBalancer.ExposedIPs, a.String())
	}
	st.Hosts = strings.Join(hosts, ", ")
	return st
}

// writeStatuses writes the status of every served Gslb whose status changed since written,
// and keeps the Ingress of each Gslb that embeds one. A write that fails is logged, and
// tried again at the next round.
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
	served := map[string]bool{}
	for _, g := range w.gslbs {
		served[string(g.uid)] = true
	}
	maps.DeleteFunc(w.written, func(uid string, _ gslbStatus) bool { return !served[uid] })
	var writes []write
	healthy := map[string][]netip.Addr{}
	for _, g := range w.gslbs {
		for _, h := range g.hosts {
			healthy[h.name] = nil
		}
	}
	if w.served != nil {
		healthyAddrs(w.served(), healthy)
	}
	for _, g := range w.gslbs {
		st := w.statusLocked(g, healthy)
		if last, ok := w.written[string(g.uid)]; ok && reflect.DeepEqual(last, st) && (g.embedded == nil || w.conn.ingress(g.namespace, g.name) != nil) {
			continue
		}
		if obj := c.dynamicGet(g.res, g.namespace, g.name); obj != nil {
			writes = append(writes, write{g, st, obj})
		}
	}
	w.mu.Unlock()
	for _, wr := range writes {
		if wr.g.embedded != nil {
			err := applyIngress(ctx, c, wr.g)
			statusWrites.WithLabelValues(result(err)).Inc()
			if err != nil {
				w.log.Warningf("kubernetes: keeping the Ingress of Gslb %s/%s: %v", wr.g.namespace, wr.g.name, err)
			}
		}
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

// legacyGroup is the group of k8gb's first releases.
const legacyGroup = "k8gb.absa.oss"

// updateStatus writes st as the status of obj, the Gslb g, through the status subresource.
func updateStatus(ctx context.Context, c *conn, g *gslb, obj *unstructured.Unstructured, st gslbStatus) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	var status map[string]any
	if err := json.Unmarshal(data, &status); err != nil {
		return err
	}
	if g.res.Group == legacyGroup { // its status has k8gb's first four fields only
		delete(status, "loadBalancer")
		delete(status, "servers")
	}
	obj = obj.DeepCopy()
	obj.Object["status"] = status
	_, err = c.dynamic.Resource(g.res).Namespace(g.namespace).UpdateStatus(ctx, obj, metav1.UpdateOptions{FieldManager: "meridian"})
	return err
}

// applyIngress keeps the Ingress that the Gslb g embeds, named as g and owned by it, as k8gb
// does: created when missing, its spec made g's (server-side apply).
func applyIngress(ctx context.Context, c *conn, g *gslb) error {
	ing := map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
		"metadata": map[string]any{"name": g.name, "namespace": g.namespace,
			"ownerReferences": []any{map[string]any{"apiVersion": g.res.GroupVersion().String(), "kind": "Gslb", "name": g.name, "uid": string(g.uid), "controller": true}}},
		"spec": g.embedded,
	}
	data, err := json.Marshal(ing)
	if err != nil {
		return err
	}
	force := true
	_, err = c.client.NetworkingV1().Ingresses(g.namespace).Patch(ctx, g.name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "meridian", Force: &force})
	return err
}

// healthyAddrs fills healthy, whose keys are record names, with the addresses of each record's
// healthy backends in snap, sorted.
func healthyAddrs(snap *catalog.Snapshot, healthy map[string][]netip.Addr) {
	if snap == nil {
		return
	}
	for _, r := range snap.Records() {
		if _, ok := healthy[r.Name()]; !ok {
			continue
		}
		var addrs []netip.Addr
		for _, b := range r.Backends {
			if b.Healthy() && b.Config.IP.IsValid() {
				addrs = append(addrs, b.Config.IP)
			}
		}
		slices.SortFunc(addrs, netip.Addr.Compare)
		healthy[r.Name()] = slices.Compact(addrs)
	}
}

// ingressKnown reports whether the informers hold the Ingress namespace/name.
func (w *Watcher) ingressKnown(namespace, name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.conn != nil && w.conn.ingress(namespace, name) != nil
}
