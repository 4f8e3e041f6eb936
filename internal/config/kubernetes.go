package config

import (
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// KubernetesOptions are the Kubernetes options of a gslb block (kubernetes, kubeconfig,
// kubernetes_namespaces, k8gb, istio_sync_check, delegation_externaldns*): how the Kubernetes source reaches the API
// server and what it reads (see docs/kubernetes.md).
type KubernetesOptions struct {
	// On is set by the bare kubernetes option: connect even when no zone names a Kubernetes
	// object, to serve the objects annotated with meridian.io/record.
	On bool
	// Kubeconfig is the kubeconfig file to read; empty: the in-cluster configuration (the
	// pod's service account).
	Kubeconfig string
	// Namespaces limits the watch to these namespaces; none: every namespace.
	Namespaces []string
	// K8gb turns on serving k8gb's Gslb resources (k8gb.io and k8gb.absa.oss) and writing
	// their status.
	K8gb bool
	// K8gbSites are the geo tags of the other clusters (k8gb's extGslbClustersGeoTags): a
	// Gslb's record has a placeholder backend for each, whose targets the sites source learns.
	K8gbSites []string
	// IstioSyncURL, when set (istio_sync_check), is where istiod's proxy sync status is read:
	// a Service that selects istio: ingressgateway pods is healthy only while every ready pod's
	// proxy has its configuration synced.
	IstioSyncURL string
	// IstioSyncInterval is how often the sync status is read (10s).
	IstioSyncInterval time.Duration
	// ExternalDNS is the delegation kept through ExternalDNS's DNSEndpoint objects; off
	// unless its parent zone is set.
	ExternalDNS ExternalDNSOptions
}

// The defaults of the Kubernetes options.
const (
	DefaultIstioSyncURL      = "http://istiod.istio-system.svc:15014/debug/syncz"
	DefaultIstioSyncInterval = 10 * time.Second
)

// Enabled reports whether the Kubernetes source connects for zones: the kubernetes,
// kubeconfig or k8gb option is set, or a backend of zones names a Kubernetes object.
func (o KubernetesOptions) Enabled(zones []*Zone) bool {
	if o.On || o.Kubeconfig != "" || o.K8gb || o.ExternalDNS.Enabled() {
		return true
	}
	for _, z := range zones {
		for _, r := range z.Records {
			for _, b := range r.Backends {
				if b.IsKubernetes() {
					return true
				}
			}
		}
	}
	return false
}

// Watches reports whether namespace is one the options watch.
func (o KubernetesOptions) Watches(namespace string) bool {
	return len(o.Namespaces) == 0 || slices.Contains(o.Namespaces, namespace)
}

// KubernetesKind is the kind of object a kubernetes backend stands for.
type KubernetesKind string

// The kinds a kubernetes backend may stand for.
const (
	// KindService is a Service of type LoadBalancer: its status.loadBalancer.ingress.
	KindService KubernetesKind = "Service"
	// KindIngress is an Ingress (networking.k8s.io/v1): its status.loadBalancer.ingress.
	KindIngress KubernetesKind = "Ingress"
	// KindGateway is a Gateway (gateway.networking.k8s.io/v1): its status.addresses.
	KindGateway KubernetesKind = "Gateway"
	// KindVirtualService is an Istio VirtualService (networking.istio.io): the address of the
	// LoadBalancer Service of the Istio Gateway it binds; judged by its routes' destinations.
	// Only k8gb's Gslb resources name it.
	KindVirtualService KubernetesKind = "VirtualService"
	// The Gateway API's routes (gateway.networking.k8s.io): the addresses of their parent
	// Gateway; judged by its Programmed condition and their backends' Services. Only k8gb's
	// Gslb resources name them.
	KindHTTPRoute KubernetesKind = "HTTPRoute"
	KindGRPCRoute KubernetesKind = "GRPCRoute"
	KindTLSRoute  KubernetesKind = "TLSRoute"
	KindTCPRoute  KubernetesKind = "TCPRoute"
	KindUDPRoute  KubernetesKind = "UDPRoute"
)

// IsRoute reports whether k is one of the Gateway API's route kinds.
func (k KubernetesKind) IsRoute() bool {
	switch k {
	case KindHTTPRoute, KindGRPCRoute, KindTLSRoute, KindTCPRoute, KindUDPRoute:
		return true
	}
	return false
}

// HealthPolicy is how the Services that judge a kubernetes backend combine.
type HealthPolicy string

// The health policies (k8gb's serviceHealthPolicy).
const (
	// PolicyAny: healthy while any of the Services has a ready endpoint (the default).
	PolicyAny HealthPolicy = "any"
	// PolicyAll: healthy only while every one of them has.
	PolicyAll HealthPolicy = "all"
)

// KubernetesRef names the object a backend stands for (kubernetes: {namespace, service |
// ingress | gateway}), and the Services whose readiness judges it.
type KubernetesRef struct {
	Namespace string
	Kind      KubernetesKind
	Name      string
	// Services are the Services (in Namespace) whose ready endpoints judge the backend, sorted;
	// none: the Service itself, an Ingress's backend Services for the record's host, or (for
	// a Gateway) only its Programmed condition.
	Services []string
	// Policy combines Services: any (the default) or all.
	Policy HealthPolicy
	// Exposed, when set, are the addresses the backend answers in place of the object's (IP
	// addresses, and host names resolved in the background): k8gb's exposed-ip-addresses and
	// exposed-hostnames annotations of a Gslb.
	Exposed []string
}

// String returns the object as "Kind namespace/name".
func (r KubernetesRef) String() string { return string(r.Kind) + " " + r.Namespace + "/" + r.Name }

// Key identifies the reference with its health settings: two backends with the same key are
// judged alike.
func (r KubernetesRef) Key() string {
	k := r.String()
	if len(r.Services) > 0 {
		k += " services " + strings.Join(r.Services, ",")
	}
	if r.Policy != "" && r.Policy != PolicyAny {
		k += " policy " + string(r.Policy)
	}
	if len(r.Exposed) > 0 {
		k += " exposed " + strings.Join(r.Exposed, ",")
	}
	return k
}

// CheckKubernetesName reports why name cannot name a namespace or an object: Kubernetes
// requires a DNS label (RFC 1123) of at most 63 lower-case letters, digits and hyphens.
func CheckKubernetesName(kind, name string) error { return checkLabel(kind, name, 63) }

// ParseHealthPolicy returns the policy s names (any, all; any case, as k8gb writes Any).
func ParseHealthPolicy(s string) (HealthPolicy, error) {
	p := HealthPolicy(strings.ToLower(s))
	if p != PolicyAny && p != PolicyAll {
		return "", unknownChoice("policy", s, []string{string(PolicyAny), string(PolicyAll)})
	}
	return p, nil
}

var kubernetesKeys = []string{"namespace", "service", "ingress", "gateway", "services", "policy"}

// kubernetesRef parses a backend's kubernetes mapping; nil when it has errors.
func (p *parser) kubernetesRef(n *yaml.Node, path string) *KubernetesRef {
	before := p.Len()
	ref := &KubernetesRef{Policy: PolicyAny}
	var kinds []string
	for _, e := range p.entries(n, path) {
		kpath := child(path, e.key)
		switch e.key {
		case "namespace":
			ref.Namespace = p.kubernetesName(e, kpath)
		case "service", "ingress", "gateway":
			kinds = append(kinds, e.key)
			ref.Kind, ref.Name = map[string]KubernetesKind{"service": KindService, "ingress": KindIngress, "gateway": KindGateway}[e.key], p.kubernetesName(e, kpath)
		case "services":
			names, _ := p.strList(e.v, kpath)
			for _, s := range names {
				if err := CheckKubernetesName("service", s); err != nil {
					p.Errorf(e.v, kpath, "%v", err)
				}
			}
			slices.Sort(names)
			ref.Services = slices.Compact(names)
		case "policy":
			if s, ok := p.str(e.v, kpath); ok {
				pol, err := ParseHealthPolicy(s)
				if err != nil {
					p.Errorf(e.v, kpath, "%v", err)
				}
				ref.Policy = pol
			}
		default:
			p.unknownKey(e, path, kubernetesKeys)
		}
	}
	switch {
	case p.Len() != before:
	case ref.Namespace == "":
		p.Errorf(n, child(path, "namespace"), "a kubernetes backend needs the namespace of its object")
	case len(kinds) == 0:
		p.Errorf(n, child(path, "service"), "a kubernetes backend names a service, an ingress or a gateway")
	case len(kinds) > 1:
		p.Errorf(n, child(path, kinds[1]), "a kubernetes backend names one object, not a %s and a %s", kinds[0], kinds[1])
	}
	if p.Len() != before {
		return nil
	}
	return ref
}

// kubernetesName parses the value of e as the name of a namespace or an object.
func (p *parser) kubernetesName(e entry, path string) string {
	s, ok := p.str(e.v, path)
	if ok {
		if err := CheckKubernetesName(e.key, s); err != nil {
			p.Errorf(e.v, path, "%v", err)
		}
	}
	return s
}

// recordKubernetes parses a record's kubernetes key: one object (a mapping) or a list of them,
// each a backend with the default priority and weight.
func (p *parser) recordKubernetes(n *yaml.Node, path string) []Backend {
	n = YAMLResolve(n)
	nodes := []*yaml.Node{n}
	paths := []string{path}
	if n.Kind == yaml.SequenceNode {
		nodes, paths = p.items(n, path), nil
		for i := range nodes {
			paths = append(paths, index(path, i))
		}
	}
	var out []Backend
	for i, item := range nodes {
		if ref := p.kubernetesRef(item, paths[i]); ref != nil {
			b := Backend{Pos: p.Pos(item), Priority: DefaultPriority, Weight: DefaultWeight, Enable: true}
			out = append(out, b.WithOrigin(Origin{Kubernetes: ref}))
		}
	}
	return out
}

// NewRecord returns a record named name (canonical) with mode and every other setting at its
// default, as the sources that create records (Kubernetes annotations, k8gb's Gslb) start
// from; pos says where it comes from.
func NewRecord(name string, mode Mode, pos Position) Record {
	return Record{Name: name, Pos: pos, Mode: mode, TTL: DefaultRecordTTL,
		settings: &defaultSettings, steering: &defaultSteering}
}

// defaultSettings and defaultSteering are the settings and steering of the records NewRecord
// makes, which share them until a source gives one its own (SetSettings, SetSteering).
var (
	defaultSettings = Settings{ScrapeInterval: DefaultScrapeInterval,
		ScrapeTimeout: min(DefaultScrapeTimeout, DefaultScrapeInterval),
		ScrapeRetries: DefaultScrapeRetries, Fallback: Fallback{Mode: FallbackFailOpen}}
	defaultSteering = Steering{HashOrder: HashOrderAddress}
)
