// Package kubernetes is the Kubernetes source (see docs/kubernetes.md). Backends that stand
// for a Kubernetes object (kubernetes: {namespace, service | ingress | gateway}, on a backend
// or a record; or a Service, Ingress or Gateway annotated meridian.io/record; or a host of
// k8gb's Gslb resources) become the object's external addresses, and their health is the
// cluster's own signal: up while the object has an address and its Services have ready
// endpoints (any or all of them), and optionally while Istio's gateway proxies are synced;
// down at once otherwise. A Watcher follows the objects with client-go's shared informers,
// off the query path; it is a source of backend sets (its Source) and of health verdicts,
// which it reports through a source.Reporter, and it writes the status of the Gslb resources
// it serves. It lives as long as the block's health manager.
package kubernetes

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	k8s "k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/kubeapi"
	"github.com/meridian-gslb/meridian/internal/periodic"
	"github.com/meridian-gslb/meridian/internal/source"
)

// The timing of the background work.
const (
	// resolveInterval and resolveTimeout time the resolution of the objects' host names.
	resolveInterval = 30 * time.Second
	resolveTimeout  = 5 * time.Second
	// discoverInterval is how often the API server is asked again for the custom resources
	// (the Gateway API, k8gb's Gslb) it did not serve.
	discoverInterval = 30 * time.Second
	// statusInterval is how often the Gslb resources' status is computed again (and written
	// where it changed), besides after each change the informers saw.
	statusInterval = 5 * time.Second
)

// Watcher follows the Kubernetes objects the zones' kubernetes backends name, those annotated
// meridian.io/record, and (with the k8gb option) the Gslb resources. It connects to the API
// server at the first merge that needs it and reads once started.
type Watcher struct {
	opts     config.KubernetesOptions
	reporter source.Reporter
	log      source.Logger
	resolver *net.Resolver

	mu      sync.Mutex
	conn    *conn // nil until a merge needs it
	started bool
	// ctx ends the background work at Stop.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kicks  chan struct{}
	// merged is what the last merge expanded each backend to, by use key; added is what it
	// added to the zones (from annotations and Gslb resources), to tell when that changes.
	merged map[string]*use
	added  string
	// resolved are the addresses of the objects' host names, by name.
	resolved map[string][]netip.Addr
	watchers source.Watchers
	// site and served are the engine's (Configure): this site's name (k8gb's geo tag), and
	// what the answers are.
	site   string
	served Served
	// gslbs is what the last merge made of the Gslb resources, for their status.
	gslbs []*gslb
	// written is the status last written to each Gslb resource, by its identity; statusMu
	// serialises the rounds that write them.
	written  map[string]gslbStatus
	statusMu sync.Mutex
	// kept is the state last applied of each object kept for k8gb's resources (keep), by key.
	kept  map[string]string
	istio *istioCheck // nil without istio_sync_check
	// warned is the last warning logged for each of its keys (warnOnce).
	warned map[string]string

	resolves, discovers, statuses, istioRounds periodic.Loop
}

// Served returns the snapshot the engine serves, from which the Gslb resources' healthy
// records are read.
type Served func() *catalog.Snapshot

// conn is the watcher's connection: its clients, and the informers and their listers, one
// factory per watched namespace ("" for all).
type conn struct {
	client    k8s.Interface
	dynamic   dynamic.Interface
	factories []informers.SharedInformerFactory
	dynamics  []dynamicinformer.DynamicSharedInformerFactory
	services  map[string]corelisters.ServiceLister
	slices    map[string]discoverylisters.EndpointSliceLister
	ingresses map[string]networkinglisters.IngressLister
	// clusterDynamic is the informer factory of every namespace, for the cluster-scoped
	// custom resources.
	clusterDynamic dynamicinformer.DynamicSharedInformerFactory
	// custom are the informers of the custom resources the API server serves, by name; a
	// resource is absent until discovery found it.
	custom  map[string]*watched
	stop    chan struct{}
	running bool
}

