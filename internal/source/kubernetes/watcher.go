// Package kubernetes is the Kubernetes source (see docs/kubernetes.md): backends that stand for
// a Service (kubernetes: {namespace, service}) become the Service's LoadBalancer ingress
// addresses, and their health is the cluster's own signal: up when the Service has an external
// address and at least one ready endpoint in its EndpointSlices, down at once otherwise. A
// Watcher follows Services and EndpointSlices with client-go's shared informers, off the
// query path; it is a source of backend sets (its Source) and of health verdicts, which it
// reports through a source.Reporter. It lives as long as the block's health manager.
package kubernetes

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	k8s "k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/source"
	"github.com/meridian-gslb/meridian/internal/source/periodic"
)

// The timing of the LoadBalancer host names' resolution.
const (
	resolveInterval = 30 * time.Second
	resolveTimeout  = 5 * time.Second
)

// Watcher follows the Services that the zones' kubernetes backends name, and their
// EndpointSlices. It connects to the API server at the first merge that needs it and reads
// once started.
type Watcher struct {
	opts     config.KubernetesOptions
	reporter source.Reporter
	log      source.Logger
	resolver *net.Resolver

	mu      sync.Mutex
	conn    *conn // nil until a merge needs it
	started bool
	// ctx ends the background resolutions at Stop.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// merged is what the last merge expanded each Service to.
	merged map[config.KubernetesRef]*use
	// resolved are the addresses of the LoadBalancer host names, by name.
	resolved map[string][]netip.Addr
	watchers source.Watchers

	resolves periodic.Loop
}

// conn is the watcher's connection: the informers and their listers, one factory per watched
// namespace ("" for all).
type conn struct {
	factories []informers.SharedInformerFactory
	services  map[string]corelisters.ServiceLister
	slices    map[string]discoverylisters.EndpointSliceLister
	stop      chan struct{}
	running   bool
}

// NewWatcher returns the watcher of opts, reporting its verdicts to reporter and logging to log.
// It connects to nothing yet.
func NewWatcher(opts config.KubernetesOptions, reporter source.Reporter, log source.Logger) *Watcher {
	return &Watcher{opts: opts, reporter: reporter, log: log, resolver: net.DefaultResolver,
		resolved: map[string][]netip.Addr{}}
}

// connectLocked makes the watcher's connection, unless it has one, and runs it when the
// watcher is started. It reads the kubeconfig file but waits on no network.
func (w *Watcher) connectLocked() error {
	if w.conn != nil {
		return nil
	}
	var cfg *rest.Config
	var err error
	if w.opts.Kubeconfig != "" {
		if cfg, err = clientcmd.BuildConfigFromFlags("", w.opts.Kubeconfig); err != nil {
			return fmt.Errorf("kubeconfig %s: %w", w.opts.Kubeconfig, err)
		}
	} else if cfg, err = rest.InClusterConfig(); err != nil {
		return fmt.Errorf("no kubeconfig option, and the in-cluster configuration: %w", err)
	}
	cfg.UserAgent = "meridian"
	client, err := k8s.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	c := &conn{services: map[string]corelisters.ServiceLister{}, slices: map[string]discoverylisters.EndpointSliceLister{}, stop: make(chan struct{})}
	namespaces := w.opts.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	for _, ns := range namespaces {
		f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
		services, endpointSlices := f.Core().V1().Services(), f.Discovery().V1().EndpointSlices()
		if _, err := services.Informer().AddEventHandler(w.handler(serviceOf)); err != nil {
			return fmt.Errorf("watch Services: %w", err)
		}
		if _, err := endpointSlices.Informer().AddEventHandler(w.handler(endpointSliceService)); err != nil {
			return fmt.Errorf("watch EndpointSlices: %w", err)
		}
		c.services[ns], c.slices[ns] = services.Lister(), endpointSlices.Lister()
		c.factories = append(c.factories, f)
	}
	w.conn = c
	if w.started {
		c.run()
	}
	return nil
}

// run starts the connection's informers.
func (c *conn) run() {
	if c.running {
		return
	}
	c.running = true
	for _, f := range c.factories {
		f.Start(c.stop)
	}
}

// close stops the connection's informers and waits for them.
func (c *conn) close() {
	close(c.stop)
	for _, f := range c.factories {
		f.Shutdown()
	}
}

