package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// k8gb's annotation form: an Ingress annotated with a strategy stands for a Gslb that
// references it, which k8gb creates (and Meridian too).
const (
	annotationStrategy = "k8gb.io/strategy"
	annotationPrimary  = "k8gb.io/primary-geotag"
	annotationTTL      = "k8gb.io/dns-ttl-seconds"
	// defaultAnnotationTTL is the dnsTtlSeconds of a Gslb made from an Ingress without
	// annotationTTL, k8gb's default.
	defaultAnnotationTTL = 30
)

// k8gb's labels of its migration from the legacy group to k8gb.io.
const (
	labelMigrationRequested = "k8gb.io/migration-requested"
	labelMigrated           = "k8gb.io/migrated-to-k8gb-io"
)

// keep is an object Meridian keeps for k8gb's resources: an embedded ingress's Ingress, the
// Gslb of an annotated Ingress, a legacy Gslb's migration.
type keep struct {
	// key identifies what is kept, and fingerprint its wanted state: a keep whose fingerprint
	// was applied last is not applied again while its object exists.
	key, fingerprint string
	exists           bool
	// what names it for the logs.
	what  string
	apply func(context.Context, *conn) error
}

// keepsLocked returns what must be written for k8gb's resources to be as they want: what was
// not applied yet in its current state, or whose object went away.
func (w *Watcher) keepsLocked() []keep {
	var all []keep
	for _, g := range w.gslbs {
		if g.embedded != nil {
			all = append(all, w.embeddedKeep(g))
		}
	}
	all = append(all, w.annotationKeepsLocked()...)
	all = append(all, w.migrationKeepsLocked()...)
	var out []keep
	for _, k := range all {
		if !k.exists || w.kept[k.key] != k.fingerprint {
			out = append(out, k)
		}
	}
	return out
}

// keptLocked records that k was applied.
func (w *Watcher) keptLocked(k keep) {
	if w.kept == nil {
		w.kept = map[string]string{}
	}
	w.kept[k.key] = k.fingerprint
}

// fingerprint returns v's JSON, the state a keep wants.
func fingerprint(v any) string {
	data, _ := json.Marshal(v) // maps and strings encode
	return string(data)
}

// embeddedKeep keeps the Ingress that the Gslb g embeds, named as g and owned by it, as k8gb
// does: created when missing, its spec made g's (server-side apply).
func (w *Watcher) embeddedKeep(g *gslb) keep {
	ing := map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
		"metadata": map[string]any{"name": g.name, "namespace": g.namespace,
			"labels": map[string]any{"app.k8gb.io/managed-by": "gslb"},
			"ownerReferences": []any{map[string]any{"apiVersion": g.res.versions[0].GroupVersion().String(), "kind": "Gslb", "name": g.name, "uid": string(g.uid),
				"controller": true, "blockOwnerDeletion": true}}},
		"spec": ingressSpec(g.embedded),
	}
	return keep{key: "ingress " + g.namespace + "/" + g.name, fingerprint: fingerprint(ing), exists: w.conn.ingress(g.namespace, g.name) != nil,
		what:  fmt.Sprintf("keeping the Ingress of Gslb %s/%s", g.namespace, g.name),
		apply: func(ctx context.Context, c *conn) error { return applyIngress(ctx, c, g.namespace, g.name, ing) }}
}

// applyIngress applies the Ingress ing, namespace/name, by server-side apply (forced).
func applyIngress(ctx context.Context, c *conn, namespace, name string, ing map[string]any) error {
	data, err := json.Marshal(ing)
	if err != nil {
		return err
	}
	force := true
	_, err = c.client.NetworkingV1().Ingresses(namespace).Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: &force})
	return err
}

// annotationKeepsLocked returns the Gslbs (k8gb.io) of the Ingresses annotated with
// k8gb.io/strategy that no Gslb owns, as k8gb makes them: named as the Ingress, owned by it,
// referencing it, with the strategy of its annotations (the weights a Gslb of that name
// already has are kept) and its k8gb.io/exposed-ip-addresses. An Ingress whose annotations
// are wrong is logged.
func (w *Watcher) annotationKeepsLocked() []keep {
	if w.conn.custom[gslbResource.name] == nil {
		return nil
	}
	var out []keep
	for _, l := range w.conn.ingresses {
		list, _ := l.List(labels.Everything())
		for _, in := range list {
			if _, ok := in.Annotations[annotationStrategy]; !ok || ownedByGslb(in) {
				continue
			}
			from := fmt.Sprintf("Ingress %s/%s", in.Namespace, in.Name)
			g, err := gslbOfIngress(in)
			if err != nil {
				w.warnOnce(from, "kubernetes: %s: %v; no Gslb is made of it", from, err)
				continue
			}
			out = append(out, keep{key: "gslb of ingress " + in.Namespace + "/" + in.Name, fingerprint: fingerprint(g),
				exists: w.conn.dynamicGet(gslbResource, in.Namespace, in.Name) != nil,
				what:   "making the Gslb of the annotated " + from,
				apply: func(ctx context.Context, c *conn) error {
					return applyObject(ctx, c, gslbResource, in.Namespace, in.Name, g)
				}})
		}
	}
	return out
}

// ownedByGslb reports whether a Gslb owns in (it is a Gslb's embedded ingress).
func ownedByGslb(in *networkingv1.Ingress) bool {
	for _, o := range in.OwnerReferences {
		if o.Kind == "Gslb" {
			return true
		}
	}
	return false
}

