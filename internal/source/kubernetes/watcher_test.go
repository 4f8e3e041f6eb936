package kubernetes

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/source"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// informerBound bounds how long a change applied through the API takes to reach the verdicts
// and the merged backends.
const informerBound = 5 * time.Second

// zoneYAML has a record whose backends are the Service shop/web and a static address.
const zoneYAML = `records:
  app.example.org.:
    mode: failover
    backends:
      - {kubernetes: {namespace: shop, service: web}, priority: 1, location: eu}
      - {address: 198.51.100.1, priority: 2}
`

// reports is what the watcher reported, by key: the Reporter the health manager is in the
// engine, recording instead of holding words.
type reports struct {
	mu   sync.Mutex
	last map[string]reported
	// stamp, when set, is called at each report; its value is kept in the history.
	stamp   func() int
	history []stamped
}

// stamped is one report, and what the reports' stamp said when it came.
type stamped struct {
	key string
	reported
	stamp int
}

type reported struct {
	status health.Status
	reason string
}

func (r *reports) Report(key string, st health.Status, reason string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last[key] = reported{st, reason}
	if r.stamp != nil {
		r.history = append(r.history, stamped{key, reported{st, reason}, r.stamp()})
	}
	return true
}

func (r *reports) get(key string) reported {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[key]
}

// testLog logs to the test.
type testLog struct{ t testing.TB }

func (l testLog) Infof(format string, args ...any)    { l.t.Logf(format, args...) }
func (l testLog) Warningf(format string, args ...any) { l.t.Logf("warning: "+format, args...) }

// harness is a watcher of a real API server, merged the way the engine merges it: again, and
// with ReportAll, every time its watch says the addresses changed.
type harness struct {
	t    *testing.T
	kube *testutil.Kube
	w    *Watcher
	src  source.BackendSets
	rep  *reports
	zone *config.Zone

	mu      sync.Mutex
	merged  map[string]config.Record // each record as last merged
	zones   []*config.Zone           // the zones as last merged
	reloads int                      // how many times the watch called
}

// newHarness starts an API server and a watcher of it with opts and the zone zoneYAML,
// resolving with resolver (nil: the system's).
func newHarness(t *testing.T, opts config.KubernetesOptions, resolver *net.Resolver) *harness {
	return newZoneHarness(t, opts, resolver, zoneYAML, nil)
}

// newZoneHarness starts an API server and a watcher of it with opts and the zone yml of
// example.org., resolving with resolver (nil: the system's); before the watcher starts, setup
// (when not nil) prepares the API server.
func newZoneHarness(t *testing.T, opts config.KubernetesOptions, resolver *net.Resolver, yml string, setup func(*testutil.Kube)) *harness {
	return newPreparedHarness(t, opts, resolver, yml, setup, nil)
}

// newPreparedHarness is newZoneHarness with prepare (when not nil) called on the watcher
// before it starts.
func newPreparedHarness(t *testing.T, opts config.KubernetesOptions, resolver *net.Resolver, yml string, setup func(*testutil.Kube), prepare func(*Watcher)) *harness {
	kube := testutil.StartKube(t)
	kube.Apply(t, testutil.KubeNamespace("shop"))
	if setup != nil {
		setup(kube)
	}
	opts.Kubeconfig = kube.Kubeconfig(t)
	z, err := config.ParseZone("zone.yml", []byte(yml), "example.org", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, kube: kube, rep: &reports{last: map[string]reported{}}, zone: z}
	h.w = NewWatcher(opts, h.rep, testLog{t})
	if resolver != nil {
		h.w.resolver = resolver
	}
	if prepare != nil {
		prepare(h.w)
	}
	h.src = h.w.Source()
	h.merge()
	stop, err := h.src.Watch(func() {
		h.mu.Lock()
		h.reloads++
		h.mu.Unlock()
		h.merge()
	}, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	h.w.Start()
	t.Cleanup(func() { stop(); h.w.Stop() })
	return h
}

// merge merges the zone and reports every verdict, as the engine's reload does.
func (h *harness) merge() {
	out, err := h.src.Merge([]*config.Zone{h.zone})
	if err != nil {
		h.t.Errorf("merge: %v", err)
		return
	}
	merged := map[string]config.Record{}
	for _, r := range out[0].Records {
		merged[r.Name] = r
	}
	h.mu.Lock()
	h.merged, h.zones = merged, out
	h.mu.Unlock()
	h.w.ReportAll()
}

// allUp is a catalog.HealthSource whose backends are all up.
type allUp struct{}

func (allUp) State(string) *health.State {
	st := &health.State{}
	st.Set(health.Up)
	return st
}

// snapshot returns the zones as last merged, compiled with every backend up: what the engine
// would serve.
func (h *harness) snapshot() *catalog.Snapshot {
	h.mu.Lock()
	zones := h.zones
	h.mu.Unlock()
	snap, err := catalog.Build(zones, allUp{})
	if err != nil {
		h.t.Error(err)
	}
	return snap
}

// reloadCount returns how many times the watch called.
func (h *harness) reloadCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reloads
}