// handler returns the informer handler that hands the Service that an object concerns (as
// service tells, false when none) to changed.
func (w *Watcher) handler(service func(obj any) (config.KubernetesRef, bool)) cache.ResourceEventHandler {
	on := func(obj any) {
		if ref, ok := service(obj); ok {
			w.changed(ref)
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: on, UpdateFunc: func(_, obj any) { on(obj) }, DeleteFunc: on}
}

// serviceOf returns the Service obj is (or was, for a deleted one).
func serviceOf(obj any) (config.KubernetesRef, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	s, ok := obj.(*corev1.Service)
	if !ok {
		return config.KubernetesRef{}, false
	}
	return config.KubernetesRef{Namespace: s.Namespace, Service: s.Name}, true
}

// endpointSliceService returns the Service whose endpoints obj lists (or listed).
func endpointSliceService(obj any) (config.KubernetesRef, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok || s.Labels[discoveryv1.LabelServiceName] == "" {
		return config.KubernetesRef{}, false
	}
	return config.KubernetesRef{Namespace: s.Namespace, Service: s.Labels[discoveryv1.LabelServiceName]}, true
}

// changed acts on a change of what the cluster says of ref: when the last merge used it, its
// backends get their verdict at once, new LoadBalancer host names are resolved, and the
// watches are told when its addresses are no longer what was merged.
func (w *Watcher) changed(ref config.KubernetesRef) {
	w.mu.Lock()
	u := w.merged[ref]
	if u == nil {
		w.mu.Unlock()
		return
	}
	svc, slices := w.lookupLocked(ref)
	addrs, hostnames := ingress(svc, w.resolved)
	v := judge(ref, svc, slices, addrs)
	w.resolveNewLocked(hostnames)
	moved := !equalAddrs(addrs, u.addrs)
	keys := u.keys
	w.mu.Unlock()
	w.report(keys, v)
	if moved {
		w.watchers.Call()
	}
}

// lookupLocked returns the Service ref (nil when the watcher does not know it) and its
// EndpointSlices, as the informers last read them.
func (w *Watcher) lookupLocked(ref config.KubernetesRef) (*corev1.Service, []*discoveryv1.EndpointSlice) {
	if w.conn == nil {
		return nil, nil
	}
	ns := ref.Namespace
	if _, ok := w.conn.services[ns]; !ok {
		ns = "" // every namespace is watched
	}
	svc, err := w.conn.services[ns].Services(ref.Namespace).Get(ref.Service)
	if err != nil {
		return nil, nil
	}
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: ref.Service})
	slices, _ := w.conn.slices[ns].EndpointSlices(ref.Namespace).List(sel) // a lister fails only on a bad selector
	return svc, slices
}

// report hands the verdict v on the backends with keys to the reporter.
func (w *Watcher) report(keys []string, v verdict) {
	for _, k := range keys {
		w.reporter.Report(k, v.status, v.reason)
	}
}

// ReportAll reports the current verdict on every backend of the Services of the last merge.
// The engine calls it after each snapshot's backends reached the health manager, whose new
// ones start unknown.
func (w *Watcher) ReportAll() {
	type batch struct {
		keys []string
		v    verdict
	}
	w.mu.Lock()
	var all []batch
	for ref, u := range w.merged {
		svc, slices := w.lookupLocked(ref)
		all = append(all, batch{u.keys, judge(ref, svc, slices, u.addrs)})
	}
	w.mu.Unlock()
	for _, b := range all {
		w.report(b.keys, b.v)
	}
}

// Start starts reading: the informers (once a merge connected them) and the resolution of the
// LoadBalancer host names every 30 seconds. It may be called more than once.
func (w *Watcher) Start() {
	w.mu.Lock()
	if !w.started {
		w.started = true
		w.ctx, w.cancel = context.WithCancel(context.Background())
		if w.conn != nil {
			w.conn.run()
		}
	}
	w.mu.Unlock()
	w.resolves.Start(w.resolveAll, func() time.Duration { return resolveInterval })
}

// Stop ends what Start started and waits for it; the connection closes.
func (w *Watcher) Stop() {
	w.resolves.Stop()
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
func (w *Watcher) Source() *Source { return &Source{w: w} }

// Source is a Watcher as a source of backend sets (source.Backends).
type Source struct{ w *Watcher }

// Name implements source.Backends.
func (s *Source) Name() string { return "kubernetes" }

// Merge implements source.Backends: each kubernetes backend becomes one backend per
// LoadBalancer address that its Service had when last read (none before the first read),
// marked External: their health is the Service's readiness, reported, never probed. It connects
// the watcher when zones first need it, without waiting on the network.
func (s *Source) Merge(zones []*config.Zone) ([]*config.Zone, error) {
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.opts.Enabled(zones) {
		w.merged = nil
		return zones, nil
	}
	if err := w.connectLocked(); err != nil {
		return nil, err
	}
	out, uses, err := expand(zones, w.opts, func(ref config.KubernetesRef) []netip.Addr {
		svc, _ := w.lookupLocked(ref)
		addrs, hostnames := ingress(svc, w.resolved)
		w.resolveNewLocked(hostnames)
		return addrs
	})
	if err != nil {
		return nil, err
	}
	w.merged = uses
	return out, nil
}

// Watch implements source.Backends: changed is called when a merged Service's LoadBalancer
// addresses change, until stop.
func (s *Source) Watch(changed func(), _ source.Logger) (func(), error) {
	return s.w.watchers.Add(changed), nil
}

// equalAddrs reports whether a and b are the same sorted addresses.
func equalAddrs(a, b []netip.Addr) bool { return slices.Equal(a, b) }
