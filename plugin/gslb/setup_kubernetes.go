package gslb

import (
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/config"
)

// parseKubernetesOption parses the Kubernetes option at c (kubernetes, kubeconfig,
// kubernetes_namespaces, k8gb, istio_sync_check, istio_sync_interval, delegation_externaldns,
// delegation_externaldns_glue, delegation_externaldns_ttl,
// delegation_externaldns_stale_threshold) into o, a kubeconfig
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
	case "delegation_externaldns":
		return true, externalDNS(c, &o.ExternalDNS)
	case "delegation_externaldns_glue":
		return true, externalDNSGlue(c, &o.ExternalDNS)
	case "delegation_externaldns_ttl":
		ttl, err := single(c)
		if err == nil {
			n, perr := strconv.ParseUint(ttl, 10, 31)
			if perr != nil || n == 0 {
				err = c.Errf("delegation_externaldns_ttl: %q is not a TTL in seconds (1 or more)", ttl)
			}
			o.ExternalDNS.TTL = uint32(n)
		}
		return true, err
	case "delegation_externaldns_stale_threshold":
		return true, duration(c, &o.ExternalDNS.StaleThreshold, time.Second)
	}
	return false, nil
}

// externalDNS reads "delegation_externaldns PARENT_ZONE [NAMESPACE]".
func externalDNS(c *caddy.Controller, e *config.ExternalDNSOptions) error {
	args := c.RemainingArgs()
	if len(args) < 1 || len(args) > 2 {
		return c.Err("delegation_externaldns: want 'delegation_externaldns PARENT_ZONE [NAMESPACE]'")
	}
	if err := config.CheckHostName(args[0]); err != nil {
		return c.Errf("delegation_externaldns: %q is not a zone name: %v", args[0], err)
	}
	e.Parent = config.CanonicalName(args[0])
	if len(args) == 2 {
		if err := config.CheckKubernetesName("namespace", args[1]); err != nil {
			return c.Errf("delegation_externaldns: %v", err)
		}
		e.Namespace = args[1]
	}
	return nil
}

// externalDNSGlue reads "delegation_externaldns_glue ADDRESS...": this cluster's name server
// addresses.
func externalDNSGlue(c *caddy.Controller, e *config.ExternalDNSOptions) error {
	args := c.RemainingArgs()
	if len(args) == 0 {
		return c.Err("delegation_externaldns_glue: want 'delegation_externaldns_glue ADDRESS...'")
	}
	e.Glue = nil
	for _, a := range args {
		ip, err := netip.ParseAddr(a)
		if err != nil || ip.Zone() != "" {
			return c.Errf("delegation_externaldns_glue: %q is not an IP address", a)
		}
		e.Glue = append(e.Glue, ip.Unmap())
	}
	return nil
}