// NewWatcher returns the watcher of opts, reporting its verdicts to reporter and logging to log.
// It connects to nothing yet.
func NewWatcher(opts config.KubernetesOptions, reporter source.Reporter, log source.Logger) *Watcher {
	w := &Watcher{opts: opts, reporter: reporter, log: log, resolver: net.DefaultResolver,
		resolved: map[string][]netip.Addr{}, written: map[string]gslbStatus{}, kicks: make(chan struct{}, 1)}
	if opts.IstioSyncURL != "" {
		w.istio = newIstioCheck(opts.IstioSyncURL)
	}
	return w
}

// Configure gives the watcher the engine's site (this cluster's geo tag for the Gslb
// resources) and what it serves, from which the Gslb resources' healthy records are written.
// The engine calls it after each load that succeeded.
func (w *Watcher) Configure(site string, served Served) {
	w.mu.Lock()
	changed := w.site != site
	w.site, w.served = site, served
	w.mu.Unlock()
	if changed {
		w.kick()
	}
}

// connectLocked makes the watcher's connection, unless it has one, and runs it when the
// watcher is started. It reads the kubeconfig file but waits on no network.
func (w *Watcher) connectLocked() error {
	if w.conn != nil {
		return nil
	}
	cfg, err := kubeapi.RESTConfig(w.opts)
	if err != nil {
		return err
	}
	client, err := k8s.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes dynamic client: %w", err)
	}
	c := &conn{client: client, dynamic: dyn, services: map[string]corelisters.ServiceLister{},
		slices: map[string]discoverylisters.EndpointSliceLister{}, ingresses: map[string]networkinglisters.IngressLister{},
		custom: map[string]*watched{}, stop: make(chan struct{}),
		clusterDynamic: dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, "", nil)}
	for _, ns := range w.namespaces() {
		f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
		services, endpointSlices, ingresses := f.Core().V1().Services(), f.Discovery().V1().EndpointSlices(), f.Networking().V1().Ingresses()
		for _, inf := range []cache.SharedIndexInformer{services.Informer(), endpointSlices.Informer(), ingresses.Informer()} {
			if _, err := inf.AddEventHandler(w.handler()); err != nil {
				return fmt.Errorf("watch: %w", err)
			}
		}
		c.services[ns], c.slices[ns], c.ingresses[ns] = services.Lister(), endpointSlices.Lister(), ingresses.Lister()
		c.factories = append(c.factories, f)
		c.dynamics = append(c.dynamics, dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil))
	}
	w.conn = c
	if w.started {
		c.run()
	}
	return nil
}

// RESTConfig returns the configuration of the clients of opts: its kubeconfig file, or the
// in-cluster configuration (the pod's service account). It reads the file but waits on no
// namespaces returns the namespaces a factory each watches: those of kubernetes_namespaces,
// or "" for all.
func (w *Watcher) namespaces() []string {
	if len(w.opts.Namespaces) == 0 {
		return []string{""}
	}
	return w.opts.Namespaces
}

// factoryNamespace returns the namespace of the factory that watches namespace.
func (c *conn) factoryNamespace(namespace string) string {
	if _, ok := c.services[namespace]; ok {
		return namespace
	}
	return "" // every namespace is watched
}

// run starts the connection's informers (those added since, when called again).
func (c *conn) run() {
	c.running = true
	for _, f := range c.factories {
		f.Start(c.stop)
	}
	for _, f := range c.dynamics {
		f.Start(c.stop)
	}
	c.clusterDynamic.Start(c.stop)
}

// close stops the connection's informers and waits for them.
func (c *conn) close() {
	close(c.stop)
	for _, f := range c.factories {
		f.Shutdown()
	}
	for _, f := range c.dynamics {
		f.Shutdown()
	}
	c.clusterDynamic.Shutdown()
}

