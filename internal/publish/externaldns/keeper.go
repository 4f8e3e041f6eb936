// Package externaldns keeps the parent zones' delegation of the clusters' zones through
// ExternalDNS, as k8gb does (docs/kubernetes.md, "Delegation through ExternalDNS"): in its own
// cluster, each cluster's Meridian keeps one DNSEndpoint object (externaldns.k8s.io/v1alpha1)
// per delegated zone, holding the zone's NS records for every live cluster and each one's
// glue; ExternalDNS, whichever provider it runs (Route 53, Azure DNS, Cloudflare, NS1, Google,
// RFC 2136, ...), writes them into the parent zone. A cluster silent for longer than the
// stale threshold leaves the delegation, and comes back as soon as it is heard again. The
// objects of every cluster are alike, so ExternalDNS instances that share an owner see no
// conflict. It also writes the status of k8gb's ZoneDelegation resources: their name servers.
//
// A Keeper is a publisher: it reads what the engine hands it (the clusters and the zones) and
// writes outward. It starts nothing until Start.
package externaldns

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/kubeapi"
	"github.com/meridian-gslb/meridian/internal/periodic"
	"github.com/meridian-gslb/meridian/internal/source"
)

// Cluster is one cluster of the delegation.
type Cluster struct {
	// Site is its site (k8gb's geo tag), which names its name server.
	Site string
	// Glue are its name server's addresses.
	Glue []netip.Addr
	// Seen is when it was last heard from alive; zero for this cluster, always in.
	Seen time.Time
}

// Zone is a zone whose delegation is kept.
type Zone struct {
	// Origin and Parent are the zone and its parent, canonical.
	Origin, Parent string
	// Object is the name of the ZoneDelegation the zone comes from, whose status is written;
	// empty for the block's own zones.
	Object string
}

// State is what the keeper keeps the delegations of.
type State struct {
	Zones []Zone
	// Self is this cluster; Others the other clusters known.
	Self   Cluster
	Others []Cluster
}

// roundInterval bounds the time between two rounds: a cluster leaves the delegation at most
// this late after its stale threshold.
const roundInterval = 10 * time.Second

// Keeper keeps the DNSEndpoints of the delegations, and the ZoneDelegations' status. It lives
// as long as the block's health manager, across Corefile reloads.
type Keeper struct {
	kube config.KubernetesOptions

	mu    sync.Mutex
	opts  config.ExternalDNSOptions // with defaults
	state func() State
	log   source.Logger
	// client is the dynamic client, made at the first round.
	client dynamic.Interface
	// applied is the fingerprint of what was last written of each object, by name; rounds
	// counts the rounds, every refreshEvery-th of which writes every object again.
	applied map[string]string
	rounds  int
	// lastErr is the last error logged, so that one cause is logged once.
	lastErr string
	loop    periodic.Loop
}

// refreshEvery is how many rounds go by between writes of objects that did not change: an
// object deleted by hand comes back.
const refreshEvery = 6

// New returns the keeper of the delegations, whose client reaches the API server as kube
// says. It writes nothing until Start.
func New(kube config.KubernetesOptions) *Keeper {
	return &Keeper{kube: kube, applied: map[string]string{}}
}

// Configure makes opts the keeper's options and state the source of what it keeps, from the
// next round on.
func (k *Keeper) Configure(opts config.ExternalDNSOptions, state func() State, log source.Logger) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.opts, k.state, k.log = opts.WithDefaults(), state, log
}

// Name implements publish.Publisher.
func (k *Keeper) Name() string { return "delegation through externaldns" }

// Start starts the rounds, the first at once. It may be called more than once.
func (k *Keeper) Start() {
	k.loop.Start(k.round, func() time.Duration {
		k.mu.Lock()
		defer k.mu.Unlock()
		return min(roundInterval, max(k.opts.StaleThreshold/3, 100*time.Millisecond))
	})
}

// Stop ends the rounds and waits for the one in progress.
func (k *Keeper) Stop() { k.loop.Stop() }

