package gslb

import (
	"slices"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/config"
)

// parseKubernetesOption parses the Kubernetes option at c (kubeconfig, kubernetes_namespaces)
// into o, a kubeconfig path resolved against root. It reports false for an option that is not
// one of them.
func parseKubernetesOption(c *caddy.Controller, root string, o *config.KubernetesOptions) (bool, error) {
	switch c.Val() {
	case "kubeconfig":
		return true, path(c, root, &o.Kubeconfig)
	case "kubernetes_namespaces":
		args := c.RemainingArgs()
		if len(args) == 0 {
			return true, c.Errf("kubernetes_namespaces: want at least one NAMESPACE")
		}
		for _, ns := range args {
			if err := config.CheckKubernetesName("namespace", ns); err != nil {
				return true, c.Errf("kubernetes_namespaces: %v", err)
			}
			if !slices.Contains(o.Namespaces, ns) {
				o.Namespaces = append(o.Namespaces, ns)
			}
		}
		return true, nil
	}
	return false, nil
}
