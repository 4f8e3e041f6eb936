package externaldns

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/kubeapi"
	"github.com/meridian-gslb/meridian/internal/published"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// addrs parses addresses.
func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

// TestLive checks which clusters are in the delegation: this one always; another one while it
// was heard from within the threshold and has glue (the addresses of its peers heard from);
// one entry a site.
func TestLive(t *testing.T) {
	now := time.Now()
	st := State{
		Self: Cluster{Site: "eu", Glue: addrs("192.0.2.53", "2001:db8::53")},
		Others: []Cluster{
			{Site: "us", Glue: addrs("198.51.100.53"), Seen: now.Add(-time.Minute)},
			{Site: "us", Glue: addrs("198.51.100.54"), Seen: now.Add(-10 * time.Minute)}, // another peer of us, silent
			{Site: "za", Glue: addrs("203.0.113.53"), Seen: now.Add(-6 * time.Minute)},   // past the threshold
			{Site: "ap", Glue: addrs("203.0.113.54")},                                    // never heard from
			{Site: "sa", Seen: now},                            // no glue (a peer by host name)
			{Site: "eu", Glue: addrs("192.0.2.99"), Seen: now}, // this site, by another peer
		},
	}
	got := Live(st, 5*time.Minute, now)
	var sites []string
	for _, c := range got {
		sites = append(sites, c.Site)
	}
	if !slices.Equal(sites, []string{"eu", "us"}) {
		t.Fatalf("live sites %v, want eu and us", sites)
	}
	if !slices.Equal(got[0].Glue, addrs("192.0.2.53", "2001:db8::53")) || !got[0].Seen.IsZero() {
		t.Errorf("eu: %+v, want its own glue alone", got[0])
	}
	if !slices.Equal(got[1].Glue, addrs("198.51.100.53")) {
		t.Errorf("us: glue %v, want the address of its peer that answers, not the silent one's", got[1].Glue)
	}
}

