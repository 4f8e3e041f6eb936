package kubernetes

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/kubeapi"
)

// ZoneDelegation is one of k8gb's ZoneDelegation resources (k8gb.io, cluster-scoped): a zone
// ZoneDelegations returns the ZoneDelegation resources the informers hold (with the k8gb
// option), by name; one that is not valid is logged and left out.
func (w *Watcher) ZoneDelegations() []kubeapi.ZoneDelegation {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.zoneDelegationsLocked()
}

// zoneDelegationsLocked is ZoneDelegations.
func (w *Watcher) zoneDelegationsLocked() []kubeapi.ZoneDelegation {
	if w.conn == nil || !w.opts.K8gb {
		return nil
	}
	var out []kubeapi.ZoneDelegation
	for _, obj := range w.conn.dynamicList(zoneDelegationResource, "", nil) {
		zd, err := parseZoneDelegation(obj)
		from := "ZoneDelegation " + obj.GetName()
		if err != nil {
			w.warnOnce(from, "kubernetes: %s: %v; it is not served", from, err)
			continue
		}
		out = append(out, zd)
	}
	return out
}

// parseZoneDelegation reads the ZoneDelegation obj.
func parseZoneDelegation(obj *unstructured.Unstructured) (kubeapi.ZoneDelegation, error) {
	zd := kubeapi.ZoneDelegation{Name: obj.GetName()}
	zone, _, _ := unstructured.NestedString(obj.Object, "spec", "loadBalancedZone")
	parent, _, _ := unstructured.NestedString(obj.Object, "spec", "parentZone")
	zd.Zone, zd.Parent = config.CanonicalName(zone), config.CanonicalName(parent)
	if err := config.CheckRecordName(zd.Zone); err != nil {
		return zd, fmt.Errorf("spec.loadBalancedZone %q: %w", zone, err)
	}
	if zd.Zone == zd.Parent || !strings.HasSuffix(zd.Zone, "."+zd.Parent) && zd.Parent != "." {
		return zd, fmt.Errorf("spec.loadBalancedZone %s is not below spec.parentZone %s", zd.Zone, zd.Parent)
	}
	if ttl, ok, _ := unstructured.NestedInt64(obj.Object, "spec", "dnsZoneNegTTL"); ok && ttl >= 0 && ttl <= 1<<31-1 {
		zd.NegTTL = uint32(ttl)
	}
	if d, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "deletionTimestamp"); d != nil {
		return zd, fmt.Errorf("it is being deleted")
	}
	return zd, nil
}

// zoneDelegationZonesLocked returns zones with a zone added for each ZoneDelegation whose zone
// none of them is: no records (the Gslbs' hosts fill it), the name servers of every cluster
// (this site's and the k8gb option's, named as k8gb names them), the negative TTL as its SOA
// minimum.
func (w *Watcher) zoneDelegationZonesLocked(zones []*config.Zone) ([]*config.Zone, error) {
	sites := w.opts.K8gbSites
	if w.site != "" {
		sites = append([]string{w.site}, sites...)
	}
	for _, zd := range w.zoneDelegationsLocked() {
		if zoneIndex(zones, zd.Zone) >= 0 {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "soa: {minimum: %d}\nns:\n", zd.NegTTL)
		seen := map[string]bool{}
		for _, s := range sites {
			if !seen[s] {
				seen[s] = true
				fmt.Fprintf(&b, "  - %s\n", kubeapi.NSName(s, zd.Zone, zd.Parent))
			}
		}
		if len(seen) == 0 {
			fmt.Fprintf(&b, "  - ns1.%s\n", zd.Zone)
		}
		b.WriteString("records: {}\n")
		z, err := config.ParseZone("ZoneDelegation "+zd.Name, []byte(b.String()), zd.Zone, nil, 1)
		if err != nil {
			return nil, err
		}
		zones = append(zones, z)
	}
	return zones, nil
}

// zoneIndex returns the index of the zone of origin among zones, -1 if none.
func zoneIndex(zones []*config.Zone, origin string) int {
	for i, z := range zones {
		if z.Origin == origin {
			return i
		}
	}
	return -1
}
