package externaldns

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/kubeapi"
	"github.com/meridian-gslb/meridian/internal/published"
)

// The resources the keeper writes.
var (
	dnsEndpoints    = schema.GroupVersionResource{Group: "externaldns.k8s.io", Version: "v1alpha1", Resource: "dnsendpoints"}
	zoneDelegations = schema.GroupVersionResource{Group: "k8gb.io", Version: "v1beta1", Resource: "zonedelegations"}
)

// The labels of the DNSEndpoints the keeper writes: k8gb's type of a delegation's object, and
// Meridian's own, by which it finds those to delete.
const (
	labelDNSType = "k8gb.io/dnstype"
	labelKeeper  = "meridian.io/delegation"
	fieldManager = "meridian"
)

// write applies the DNSEndpoint name in namespace with endpoints, unless that is what was
// written last (and refresh is not set).
func (k *Keeper) write(ctx context.Context, c dynamic.Interface, namespace, name string, endpoints []any, refresh bool) error {
	obj := map[string]any{
		"apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint",
		"metadata": map[string]any{"name": name, "namespace": namespace,
			"labels": map[string]any{labelDNSType: "extdns", labelKeeper: "true"}},
		"spec": map[string]any{"endpoints": endpoints},
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	key := "dnsendpoint " + namespace + "/" + name
	if !refresh && k.appliedAs(key) == string(data) {
		return nil
	}
	force := true
	if _, err := c.Resource(dnsEndpoints).Namespace(namespace).Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: &force}); err != nil {
		return err
	}
	k.setApplied(key, string(data))
	return nil
}

// appliedAs returns what was last written of the object key.
func (k *Keeper) appliedAs(key string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.applied[key]
}

// setApplied records that data was written of the object key ("" forgets it).
func (k *Keeper) setApplied(key, data string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if data == "" {
		delete(k.applied, key)
		return
	}
	k.applied[key] = data
}

// deleteOthers deletes the DNSEndpoints of namespace that the keeper wrote and that are not
// in keep: the delegation of a zone no longer kept is withdrawn.
func (k *Keeper) deleteOthers(ctx context.Context, c dynamic.Interface, namespace string, keep map[string]bool) error {
	list, err := c.Resource(dnsEndpoints).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: labelKeeper + "=true"})
	if err != nil {
		return fmt.Errorf("listing the DNSEndpoints of %s: %w", namespace, err)
	}
	for _, o := range list.Items {
		if keep[o.GetName()] {
			continue
		}
		if err := c.Resource(dnsEndpoints).Namespace(namespace).Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the DNSEndpoint %s/%s: %w", namespace, o.GetName(), err)
		}
		k.setApplied("dnsendpoint "+namespace+"/"+o.GetName(), "")
	}
	return nil
}

// writeStatus writes the status of the ZoneDelegation of z: its name servers (each live
// cluster's, one entry an address), sorted by name and address, as k8gb writes it.
func (k *Keeper) writeStatus(ctx context.Context, c dynamic.Interface, z Zone, live []Cluster, refresh bool) error {
	servers := []any{}
	for _, cl := range live {
		ns := strings.TrimSuffix(kubeapi.NSName(cl.Site, z.Origin, z.Parent), ".")
		for _, a := range cl.Glue {
			servers = append(servers, map[string]any{"name": ns, "address": a.String()})
		}
	}
	status := map[string]any{"dnsServers": servers}
	data, err := json.Marshal(status)
	if err != nil {
		return err
	}
	key := "zonedelegation " + z.Object
	if !refresh && k.appliedAs(key) == string(data) {
		return nil
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := c.Resource(zoneDelegations).Get(ctx, z.Object, metav1.GetOptions{})
		if err != nil {
			return err
		}
		obj.Object["status"] = status
		_, err = c.Resource(zoneDelegations).UpdateStatus(ctx, obj, metav1.UpdateOptions{FieldManager: fieldManager})
		return err
	})
	if err != nil {
		return err
	}
	k.setApplied(key, string(data))
	return nil
}

// StateOf returns the state the keeper keeps of a block: its zones below the delegation's
// parent and the ZoneDelegations' zones (a block's zone a ZoneDelegation names is delegated
// from the ZoneDelegation's parent); this cluster (site, with the delegation's glue); and
// the other sites the fleet's view knows (nil without one), each seen when its peer last
// answered, or when it fell silent if its heartbeat stopped advancing, with the addresses of
// its peers as its glue.
func StateOf(site string, opts config.ExternalDNSOptions, origins []string, view func() published.View, zds []kubeapi.ZoneDelegation) State {
	st := State{Self: Cluster{Site: site, Glue: opts.Glue}}
	for _, o := range origins {
		if o != opts.Parent && strings.HasSuffix(o, "."+opts.Parent) && !slices.ContainsFunc(zds, func(zd kubeapi.ZoneDelegation) bool { return zd.Zone == o }) {
			st.Zones = append(st.Zones, Zone{Origin: o, Parent: opts.Parent})
		}
	}
	for _, zd := range zds {
		st.Zones = append(st.Zones, Zone{Origin: zd.Zone, Parent: zd.Parent, Object: zd.Name})
	}
	if view == nil {
		return st
	}
	v := view()
	silent := map[string]time.Time{}
	for _, s := range v.Sites {
		if s.State == "stale" && !s.SilentSince.IsZero() {
			silent[s.Name] = s.SilentSince
		}
	}
	for _, p := range v.Peers {
		if p.Self || p.Site == "" || p.LastAnswer.IsZero() {
			continue
		}
		c := Cluster{Site: p.Site, Seen: p.LastAnswer}
		if t, ok := silent[p.Site]; ok && t.Before(c.Seen) {
			c.Seen = t
		}
		host, _, err := net.SplitHostPort(p.Address)
		if err != nil {
			host = p.Address
		}
		if a, err := netip.ParseAddr(host); err == nil {
			c.Glue = []netip.Addr{a.Unmap()}
		}
		st.Others = append(st.Others, c)
	}
	return st
}
