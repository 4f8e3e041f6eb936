package config

import (
	"slices"

	"gopkg.in/yaml.v3"
)

// KubernetesOptions are the Kubernetes options (kubeconfig, kubernetes_namespaces): how the
// Kubernetes source reaches the API server and what it watches (see docs/kubernetes.md).
type KubernetesOptions struct {
	// Kubeconfig is the kubeconfig file to read; empty: the in-cluster configuration (the
	// pod's service account).
	Kubeconfig string
	// Namespaces limits the watch to these namespaces; none: every namespace.
	Namespaces []string
}

// Enabled reports whether the Kubernetes source connects for zones: the kubeconfig option is
// set, or a backend of zones names a Service.
func (o KubernetesOptions) Enabled(zones []*Zone) bool {
	if o.Kubeconfig != "" {
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

// KubernetesRef names the Service a backend stands for (kubernetes: {namespace, service}).
type KubernetesRef struct {
	Namespace string
	Service   string
}

// String returns the Service as namespace/name.
func (r KubernetesRef) String() string { return r.Namespace + "/" + r.Service }

// CheckKubernetesName reports why name cannot name a namespace or a Service: Kubernetes
// requires a DNS label (RFC 1123) of at most 63 lower-case letters, digits and hyphens.
func CheckKubernetesName(kind, name string) error { return checkLabel(kind, name, 63) }

var kubernetesKeys = []string{"namespace", "service"}

// kubernetesRef parses a backend's kubernetes mapping; nil when it has errors.
func (p *parser) kubernetesRef(n *yaml.Node, path string) *KubernetesRef {
	before := p.Len()
	ref := &KubernetesRef{}
	for _, e := range p.entries(n, path) {
		kpath := child(path, e.key)
		var dst *string
		switch e.key {
		case "namespace":
			dst = &ref.Namespace
		case "service":
			dst = &ref.Service
		default:
			p.unknownKey(e, path, kubernetesKeys)
			continue
		}
		if s, ok := p.str(e.v, kpath); ok {
			if err := CheckKubernetesName(e.key, s); err != nil {
				p.Errorf(e.v, kpath, "%v", err)
			}
			*dst = s
		}
	}
	if p.Len() == before && ref.Namespace == "" {
		p.Errorf(n, child(path, "namespace"), "a kubernetes backend needs the namespace of its Service")
	}
	if p.Len() == before && ref.Service == "" {
		p.Errorf(n, child(path, "service"), "a kubernetes backend needs the name of its Service")
	}
	if p.Len() != before {
		return nil
	}
	return ref
}