// round writes the DNSEndpoint of each zone that changed, deletes those of zones no longer
// kept, and writes the ZoneDelegations' status.
func (k *Keeper) round(ctx context.Context) {
	k.mu.Lock()
	opts, stateOf, log := k.opts, k.state, k.log
	k.rounds++
	refresh := k.rounds%refreshEvery == 0
	k.mu.Unlock()
	if stateOf == nil {
		return
	}
	c, err := k.dynamic()
	if err != nil {
		k.report(log, err)
		return
	}
	st := stateOf()
	live := Live(st, opts.StaleThreshold, time.Now())
	var errs []error
	keep := map[string]bool{}
	for _, z := range st.Zones {
		ep := Endpoint(z, live, opts)
		name := EndpointName(z.Origin)
		keep[name] = true
		if err := k.write(ctx, c, opts.Namespace, name, ep, refresh); err != nil {
			errs = append(errs, fmt.Errorf("the DNSEndpoint %s/%s: %w", opts.Namespace, name, err))
		}
		if z.Object != "" {
			if err := k.writeStatus(ctx, c, z, live, refresh); err != nil {
				errs = append(errs, fmt.Errorf("the status of ZoneDelegation %s: %w", z.Object, err))
			}
		}
	}
	if err := k.deleteOthers(ctx, c, opts.Namespace, keep); err != nil {
		errs = append(errs, err)
	}
	for _, err := range errs {
		k.report(log, err)
	}
	if len(errs) == 0 {
		k.report(log, nil)
	}
}

// report logs err once until another error, or success, comes.
func (k *Keeper) report(log source.Logger, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg == k.lastErr {
		return
	}
	k.lastErr = msg
	if log == nil {
		return
	}
	if err != nil {
		log.Warningf("externaldns: %v", err)
	} else {
		log.Infof("externaldns: the delegations are written")
	}
}

// dynamic returns the keeper's client, making it on first use.
func (k *Keeper) dynamic() (dynamic.Interface, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.client != nil {
		return k.client, nil
	}
	cfg, err := kubeapi.RESTConfig(k.kube)
	if err != nil {
		return nil, err
	}
	if k.client, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return k.client, nil
}

// Live returns the clusters of st in the delegation at now: this one, and each other one
// heard from within threshold, sorted by site (one entry a site, its glue sorted).
func Live(st State, threshold time.Duration, now time.Time) []Cluster {
	bySite := map[string]*Cluster{}
	add := func(c Cluster) {
		have := bySite[c.Site]
		if have == nil {
			have = &Cluster{Site: c.Site, Seen: c.Seen}
			bySite[c.Site] = have
		}
		have.Glue = append(have.Glue, c.Glue...)
		if have.Seen.Before(c.Seen) || c.Seen.IsZero() {
			have.Seen = c.Seen
		}
	}
	add(st.Self)
	for _, c := range st.Others {
		if c.Site != "" && c.Site != st.Self.Site && !c.Seen.IsZero() && now.Sub(c.Seen) <= threshold && len(c.Glue) > 0 {
			add(c)
		}
	}
	var out []Cluster
	for _, c := range bySite {
		slices.SortFunc(c.Glue, netip.Addr.Compare)
		c.Glue = slices.Compact(c.Glue)
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b Cluster) int { return cmp.Compare(a.Site, b.Site) })
	return out
}

// EndpointName returns the name of the DNSEndpoint of zone: k8gb's, k8gb-ns-extdns- and the
// zone's labels joined by hyphens, so that the object of a cluster that k8gb served is taken
// over in place.
func EndpointName(zone string) string {
	return "k8gb-ns-extdns-" + strings.ReplaceAll(strings.TrimSuffix(zone, "."), ".", "-")
}

// Endpoint returns the spec.endpoints of the DNSEndpoint of z with the clusters live: the
// zone's NS record listing every cluster's name server, and each name server's A and AAAA
// records (their glue), as ExternalDNS reads them (names without the final dot).
func Endpoint(z Zone, live []Cluster, opts config.ExternalDNSOptions) []any {
	var targets []any
	var glue []any
	for _, c := range live {
		ns := kubeapi.NSName(c.Site, z.Origin, z.Parent)
		targets = append(targets, strings.TrimSuffix(ns, "."))
		var v4, v6 []any
		for _, a := range c.Glue {
			if a.Is4() {
				v4 = append(v4, a.String())
			} else {
				v6 = append(v6, a.String())
			}
		}
		for typ, addrs := range map[string][]any{"A": v4, "AAAA": v6} {
			if len(addrs) > 0 {
				glue = append(glue, endpoint(ns, typ, opts.TTL, addrs))
			}
		}
	}
	slices.SortFunc(glue, func(a, b any) int {
		x, y := a.(map[string]any), b.(map[string]any)
		return cmp.Or(cmp.Compare(x["dnsName"].(string), y["dnsName"].(string)), cmp.Compare(x["recordType"].(string), y["recordType"].(string)))
	})
	return append([]any{endpoint(z.Origin, "NS", opts.TTL, targets)}, glue...)
}

// endpoint returns one endpoint of a DNSEndpoint.
func endpoint(name, typ string, ttl uint32, targets []any) map[string]any {
	return map[string]any{"dnsName": strings.TrimSuffix(name, "."), "recordType": typ, "recordTTL": int64(ttl), "targets": targets}
}
