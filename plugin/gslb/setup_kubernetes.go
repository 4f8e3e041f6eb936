package gslb

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/config"
)

// kubernetesOptions is the table of the Kubernetes options (kubernetes, kubeconfig,
// kubernetes_namespaces, k8gb, istio_sync_check, istio_sync_interval, and the delegation
// through ExternalDNS: delegation_externaldns, delegation_externaldns_glue,
// delegation_externaldns_ttl, delegation_externaldns_stale_threshold), which set o; a
// kubeconfig path is resolved against root.
func kubernetesOptions(o *config.KubernetesOptions, root string) optionTable {
	return optionTable{
		"kubernetes":            setFlag(&o.On, true),
		"kubeconfig":            setPath(root, &o.Kubeconfig),
		"kubernetes_namespaces": func(c *caddy.Controller) error { return namespaces(c, o) },
		"k8gb":                  func(c *caddy.Controller) error { return k8gbSites(c, o) },
		"istio_sync_check":      func(c *caddy.Controller) error { return istioSyncCheck(c, o) },
		"istio_sync_interval":   setDuration(&o.IstioSyncInterval, time.Second),

		"delegation_externaldns":                 func(c *caddy.Controller) error { return externalDNS(c, &o.ExternalDNS) },
		"delegation_externaldns_glue":            func(c *caddy.Controller) error { return externalDNSGlue(c, &o.ExternalDNS) },
		"delegation_externaldns_ttl":             setParsed(&o.ExternalDNS.TTL, parseTTL),
		"delegation_externaldns_stale_threshold": setDuration(&o.ExternalDNS.StaleThreshold, time.Second),
	}
}

// namespaces reads "kubernetes_namespaces NAMESPACE...", which adds to the lines before.
func namespaces(c *caddy.Controller, o *config.KubernetesOptions) error {
	args := c.RemainingArgs()
	if len(args) == 0 {
		return c.Errf("kubernetes_namespaces: want at least one NAMESPACE")
	}
	for _, ns := range args {
		if err := config.CheckKubernetesName("namespace", ns); err != nil {
			return c.Errf("kubernetes_namespaces: %v", err)
		}
		if !slices.Contains(o.Namespaces, ns) {
			o.Namespaces = append(o.Namespaces, ns)
		}
	}
	return nil
}

// k8gbSites reads "k8gb [SITE...]": k8gb's Gslb objects, and the sites (k8gb's geo tags) of
// their targets.
func k8gbSites(c *caddy.Controller, o *config.KubernetesOptions) error {
	o.K8gb = true
	for _, site := range c.RemainingArgs() {
		if err := config.CheckSiteName(site); err != nil {
			return c.Errf("k8gb: %v", err)
		}
		if !slices.Contains(o.K8gbSites, site) {
			o.K8gbSites = append(o.K8gbSites, site)
		}
	}
	return nil
}

// istioSyncCheck reads "istio_sync_check [URL]".
func istioSyncCheck(c *caddy.Controller, o *config.KubernetesOptions) error {
	args := c.RemainingArgs()
	switch len(args) {
	case 0:
		o.IstioSyncURL = config.DefaultIstioSyncURL
	case 1:
		u, err := url.Parse(args[0])
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c.Errf("istio_sync_check: %q is not an http or https URL", args[0])
		}
		o.IstioSyncURL = args[0]
	default:
		return c.Errf("istio_sync_check: want at most one URL, got %d arguments", len(args))
	}
	if o.IstioSyncInterval == 0 {
		o.IstioSyncInterval = config.DefaultIstioSyncInterval
	}
	return nil
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

// parseTTL parses a TTL in seconds, 1 or more.
func parseTTL(v string) (uint32, error) {
	n, err := strconv.ParseUint(v, 10, 31)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%q is not a TTL in seconds (1 or more)", v)
	}
	return uint32(n), nil
}