// dynamicGet returns the custom resource namespace/name of res (name alone for a
// cluster-scoped one), nil when the informers do not know it (or the API server does not
// serve res).
func (c *conn) dynamicGet(res custom, namespace, name string) *unstructured.Unstructured {
	wd := c.custom[res.name]
	if wd == nil {
		return nil
	}
	var obj runtime.Object
	var err error
	if res.clusterScoped {
		obj, err = wd.listers[""].Get(name)
	} else if l := wd.listers[c.factoryNamespace(namespace)]; l != nil {
		obj, err = l.ByNamespace(namespace).Get(name)
	} else {
		return nil
	}
	if err != nil {
		return nil
	}
	u, _ := obj.(*unstructured.Unstructured)
	return u
}

// dynamicList returns every custom resource of res the informers know whose labels sel
// matches (nil: every one), in namespace ("": every namespace), sorted by namespace and name.
func (c *conn) dynamicList(res custom, namespace string, sel labels.Selector) []*unstructured.Unstructured {
	wd := c.custom[res.name]
	if wd == nil {
		return nil
	}
	if sel == nil {
		sel = labels.Everything()
	}
	var out []*unstructured.Unstructured
	for ns, l := range wd.listers {
		var objs []runtime.Object
		switch {
		case namespace == "" || res.clusterScoped:
			objs, _ = l.List(sel) // a lister fails only on a bad selector
		case ns == "" || ns == namespace:
			objs, _ = l.ByNamespace(namespace).List(sel)
		}
		for _, o := range objs {
			if u, ok := o.(*unstructured.Unstructured); ok {
				out = append(out, u)
			}
		}
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int {
		return cmp.Compare(a.GetNamespace()+"/"+a.GetName(), b.GetNamespace()+"/"+b.GetName())
	})
	return out
}

// handler returns the informer handler that tells the watcher something changed.
func (w *Watcher) handler() cache.ResourceEventHandler {
	on := func(any) { w.kick() }
	return cache.ResourceEventHandlerFuncs{AddFunc: on, UpdateFunc: func(_, obj any) { on(obj) }, DeleteFunc: on}
}

// kick asks the refresh loop for a refresh; kicks that come while one is pending are one.
func (w *Watcher) kick() {
	select {
	case w.kicks <- struct{}{}:
	default:
	}
}

// refreshLoop refreshes after each kick until ctx ends.
func (w *Watcher) refreshLoop(ctx context.Context) {
	defer w.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kicks:
			w.refresh()
			w.writeStatuses(ctx)
		}
	}
}

// refresh acts on what the cluster says now: every merged backend gets its verdict, new host
// names are resolved, and the watches are told when the addresses of a merged object, or what
// the merge would add to the zones, changed.
func (w *Watcher) refresh() {
	w.mu.Lock()
	if w.conn == nil {
		w.mu.Unlock()
		return
	}
	_, span := otel.Tracer("meridian/kubernetes").Start(context.Background(), "kubernetes refresh")
	defer span.End()
	refreshes.Inc()
	batches, moved := w.verdictsLocked()
	if !moved {
		_, fingerprint := w.additionsLocked()
		moved = fingerprint != w.added
	}
	w.mu.Unlock()
	report(w.reporter, batches)
	if moved {
		w.watchers.Call()
	}
}

// batch is the verdict on the backends with keys.
type batch struct {
	keys []string
	v    verdict
}

// verdictsLocked returns the verdict on every merged backend, and whether the address of any
// of them is no longer what was merged. It starts the resolution of host names not seen yet.
func (w *Watcher) verdictsLocked() ([]batch, bool) {
	moved := false
	out := make([]batch, 0, len(w.merged))
	for _, u := range w.merged {
		t := w.targetLocked(u.ref, u.record)
		w.resolveNewLocked(t.hostnames)
		moved = moved || !slices.Equal(t.addrs, u.addrs)
		out = append(out, batch{u.keys, judge(u.ref, t, w.serviceHealthLocked)})
	}
	return out, moved
}

