package kubernetes

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/meridian-gslb/meridian/internal/config"
)

// The annotations that put a Service, an Ingress or a Gateway in a record.
const (
	// AnnotationRecord names the records (comma-separated) the object is a backend of.
	AnnotationRecord = "meridian.io/record"
	// AnnotationWeight, AnnotationPriority and AnnotationLocation set the backend's weight,
	// priority and location (geo tag).
	AnnotationWeight   = "meridian.io/weight"
	AnnotationPriority = "meridian.io/priority"
	AnnotationLocation = "meridian.io/location"
	// AnnotationServices (comma-separated) and AnnotationPolicy are the Services that judge
	// the backend and how they combine, as kubernetes: {services, policy} in a zone file.
	AnnotationServices = "meridian.io/services"
	AnnotationPolicy   = "meridian.io/policy"
	// AnnotationMode and AnnotationTTL are the mode and TTL of a record the annotation
	// creates (one the zone files do not have): roundrobin and 30 by default.
	AnnotationMode = "meridian.io/mode"
	AnnotationTTL  = "meridian.io/ttl"
	// AnnotationTetrate is the gateway GSLB's annotation (the Gateway set a Service belongs
	// to), an alias of AnnotationRecord: a fully qualified name is a record, as there, and a
	// single label the record of that label in each zone of the block. AnnotationRecord wins
	// when an object has both.
	AnnotationTetrate = "gslb.tetrate.io/name"
)

// annotatedLocked returns the additions of every Service, Ingress and Gateway the informers
// hold that has the meridian.io/record annotation (or the gateway GSLB's, its alias), sorted
// by object. An object whose
// annotations are wrong is logged and left out.
func (w *Watcher) annotatedLocked() []addition {
	type object struct {
		kind config.KubernetesKind
		meta metav1.Object
	}
	var objs []object
	for _, l := range w.conn.services {
		list, _ := l.List(labels.Everything())
		for _, o := range list {
			objs = append(objs, object{config.KindService, o})
		}
	}
	for _, l := range w.conn.ingresses {
		list, _ := l.List(labels.Everything())
		for _, o := range list {
			objs = append(objs, object{config.KindIngress, o})
		}
	}
	for _, o := range w.conn.dynamicList(gatewayResource, "", nil) {
		objs = append(objs, object{config.KindGateway, o})
	}
	var adds []addition
	for _, o := range objs {
		_, ok := o.meta.GetAnnotations()[AnnotationRecord]
		if _, tetrate := o.meta.GetAnnotations()[AnnotationTetrate]; !ok && !tetrate {
			continue
		}
		ref := config.KubernetesRef{Namespace: o.meta.GetNamespace(), Kind: o.kind, Name: o.meta.GetName()}
		a, err := annotated(ref, o.meta.GetAnnotations())
		if err != nil {
			w.warnOnce(ref.String(), "kubernetes: %s: %v; its annotations are ignored", ref, err)
			continue
		}
		adds = append(adds, a...)
	}
	slices.SortStableFunc(adds, func(a, b addition) int { return strings.Compare(a.from+" "+a.record, b.from+" "+b.record) })
	return adds
}

// annotated returns the additions of the object ref whose annotations are ann: one per record
// of meridian.io/record, each with one backend that stands for the object.
func annotated(ref config.KubernetesRef, ann map[string]string) ([]addition, error) {
	b := config.Backend{Pos: config.InFile(ref.String()), Priority: config.DefaultPriority, Weight: config.DefaultWeight, Enable: true}
	mode, ttl := config.ModeRoundRobin, uint32(0)
	var err error
	num := func(key string, lo, hi int, dst *int) {
		if v, ok := ann[key]; ok && err == nil {
			n, e := strconv.Atoi(strings.TrimSpace(v))
			if e != nil || n < lo || n > hi {
				err = fmt.Errorf("annotation %s: %q is not a number from %d to %d", key, v, lo, hi)
			}
			*dst = n
		}
	}
	weight, priority := int(b.Weight), int(b.Priority)
	num(AnnotationWeight, 0, math.MaxInt32, &weight)
	num(AnnotationPriority, 0, math.MaxInt32, &priority)
	b.Weight, b.Priority = int32(weight), int32(priority) // within num's bounds, or an error
	var t int
	num(AnnotationTTL, 0, math.MaxInt32, &t)
	ttl = uint32(t)
	b.SetLabels(config.Labels{Location: strings.TrimSpace(ann[AnnotationLocation])})
	if v, ok := ann[AnnotationMode]; ok && err == nil {
		if mode, err = config.ParseMode(v); err != nil {
			err = fmt.Errorf("annotation %s: %w", AnnotationMode, err)
		}
	}
	if v, ok := ann[AnnotationPolicy]; ok && err == nil {
		if ref.Policy, err = config.ParseHealthPolicy(strings.TrimSpace(v)); err != nil {
			err = fmt.Errorf("annotation %s: %w", AnnotationPolicy, err)
		}
	}
	for _, s := range splitList(ann[AnnotationServices]) {
		if e := config.CheckKubernetesName("service", s); e != nil && err == nil {
			err = fmt.Errorf("annotation %s: %w", AnnotationServices, e)
		}
		ref.Services = append(ref.Services, s)
	}
	slices.Sort(ref.Services)
	ref.Services = slices.Compact(ref.Services)
	if ref.Policy == "" {
		ref.Policy = config.PolicyAny
	}
	key := AnnotationRecord
	if _, ok := ann[key]; !ok {
		key = AnnotationTetrate
	}
	records := splitList(ann[key])
	if len(records) == 0 && err == nil {
		err = fmt.Errorf("annotation %s names no record", key)
	}
	if err != nil {
		return nil, err
	}
	b.SetOrigin(config.Origin{Kubernetes: &ref})
	var out []addition
	for _, r := range records {
		relative := key == AnnotationTetrate && !strings.Contains(strings.TrimSuffix(r, "."), ".")
		name := config.CanonicalName(r)
		if e := config.CheckRecordName(name); e != nil {
			return nil, fmt.Errorf("annotation %s: %q: %w", key, r, e)
		}
		out = append(out, addition{record: name, mode: mode, ttl: ttl, backends: []config.Backend{b}, from: ref.String(), relative: relative})
	}
	return out, nil
}

// splitList returns the comma-separated items of s, trimmed, without empty ones.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
