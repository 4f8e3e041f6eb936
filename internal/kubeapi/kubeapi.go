// Package kubeapi holds what the Kubernetes input and the publishers that write to the API
// server share: the client configuration from the block's options, and k8gb's names and its
// ZoneDelegation resource as Meridian reads it.
package kubeapi

import (
	"fmt"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/meridian-gslb/meridian/internal/config"
)

// network.
func RESTConfig(opts config.KubernetesOptions) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if opts.Kubeconfig != "" {
		if cfg, err = clientcmd.BuildConfigFromFlags("", opts.Kubeconfig); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", opts.Kubeconfig, err)
		}
	} else if cfg, err = rest.InClusterConfig(); err != nil {
		return nil, fmt.Errorf("no kubeconfig option, and the in-cluster configuration: %w", err)
	}
	cfg.UserAgent = "meridian"
	return cfg, nil
}

// the clusters serve, delegated to them from its parent.
type ZoneDelegation struct {
	// Name is the object's name.
	Name string
	// Zone and Parent are spec.loadBalancedZone and spec.parentZone, canonical.
	Zone, Parent string
	// NegTTL is spec.dnsZoneNegTTL: the zone's negative-caching TTL (its SOA minimum).
	NegTTL uint32
}

// NSName returns the name of site's name server of the zone z, delegated from parent, as k8gb
// names it: gslb-ns-SITE-LABELS.PARENT, LABELS being the zone's labels below the parent joined
// by hyphens (gslb-ns-eu-cloud.example.com. for cloud.example.com. under example.com.).
func NSName(site, zone, parent string) string {
	rel := strings.TrimSuffix(strings.TrimSuffix(zone, parent), ".")
	return "gslb-ns-" + site + "-" + strings.ReplaceAll(rel, ".", "-") + "." + parent
}