// TestEndpoint checks the DNSEndpoint of a zone: its name (k8gb's), the zone's NS record of
// every live cluster's name server (k8gb's names), and their glue, A and AAAA, sorted.
func TestEndpoint(t *testing.T) {
	z := Zone{Origin: "cloud.example.com.", Parent: "example.com."}
	live := []Cluster{{Site: "eu", Glue: addrs("192.0.2.53", "2001:db8::53")}, {Site: "us", Glue: addrs("198.51.100.53")}}
	got, err := json.Marshal(Endpoint(z, live, config.ExternalDNSOptions{TTL: 30}))
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"dnsName":"cloud.example.com","recordTTL":30,"recordType":"NS","targets":["gslb-ns-eu-cloud.example.com","gslb-ns-us-cloud.example.com"]},` +
		`{"dnsName":"gslb-ns-eu-cloud.example.com","recordTTL":30,"recordType":"A","targets":["192.0.2.53"]},` +
		`{"dnsName":"gslb-ns-eu-cloud.example.com","recordTTL":30,"recordType":"AAAA","targets":["2001:db8::53"]},` +
		`{"dnsName":"gslb-ns-us-cloud.example.com","recordTTL":30,"recordType":"A","targets":["198.51.100.53"]}]`
	if string(got) != want {
		t.Errorf("endpoints\n%s\nwant\n%s", got, want)
	}
	if n := EndpointName(z.Origin); n != "k8gb-ns-extdns-cloud-example-com" {
		t.Errorf("EndpointName = %s, want k8gb's k8gb-ns-extdns-cloud-example-com", n)
	}
	if n := kubeapi.NSName("eu", "a.b.example.com.", "example.com."); n != "gslb-ns-eu-a-b.example.com." {
		t.Errorf("NSName of a zone two labels below its parent = %s", n)
	}
}

// TestStateOf checks the state the engine hands the keeper: the block's zones below the parent
// and the ZoneDelegations' zones; the other sites from the fleet's peers, seen when they last
// answered or when their heartbeat stopped, with their peers' addresses as glue.
func TestStateOf(t *testing.T) {
	now := time.Now()
	opts := config.ExternalDNSOptions{Parent: "example.com.", Glue: addrs("192.0.2.53")}
	view := func() published.View {
		return published.View{
			Peers: []published.PeerView{
				{Address: "198.51.100.53:53", Site: "us", LastAnswer: now},
				{Address: "203.0.113.53:5353", Site: "za", LastAnswer: now},
				{Address: "192.0.2.53:53", Site: "eu", Self: true, LastAnswer: now},
				{Address: "peer.example.net:53", Site: "ap", LastAnswer: now},
				{Address: "203.0.113.9:53"}, // never answered
			},
			Sites: []published.SiteView{{Name: "za", State: "stale", SilentSince: now.Add(-time.Hour)}},
		}
	}
	zds := []kubeapi.ZoneDelegation{{Name: "cloud2-example-com", Zone: "cloud2.example.com.", Parent: "example.com."},
		{Name: "cloud3", Zone: "cloud3.example.com.", Parent: "example.com."}}
	st := StateOf("eu", opts, []string{"cloud.example.com.", "cloud3.example.com.", "example.com.", "other.org."}, view, zds)
	wantZones := []Zone{{Origin: "cloud.example.com.", Parent: "example.com."}, {Origin: "cloud2.example.com.", Parent: "example.com.", Object: "cloud2-example-com"},
		{Origin: "cloud3.example.com.", Parent: "example.com.", Object: "cloud3"}}
	if !slices.Equal(st.Zones, wantZones) {
		t.Errorf("zones %+v, want %+v", st.Zones, wantZones)
	}
	if st.Self.Site != "eu" || !slices.Equal(st.Self.Glue, opts.Glue) {
		t.Errorf("self %+v", st.Self)
	}
	want := map[string]Cluster{
		"us": {Site: "us", Glue: addrs("198.51.100.53"), Seen: now},
		"za": {Site: "za", Glue: addrs("203.0.113.53"), Seen: now.Add(-time.Hour)},
		"ap": {Site: "ap", Seen: now},
	}
	if len(st.Others) != len(want) {
		t.Fatalf("others %+v, want %+v", st.Others, want)
	}
	for _, c := range st.Others {
		w := want[c.Site]
		if !slices.Equal(c.Glue, w.Glue) || !c.Seen.Equal(w.Seen) {
			t.Errorf("%s: %+v, want %+v", c.Site, c, w)
		}
	}
	if got := StateOf("eu", opts, nil, nil, nil); len(got.Others) != 0 || len(got.Zones) != 0 {
		t.Errorf("without a fleet nor zones: %+v", got)
	}
}

// testLog logs to the test.
type testLog struct{ t testing.TB }

func (l testLog) Infof(format string, args ...any)    { l.t.Logf(format, args...) }
func (l testLog) Warningf(format string, args ...any) { l.t.Logf("warning: "+format, args...) }

// TestKeeper runs a keeper against a real API server with ExternalDNS's DNSEndpoint CRD and
// k8gb's ZoneDelegation CRD: it writes the DNSEndpoint of each zone, follows a cluster that
// leaves, writes the ZoneDelegation's status, and deletes the DNSEndpoint of a zone no longer
// kept (and only its own).
func TestKeeper(t *testing.T) {
	t.Parallel()
	k := testutil.StartKube(t)
	k.Apply(t, testutil.KubeNamespace("meridian"))
	testutil.InstallDNSEndpointCRD(t, k)
	testutil.InstallGslbCRDs(t, k, "../../../deploy/helm/meridian/crds")
	k.Apply(t, map[string]any{"apiVersion": "k8gb.io/v1beta1", "kind": "ZoneDelegation", "metadata": map[string]any{"name": "cloud2-example-com"},
		"spec": map[string]any{"loadBalancedZone": "cloud2.example.com", "parentZone": "example.com", "dnsZoneNegTTL": 30}})
	foreign := map[string]any{"apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint", "metadata": map[string]any{"name": "other", "namespace": "meridian"},
		"spec": map[string]any{"endpoints": []any{map[string]any{"dnsName": "x.example.com", "recordType": "A", "targets": []any{"192.0.2.1"}}}}}
	k.Apply(t, foreign)

	var mu sync.Mutex
	us := time.Now()
	zones := []Zone{{Origin: "cloud.example.com.", Parent: "example.com."}, {Origin: "cloud2.example.com.", Parent: "example.com.", Object: "cloud2-example-com"}}
	state := func() State {
		mu.Lock()
		defer mu.Unlock()
		return State{Zones: zones, Self: Cluster{Site: "eu", Glue: addrs("192.0.2.53")}, Others: []Cluster{{Site: "us", Glue: addrs("198.51.100.53"), Seen: us}}}
	}
	kp := New(config.KubernetesOptions{Kubeconfig: k.Kubeconfig(t)})
	kp.Configure(config.ExternalDNSOptions{Parent: "example.com.", Namespace: "meridian", Glue: addrs("192.0.2.53"), StaleThreshold: time.Second}, state, testLog{t})
	kp.Start()
	t.Cleanup(kp.Stop)

	type endpoint struct {
		DNSName, RecordType string
		Targets             []string
	}
	endpoints := func(name string) []endpoint {
		path := "/apis/externaldns.k8s.io/v1alpha1/namespaces/meridian/dnsendpoints/" + name
		if !k.Served(path) {
			return nil
		}
		var ep struct {
			Spec struct{ Endpoints []endpoint }
		}
		if err := json.Unmarshal(k.Get(t, path), &ep); err != nil {
			t.Fatal(err)
		}
		return ep.Spec.Endpoints
	}
	nsOf := func(name string) []string {
		for _, e := range endpoints(name) {
			if e.RecordType == "NS" {
				return e.Targets
			}
		}
		return nil
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		return slices.Equal(nsOf("k8gb-ns-extdns-cloud-example-com"), []string{"gslb-ns-eu-cloud.example.com", "gslb-ns-us-cloud.example.com"}) &&
			slices.Equal(nsOf("k8gb-ns-extdns-cloud2-example-com"), []string{"gslb-ns-eu-cloud2.example.com", "gslb-ns-us-cloud2.example.com"})
	}, "the DNSEndpoints: %v, %v", endpoints("k8gb-ns-extdns-cloud-example-com"), endpoints("k8gb-ns-extdns-cloud2-example-com"))
	status := func() string {
		var zd struct {
			Status struct {
				DNSServers []struct{ Name, Address string }
			}
		}
		_ = json.Unmarshal(k.Get(t, "/apis/k8gb.io/v1beta1/zonedelegations/cloud2-example-com"), &zd)
		return fmt.Sprint(zd.Status.DNSServers)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		return status() == "[{gslb-ns-eu-cloud2.example.com 192.0.2.53} {gslb-ns-us-cloud2.example.com 198.51.100.53}]"
	}, "the ZoneDelegation's status: %s", status())

	// us falls silent: it leaves past the threshold (1s).
	mu.Lock()
	us = time.Now().Add(-time.Hour)
	zones = zones[1:] // and cloud.example.com. is no longer kept
	mu.Unlock()
	testutil.Eventually(t, 10*time.Second, func() bool {
		return slices.Equal(nsOf("k8gb-ns-extdns-cloud2-example-com"), []string{"gslb-ns-eu-cloud2.example.com"}) &&
			!k.Served("/apis/externaldns.k8s.io/v1alpha1/namespaces/meridian/dnsendpoints/k8gb-ns-extdns-cloud-example-com")
	}, "after us left and cloud.example.com. went: %v; cloud's still served %v", endpoints("k8gb-ns-extdns-cloud2-example-com"),
		k.Served("/apis/externaldns.k8s.io/v1alpha1/namespaces/meridian/dnsendpoints/k8gb-ns-extdns-cloud-example-com"))
	for _, e := range endpoints("k8gb-ns-extdns-cloud2-example-com") {
		if strings.Contains(e.DNSName, "gslb-ns-us") {
			t.Errorf("us's glue stayed: %+v", e)
		}
	}
	if !k.Served("/apis/externaldns.k8s.io/v1alpha1/namespaces/meridian/dnsendpoints/other") {
		t.Error("the keeper deleted a DNSEndpoint it did not write")
	}
}
