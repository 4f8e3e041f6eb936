package gslb

import (
	"net/url"
	"slices"
	"time"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/config"
)

// parseKubernetesOption parses the Kubernetes option at c (kubernetes, kubeconfig,
// kubernetes_namespaces, k8gb, istio_sync_check, istio_sync_interval) into o, a kubeconfig
// path resolved against root. It reports false for an option that is not one of them.
func parseKubernetesOption(c *caddy.Controller, root string, o *config.KubernetesOptions) (bool, error) {
	switch c.Val() {
	case "kubernetes":
		return true, flag(c, &o.On, true)
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
	case "k8gb":
		o.K8gb = true
		for _, site := range c.RemainingArgs() {
			if err := config.CheckSiteName(site); err != nil {
				return true, c.Errf("k8gb: %v", err)
			}
			if !slices.Contains(o.K8gbSites, site) {
				o.K8gbSites = append(o.K8gbSites, site)
			}
		}
		return true, nil
	case "istio_sync_check":
		args := c.RemainingArgs()
		switch len(args) {
		case 0:
			o.IstioSyncURL = config.DefaultIstioSyncURL
		case 1:
			u, err := url.Parse(args[0])
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return true, c.Errf("istio_sync_check: %q is not an http or https URL", args[0])
			}
			o.IstioSyncURL = args[0]
		default:
			return true, c.Errf("istio_sync_check: want at most one URL, got %d arguments", len(args))
		}
		if o.IstioSyncInterval == 0 {
			o.IstioSyncInterval = config.DefaultIstioSyncInterval
		}
		return true, nil
	case "istio_sync_interval":
		return true, duration(c, &o.IstioSyncInterval, time.Second)
	}
	return false, nil
}
