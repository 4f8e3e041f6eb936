package kubernetes

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meridian-gslb/meridian/internal/config"
)

// k8gb's annotations, on a Gslb (or, for the annotation form, on an Ingress).
const (
	// annotationHostname is the host of a Gslb whose resourceRef has none of its own (a
	// LoadBalancer Service, a TCPRoute or a UDPRoute).
	annotationHostname = "k8gb.io/hostname"
	// annotationExposedIPs and annotationExposedHostnames replace the addresses this cluster
	// answers for the Gslb's hosts (comma-separated; the host names win).
	annotationExposedIPs       = "k8gb.io/exposed-ip-addresses"
	annotationExposedHostnames = "k8gb.io/exposed-hostnames"
)

// gslb is one of k8gb's Gslb resources as Meridian serves it.
type gslb struct {
	res             custom
	namespace, name string
	uid             types.UID
	// embedded is the Ingress spec the Gslb embeds (spec.ingress), which Meridian keeps as an
	// Ingress of the Gslb's name; nil for a Gslb with a resourceRef.
	embedded map[string]any
	// hosts are the hosts of the objects it references, in their order (k8gb's).
	hosts []*gslbHost
	// st is its strategy.
	st strategy
}

// gslbHost is one host of a Gslb: a record, whose backends in this cluster are the objects
// that serve it.
type gslbHost struct {
	gslb *gslb
	name string // canonical
	// refs are this cluster's objects with the host (their addresses are the record's).
	refs []config.KubernetesRef
	// services are the Services that k8gb judges the host by (its status's servers).
	services []serviceRef
	// served is set by the merge that added the record to a zone.
	served bool
}

// gslbAdditionsLocked returns the records of the Gslb resources the informers hold, one per
// host (see strategy for how a Gslb's strategy becomes the record's mode and backends). A
// Gslb that cannot be served is logged; a legacy one (k8gb.absa.oss) is not served when a
// Gslb of k8gb.io has its namespace and name (k8gb's migration made it).
func (w *Watcher) gslbAdditionsLocked() []addition {
	var adds []addition
	for _, res := range gslbResources {
		for _, obj := range w.conn.dynamicList(res, "", nil) {
			from := fmt.Sprintf("Gslb %s/%s (%s)", obj.GetNamespace(), obj.GetName(), res.versions[0].Group)
			if res.name == legacyGslbResource.name && w.conn.dynamicGet(gslbResource, obj.GetNamespace(), obj.GetName()) != nil {
				w.warnOnce(from, "kubernetes: %s: a Gslb of k8gb.io has its name; the legacy one is not served", from)
				continue
			}
			g, st, err := w.parseGslbLocked(res, obj)
			if err != nil {
				w.warnOnce(from, "kubernetes: %s: %v; it is not served", from, err)
				continue
			}
			delete(w.warned, from) // served: a later error is logged again
			for _, h := range g.hosts {
				adds = append(adds, addition{record: h.name, mode: st.mode, ttl: st.ttl, splitBrain: st.splitBrain, backends: st.backends(h, w.site, w.opts.K8gbSites),
					from: from, exclusive: true, host: h})
			}
		}
	}
	return adds
}

// gslbFallback is what a Gslb's record answers while no cluster has a healthy address:
// nothing (NOERROR, no address, the zone's SOA), as k8gb answers nothing then.
var gslbFallback = config.Fallback{Mode: config.FallbackFailClosed, Rcode: dns.RcodeSuccess}

// strategy is a Gslb's spec.strategy (and serviceHealthPolicy, and its annotations) in
// Meridian's terms.
type strategy struct {
	mode config.Mode
	ttl  uint32
	// splitBrain is splitBrainThresholdSeconds: the record's split-brain threshold (0: the
	// block's).
	splitBrain time.Duration
	primary    string
	weights    map[string]int32
	policy     config.HealthPolicy
	// exposed replaces the addresses of this cluster's objects (k8gb.io/exposed-hostnames,
	// else k8gb.io/exposed-ip-addresses).
	exposed []string
}