// kubeAddrs returns the merged backends of app.example.org. that stand for the Service, and
// whether each is External with the kubernetes backend's settings.
func (h *harness) kubeAddrs() ([]string, bool) {
	out, all := h.backendsOf("app.example.org.", func(b config.Backend) bool {
		return b.External && !b.Remote && b.Priority == 1 && b.Labels().Location == "eu" && b.IP.String() == b.Address
	})
	return out, all
}

// backendsOf returns the addresses of the merged backends of record that stand for a
// Kubernetes object, and whether check holds for every one of them.
func (h *harness) backendsOf(record string, check func(config.Backend) bool) ([]string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	ok := true
	for _, b := range h.merged[record].Backends {
		if b.Kubernetes() != nil {
			out = append(out, b.Address)
			ok = ok && check(b)
		}
	}
	return out, ok
}

// record returns the merged record name and whether the merge has it.
func (h *harness) record(name string) (config.Record, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.merged[name]
	return r, ok
}

// wait waits until the Service's backends of app.example.org. are addrs, each with a verdict
// of status whose reason contains reason, and returns how long that took since start.
func (h *harness) wait(start time.Time, addrs []string, status health.Status, reason string) time.Duration {
	h.t.Helper()
	return h.waitRecord(start, "app.example.org.", addrs, status, reason)
}

// waitRecord is wait for the kubernetes backends of record.
func (h *harness) waitRecord(start time.Time, record string, addrs []string, status health.Status, reason string) time.Duration {
	h.t.Helper()
	all := func(config.Backend) bool { return true }
	testutil.Eventually(h.t, informerBound, func() bool {
		got, _ := h.backendsOf(record, all)
		if !slices.Equal(got, addrs) {
			return false
		}
		for _, a := range addrs {
			b := config.Backend{Address: a, IP: netip.MustParseAddr(a)}
			if r := h.rep.get(config.BackendKey(record, &b)); r.status != status || !strings.Contains(r.reason, reason) {
				return false
			}
		}
		return true
	}, "want the backends of %s %v %v (%q); have %v, reports %v", record, addrs, status, reason, func() []string { a, _ := h.backendsOf(record, all); return a }(), h.rep.last)
	return time.Since(start)
}

// TestWatcher follows one Service through the changes the cluster makes to it: each must reach
// the merged backends and their verdicts within the informer's delay.
func TestWatcher(t *testing.T) {
	t.Parallel()
	h := newHarness(t, config.KubernetesOptions{}, nil)
	if got, _ := h.kubeAddrs(); len(got) != 0 {
		t.Fatalf("before any Service: backends %v, want none", got)
	}
	steps := []struct {
		name    string
		apply   func()
		addrs   []string
		status  health.Status
		reason  string
		changes bool // false: the step must reach the verdicts without a reload
	}{
		{"a LoadBalancer address and a ready endpoint", func() {
			h.kube.Apply(h.t, testutil.KubeService("shop", "web"))
			h.kube.ApplyStatus(h.t, testutil.KubeService("shop", "web", "192.0.2.10"))
			h.kube.Apply(h.t, testutil.KubeEndpointSlice("shop", "web-1", "web", true))
		}, []string{"192.0.2.10"}, health.Up, "1 ready endpoints of Service shop/web", true},
		{"every endpoint not ready", func() {
			h.kube.Apply(h.t, testutil.KubeEndpointSlice("shop", "web-1", "web", false, false))
		}, []string{"192.0.2.10"}, health.Down, "no ready endpoint in the EndpointSlices of shop/web", false},
		{"scaled to zero", func() {
			h.kube.Apply(h.t, testutil.KubeEndpointSlice("shop", "web-1", "web"))
		}, []string{"192.0.2.10"}, health.Down, "no ready endpoint in the EndpointSlices of shop/web", false},
		{"one ready again, in a second slice", func() {
			h.kube.Apply(h.t, testutil.KubeEndpointSlice("shop", "web-2", "web", true))
		}, []string{"192.0.2.10"}, health.Up, "1 ready endpoints of Service shop/web", false},
		{"an IPv6 address too", func() {
			h.kube.ApplyStatus(h.t, testutil.KubeService("shop", "web", "192.0.2.10", "2001:db8::10"))
		}, []string{"192.0.2.10", "2001:db8::10"}, health.Up, "ready endpoints", true},
		{"no LoadBalancer address", func() {
			h.kube.ApplyStatus(h.t, testutil.KubeService("shop", "web"))
		}, nil, 0, "", true},
	}
	for _, s := range steps {
		before, start := h.reloadCount(), time.Now()
		s.apply()
		d := h.wait(start, s.addrs, s.status, s.reason)
		t.Logf("%s: from the API call to the backends and verdicts in %s", s.name, d.Round(time.Millisecond))
		if after := h.reloadCount(); s.changes == (after == before) {
			t.Errorf("%s: %d reloads, want them only when the addresses change", s.name, after-before)
		}
	}
	// The Service's address left the backends; its old key heard why.
	b := config.Backend{Address: "192.0.2.10", IP: netip.MustParseAddr("192.0.2.10")}
	if r := h.rep.get(config.BackendKey("app.example.org.", &b)); r.status != health.Down || !strings.Contains(r.reason, "no external address of Service shop/web") {
		t.Errorf("the removed address's last verdict = %+v, want down for no LoadBalancer address", r)
	}
	if _, ok := h.kubeAddrs(); !ok {
		t.Error("a merged backend is not External (and not another site's) with the kubernetes backend's settings")
	}
}