// report hands the verdicts of batches to r.
func report(r source.Reporter, batches []batch) {
	for _, b := range batches {
		for _, k := range b.keys {
			r.Report(k, b.v.status, b.v.reason)
		}
	}
}

// ReportAll reports the current verdict on every backend of the last merge. The engine calls
// it after each snapshot's backends reached the health manager, whose new ones start unknown.
func (w *Watcher) ReportAll() {
	w.mu.Lock()
	var batches []batch
	if w.conn != nil {
		batches, _ = w.verdictsLocked()
	}
	w.mu.Unlock()
	report(w.reporter, batches)
}

// Name names the watcher as a publisher (of the Gslb resources' status).
func (w *Watcher) Name() string { return "kubernetes" }

// Start starts reading: the informers (once a merge connected them), the discovery of the
// custom resources, the resolution of host names every 30 seconds, the Gslb status and the
// Istio check. It may be called more than once.
func (w *Watcher) Start() {
	w.mu.Lock()
	if !w.started {
		w.started = true
		w.ctx, w.cancel = context.WithCancel(context.Background())
		if w.conn != nil {
			w.conn.run()
		}
		w.wg.Add(1)
		go w.refreshLoop(w.ctx)
	}
	w.mu.Unlock()
	w.resolves.Start(w.resolveAll, func() time.Duration { return resolveInterval })
	w.discovers.Start(w.discover, func() time.Duration { return discoverInterval })
	if w.opts.K8gb {
		w.statuses.Start(w.writeStatuses, func() time.Duration { return statusInterval })
	}
	if w.istio != nil {
		w.istioRounds.Start(w.checkIstio, func() time.Duration { return w.opts.IstioSyncInterval })
	}
}

// Stop ends what Start started and waits for it; the connection closes.
func (w *Watcher) Stop() {
	w.resolves.Stop()
	w.discovers.Stop()
	w.statuses.Stop()
	w.istioRounds.Stop()
	w.mu.Lock()
	c := w.conn
	w.conn, w.started = nil, false
	if w.cancel != nil {
		w.cancel()
	}
	w.mu.Unlock()
	w.wg.Wait()
	if c != nil {
		c.close()
	}
}

// Source returns the watcher as a source of backend sets for one engine.
func (w *Watcher) Source() source.BackendSets { return &Source{w: w} }

// Source is a Watcher as a source of backend sets (source.BackendSets).
type Source struct{ w *Watcher }

// Name implements source.BackendSets.
func (s *Source) Name() string { return "kubernetes" }

// Merge implements source.BackendSets: the records and backends that annotated objects and Gslb
// resources stand for are added to the zones, and each kubernetes backend becomes one backend
// per external address that its object had when last read (none before the first read),
// marked External: their health is the cluster's signals, reported. It connects the watcher
// when zones first need it, without waiting on the network.
func (s *Source) Merge(zones []*config.Zone) ([]*config.Zone, error) {
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.opts.Enabled(zones) {
		w.merged, w.gslbs = nil, nil
		return zones, nil
	}
	if err := w.connectLocked(); err != nil {
		return nil, err
	}
	adds, fingerprint := w.additionsLocked()
	zones, err := w.zoneDelegationZonesLocked(zones)
	if err != nil {
		return nil, err
	}
	zones, gslbs := w.addLocked(zones, adds)
	out, uses, err := expand(zones, w.opts, func(ref config.KubernetesRef, record string) []netip.Addr {
		t := w.targetLocked(ref, record)
		w.resolveNewLocked(t.hostnames)
		return t.addrs
	})
	if err != nil {
		return nil, err
	}
	w.merged, w.added, w.gslbs = uses, fingerprint, gslbs
	gslbsServed.Set(float64(len(gslbs)))
	return out, nil
}

// Watch implements source.BackendSets: changed is called when what Merge returns changed (an
// object's addresses, the annotated objects, the Gslb resources), until stop.
func (s *Source) Watch(changed func(), _ source.Logger) (func(), error) {
	return s.w.watchers.Add(changed), nil
}