// backends returns the backends of host: its objects in this cluster (this site's), and a
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
	for _, ref := range h.refs {
		ref.Policy, ref.Exposed = s.policy, s.exposed
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

// parseGslbLocked returns the Gslb obj of res and its strategy: its hosts come from the
// objects its resourceRef names or selects, or else from its embedded ingress.
func (w *Watcher) parseGslbLocked(res custom, obj *unstructured.Unstructured) (*gslb, strategy, error) {
	g := &gslb{res: res, namespace: obj.GetNamespace(), name: obj.GetName(), uid: obj.GetUID()}
	st, err := parseStrategy(obj)
	if err != nil {
		return nil, st, err
	}
	g.st = st
	var sources []hostSource
	ref, hasRef, _ := unstructured.NestedMap(obj.Object, "spec", "resourceRef")
	embedded, hasEmbedded, _ := unstructured.NestedMap(obj.Object, "spec", "ingress")
	switch {
	case hasRef && len(ref) > 0:
		if sources, err = w.resourceRefLocked(obj, ref); err != nil {
			return nil, st, fmt.Errorf("spec.resourceRef: %w", err)
		}
	case hasEmbedded && len(embedded) > 0:
		g.embedded = embedded
		if sources, err = embeddedSource(g, embedded); err != nil {
			return nil, st, err
		}
	default:
		return nil, st, fmt.Errorf("it has neither spec.resourceRef nor spec.ingress")
	}
	byHost := map[string]*gslbHost{}
	for _, src := range sources {
		for _, hs := range src.hosts {
			if hs.host == "" || strings.HasPrefix(hs.host, "*") {
				continue
			}
			name := config.CanonicalName(hs.host)
			h := byHost[name]
			if h == nil {
				h = &gslbHost{gslb: g, name: name}
				byHost[name] = h
				g.hosts = append(g.hosts, h)
			}
			if !containsRef(h.refs, src.ref) {
				h.refs = append(h.refs, src.ref)
			}
			for _, s := range hs.services {
				if !containsService(h.services, s) {
					h.services = append(h.services, s)
				}
			}
		}
	}
	if len(g.hosts) == 0 {
		return nil, st, fmt.Errorf("the objects it references have no host")
	}
	return g, st, nil
}

// containsRef reports whether refs has one of ref's object.
func containsRef(refs []config.KubernetesRef, ref config.KubernetesRef) bool {
	for _, r := range refs {
		if r.Key() == ref.Key() {
			return true
		}
	}
	return false
}

// containsService reports whether list has s.
func containsService(list []serviceRef, s serviceRef) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// parseStrategy returns obj's strategy: roundRobin answers every healthy address shuffled
// (random), as k8gb does, or with weights one drawn by weight (a weight of 0 takes no traffic
// while another has some); failover needs a
// primaryGeoTag; geoip is geoip over the sites' geo tags. The exposed addresses come from
// obj's annotations.
func parseStrategy(obj *unstructured.Unstructured) (strategy, error) {
	s := strategy{policy: config.PolicyAny}
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec", "strategy")
	typ, _ := spec["type"].(string)
	switch typ {
	case "roundRobin":
		s.mode = config.ModeRandom // k8gb answers every healthy address, shuffled
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
		if s.mode == config.ModeRandom {
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
	ann := obj.GetAnnotations()
	for _, key := range []string{annotationExposedHostnames, annotationExposedIPs} {
		if v, ok := ann[key]; ok {
			s.exposed = splitList(v)
			if len(s.exposed) == 0 {
				return s, fmt.Errorf("annotation %s lists nothing", key)
			}
			break
		}
	}
	return s, nil
}

// weight returns a geo tag's weight: a number, or a percentage such as "30%" (the first
// releases of the legacy k8gb.absa.oss group).
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

// legacyGroup is the group of k8gb's first releases.
const legacyGroup = "k8gb.absa.oss"