// TestWatcherHostname checks that a LoadBalancer address that changes to a host name becomes
// the addresses the name resolves to, resolved in the background by a real DNS server on
// loopback.
func TestWatcherHostname(t *testing.T) {
	t.Parallel()
	dnsAddr := testutil.StartDNS(t, dns.HandlerFunc(func(wr dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		if q.Question[0].Name == "lb.example.test." && q.Question[0].Qtype == dns.TypeA {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: "lb.example.test.", Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5}, A: net.ParseIP("192.0.2.30")})
		}
		_ = wr.WriteMsg(m)
	}), nil)
	h := newHarness(t, config.KubernetesOptions{Namespaces: []string{"shop"}}, &net.Resolver{PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, dnsAddr)
		}})
	h.kube.Apply(t, testutil.KubeService("shop", "web"))
	h.kube.ApplyStatus(t, testutil.KubeService("shop", "web", "192.0.2.10"))
	h.kube.Apply(t, testutil.KubeEndpointSlice("shop", "web-1", "web", true))
	h.wait(time.Now(), []string{"192.0.2.10"}, health.Up, "ready endpoints of Service shop/web")
	start := time.Now()
	h.kube.ApplyStatus(t, testutil.KubeService("shop", "web", "lb.example.test"))
	d := h.wait(start, []string{"192.0.2.30"}, health.Up, "ready endpoints of Service shop/web")
	t.Logf("the address changed to a host name, resolved and merged in %s", d.Round(time.Millisecond))
}

// TestCheckNamespaces checks that a backend outside kubernetes_namespaces is an error naming
// its position, and that Check makes a Service one address of each family (for its checks to be
// compiled) and leaves the other backends.
func TestCheckNamespaces(t *testing.T) {
	z, err := config.ParseZone("zone.yml", []byte(zoneYAML), "example.org", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		namespaces []string
		wantErr    string
	}{
		{nil, ""},
		{[]string{"shop", "web"}, ""},
		{[]string{"web"}, "zone.yml:5:9: backend of app.example.org.: the Service shop/web is in a namespace that kubernetes_namespaces does not watch"},
	}
	for _, tt := range tests {
		out, err := Check([]*config.Zone{z}, config.KubernetesOptions{Namespaces: tt.namespaces})
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: error %v, want %q", tt.namespaces, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tt.namespaces, err)
		} else if bs := out[0].Records[0].Backends; len(bs) != 3 || bs[0].Address != "192.0.2.1" || bs[1].Address != "2001:db8::1" || bs[2].Address != "198.51.100.1" {
			t.Errorf("%v: backends %+v, want the Service as one address of each family, and the static one", tt.namespaces, bs)
		}
		if len(z.Records[0].Backends) != 2 {
			t.Fatal("Check changed its input")
		}
	}
}

// TestExpandSharesChecks: the backends an object's addresses become share the object's
// backend's checks (which nothing changes once parsed) rather than each keeping a copy.
func TestExpandSharesChecks(t *testing.T) {
	z, err := config.ParseZone("zone.yml", []byte(`records:
  app.example.org.:
    backends:
      - {kubernetes: {namespace: shop, service: web}, healthchecks: [{type: tcp, params: {port: 443}}]}
`), "example.org", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Check([]*config.Zone{z}, config.KubernetesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bs := out[0].Records[0].Backends
	if len(bs) != 2 {
		t.Fatalf("backends %+v, want two", bs)
	}
	template := z.Records[0].Backends[0].Checks()
	for _, b := range bs {
		if b.Checks() != template {
			t.Errorf("%s has checks of its own", b.Address)
		}
	}
	if p := template.HealthChecks[0].Params.Map()["port"]; p != 443 {
		t.Errorf("the check's port is %v, want 443", p)
	}
}