// gslbOfIngress returns the Gslb k8gb makes of the annotated Ingress in.
func gslbOfIngress(in *networkingv1.Ingress) (map[string]any, error) {
	ann := in.Annotations
	strategy := map[string]any{"type": ann[annotationStrategy], "dnsTtlSeconds": int64(defaultAnnotationTTL)}
	if v, ok := ann[annotationTTL]; ok {
		ttl, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("annotation %s: %q is not a number", annotationTTL, v)
		}
		strategy["dnsTtlSeconds"] = int64(ttl)
	}
	if p := ann[annotationPrimary]; p != "" {
		strategy["primaryGeoTag"] = p
	} else if ann[annotationStrategy] == "failover" {
		return nil, fmt.Errorf("strategy failover needs the annotation %s", annotationPrimary)
	}
	meta := map[string]any{"name": in.Name, "namespace": in.Namespace,
		"ownerReferences": []any{map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": in.Name, "uid": string(in.UID),
			"controller": true, "blockOwnerDeletion": true}}}
	if v, ok := ann[annotationExposedIPs]; ok {
		meta["annotations"] = map[string]any{annotationExposedIPs: v}
	}
	return map[string]any{"apiVersion": "k8gb.io/v1beta1", "kind": "Gslb", "metadata": meta,
		"spec": map[string]any{
			"resourceRef": map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": in.Name},
			"strategy":    strategy,
		}}, nil
}

// migrationKeepsLocked returns the migrations of the legacy Gslbs labeled
// k8gb.io/migration-requested=true, as k8gb migrates them: a Gslb of k8gb.io of the same
// name (made when missing, with the legacy one's spec and annotations; an embedded ingress
// becomes a reference to its Ingress, made, owned by nothing, when it does not exist yet), the
// legacy one labeled k8gb.io/migrated-to-k8gb-io, and its Ingress no longer owned by it. The
// legacy Gslb is then no longer served.
func (w *Watcher) migrationKeepsLocked() []keep {
	if w.conn.custom[gslbResource.name] == nil {
		return nil
	}
	var out []keep
	for _, legacy := range w.conn.dynamicList(legacyGslbResource, "", nil) {
		if legacy.GetLabels()[labelMigrationRequested] != "true" {
			continue
		}
		ns, name, uid := legacy.GetNamespace(), legacy.GetName(), legacy.GetUID()
		twin := w.conn.dynamicGet(gslbResource, ns, name) != nil
		in := w.conn.ingress(ns, name)
		owned := in != nil && ownedBy(in, uid)
		if twin && legacy.GetLabels()[labelMigrated] == "true" && !owned {
			continue
		}
		canonical := migrated(legacy)
		var ingress map[string]any // the Ingress the legacy one embeds, when it is missing
		if embedded, ok, _ := unstructured.NestedMap(legacy.Object, "spec", "ingress"); ok && len(embedded) > 0 && in == nil {
			ingress = map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
				"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"app.k8gb.io/managed-by": "gslb"}},
				"spec":     ingressSpec(embedded)}
		}
		out = append(out, keep{key: "migration " + ns + "/" + name, fingerprint: fmt.Sprint(twin, legacy.GetLabels()[labelMigrated], owned, in != nil),
			what: fmt.Sprintf("migrating the legacy Gslb %s/%s to k8gb.io", ns, name),
			apply: func(ctx context.Context, c *conn) error {
				if ingress != nil {
					if err := applyIngress(ctx, c, ns, name, ingress); err != nil {
						return err
					}
				}
				if !twin {
					if _, err := c.dynamic.Resource(c.custom[gslbResource.name].res).Namespace(ns).Create(ctx, canonical, metav1.CreateOptions{FieldManager: fieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
						return err
					}
				}
				if owned {
					if err := disown(ctx, c, in, uid); err != nil {
						return err
					}
				}
				patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"true"}}}`, labelMigrated)
				_, err := c.dynamic.Resource(c.custom[legacyGslbResource.name].res).Namespace(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
				return err
			}})
	}
	return out
}

// migrated returns the Gslb of k8gb.io that k8gb's migration makes of legacy.
func migrated(legacy *unstructured.Unstructured) *unstructured.Unstructured {
	spec, _, _ := unstructured.NestedMap(legacy.Object, "spec")
	if embedded, ok := spec["ingress"].(map[string]any); ok && len(embedded) > 0 {
		if _, hasRef := spec["resourceRef"]; !hasRef {
			spec["resourceRef"] = map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": legacy.GetName()}
		}
	}
	delete(spec, "ingress")
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "k8gb.io/v1beta1", "kind": "Gslb", "spec": spec}}
	obj.SetName(legacy.GetName())
	obj.SetNamespace(legacy.GetNamespace())
	obj.SetAnnotations(legacy.GetAnnotations())
	return obj
}

// ownedBy reports whether the object uid owns in.
func ownedBy(in *networkingv1.Ingress, uid types.UID) bool {
	for _, o := range in.OwnerReferences {
		if o.UID == uid {
			return true
		}
	}
	return false
}

// disown removes the owner uid from the Ingress in, so that deleting the owner keeps it.
func disown(ctx context.Context, c *conn, in *networkingv1.Ingress, uid types.UID) error {
	owners := []metav1.OwnerReference{}
	for _, o := range in.OwnerReferences {
		if o.UID != uid {
			owners = append(owners, o)
		}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": owners, "resourceVersion": in.ResourceVersion}})
	if err != nil {
		return err
	}
	_, err = c.client.NetworkingV1().Ingresses(in.Namespace).Patch(ctx, in.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
	return err
}

// applyObject applies obj, a custom resource of res, by server-side apply (forced).
func applyObject(ctx context.Context, c *conn, res custom, namespace, name string, obj map[string]any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	force := true
	_, err = c.dynamic.Resource(c.custom[res.name].res).Namespace(namespace).Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: &force})
	return err
}
