package discovery

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// zone parses a zone of example.org. from yml.
func zone(t *testing.T, yml string) []*config.Zone {
	t.Helper()
	z, err := config.ParseZone("zone.yml", []byte(yml), "example.org", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	return []*config.Zone{z}
}

// backends returns "address:port" of every backend of record name after s merged zones.
func backends(t *testing.T, s *Source, zones []*config.Zone, name string) []string {
	t.Helper()
	out, err := s.Merge(zones)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, z := range out {
		for _, r := range z.Records {
			if r.Name == name {
				for _, b := range r.Backends {
					got = append(got, fmt.Sprintf("%s:%d", b.Address, b.Port))
				}
			}
		}
	}
	return got
}

// watch starts s and returns a counter of its changed calls; it stops when the test ends.
func watch(t *testing.T, s *Source, zones []*config.Zone, log *testutil.Log) *atomic.Int32 {
	t.Helper()
	if _, err := s.Merge(zones); err != nil {
		t.Fatal(err)
	}
	var changes atomic.Int32
	stop, err := s.Watch(func() { changes.Add(1) }, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return &changes
}

// list is an HTTP discovery endpoint whose body and status the test sets.
type list struct {
	mu     sync.Mutex
	status int
	body   string
}

func (l *list) set(status int, body string) {
	l.mu.Lock()
	l.status, l.body = status, body
	l.mu.Unlock()
}

func (l *list) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w.WriteHeader(l.status)
	_, _ = w.Write([]byte(l.body))
}

func TestHTTPSourceKeepsTheLastGoodSet(t *testing.T) {
	l := &list{status: 200, body: `["10.0.0.2", {"address": "10.0.0.3", "port": 8080}, "10.0.0.1"]`}
	srv := httptest.NewServer(l)
	defer srv.Close()
	const name = "www.example.org."
	zones := zone(t, fmt.Sprintf(`records:
  www.example.org:
    discovery:
      type: http
      endpoint: %s/list
      interval: 50ms
      healthchecks: [{type: tcp, params: {port: 80}}]
    backends: [{address: 10.0.0.1, priority: 5}]
`, srv.URL))
	s := New(NewMemory())
	if got := backends(t, s, zones, name); !slices.Equal(got, []string{"10.0.0.1:0"}) {
		t.Fatalf("before watching: %v", got)
	}
	log := &testutil.Log{}
	changes := watch(t, s, zones, log)
	want := []string{"10.0.0.1:0", "10.0.0.2:0", "10.0.0.3:8080"}
	testutil.Eventually(t, 5*time.Second, func() bool { return slices.Equal(backends(t, s, zones, name), want) },
		"backends are not %v: %v", want, backends(t, s, zones, name))
	out, _ := s.Merge(zones)
	disc := out[0].Records[0].Backends[1]
	if len(disc.Checks().HealthChecks) != 1 || disc.Priority != config.DefaultPriority || !disc.Enable || out[0].Records[0].Backends[0].Priority != 5 {
		t.Errorf("discovered backend %+v", disc)
	}
	if len(zones[0].Records[0].Backends) != 1 {
		t.Error("Merge changed the zones it was given")
	}
	// The loop stores the set before it wakes the goroutine that calls changed, so the call
	// can come just after Merge sees the set.
	testutil.Eventually(t, 5*time.Second, func() bool { return changes.Load() >= 1 }, "no change for a new set")

	failures := func() float64 { return promtest.ToFloat64(fetchesTotal.WithLabelValues(name, "http", "failure")) }
	l.set(500, "oops")
	testutil.Eventually(t, 5*time.Second, func() bool { return failures() >= 3 }, "fewer than 3 failed fetches")
	if got := backends(t, s, zones, name); !slices.Equal(got, want) {
		t.Errorf("after failures: %v, want the last good set %v", got, want)
	}
	st, ok := s.Statuses()[name]
	if !ok || !st.Failing || !strings.Contains(st.LastError, "500") || st.Backends != 3 || st.LastSuccess.IsZero() {
		t.Errorf("status %+v", st)
	}
	if n := log.Count("failed, keeping its last 3 backends"); n != 1 {
		t.Errorf("%d failure logs for one streak:\n%s", n, log)
	}
	if n := changes.Load(); n != 1 {
		t.Errorf("%d changes for one new set and failed fetches, want 1", n)
	}

	l.set(200, `["10.0.0.4", "10.0.0.2"]`)
	want = []string{"10.0.0.1:0", "10.0.0.2:0", "10.0.0.4:0"}
	testutil.Eventually(t, 5*time.Second, func() bool { return slices.Equal(backends(t, s, zones, name), want) },
		"backends are not %v: %v", want, backends(t, s, zones, name))
	if st := s.Statuses()[name]; st.Failing || st.Backends != 2 {
		t.Errorf("status after recovery %+v", st)
	}
	if log.Count("recovered") != 1 {
		t.Errorf("no recovery log:\n%s", log)
	}
	if n := promtest.ToFloat64(backendsGauge.WithLabelValues(name)); n != 2 {
		t.Errorf("discovery_backends %v", n)
	}
}

func TestSourceFollowsTheConfiguration(t *testing.T) {
	l := &list{status: 200, body: `["10.0.0.9"]`}
	srv := httptest.NewServer(l)
	defer srv.Close()
	block := func(name string) string {
		return fmt.Sprintf("  %s:\n    discovery: {type: http, endpoint: %s, interval: 50ms}\n", name, srv.URL)
	}
	zones := zone(t, "records:\n"+block("a.example.org"))
	s := New(NewMemory())
	watch(t, s, zones, &testutil.Log{})
	testutil.Eventually(t, 5*time.Second, func() bool { return len(backends(t, s, zones, "a.example.org.")) == 1 }, "a has no backend")

	// A reload that adds b and drops a starts b's loop and stops a's.
	zones = zone(t, "records:\n"+block("b.example.org"))
	testutil.Eventually(t, 5*time.Second, func() bool { return len(backends(t, s, zones, "b.example.org.")) == 1 }, "b has no backend")
	if _, ok := s.Statuses()["a.example.org."]; ok {
		t.Error("a's loop still runs")
	}
}

func TestPasswordsAreNotShown(t *testing.T) {
	srv := httptest.NewServer(&list{status: 403, body: "no"})
	defer srv.Close()
	endpoint := strings.Replace(srv.URL, "http://", "http://user:secret@", 1)
	zones := zone(t, "records:\n  a.example.org:\n    discovery: {type: http, endpoint: '"+endpoint+"', interval: 50ms}\n")
	s := New(NewMemory())
	log := &testutil.Log{}
	watch(t, s, zones, log)
	testutil.Eventually(t, 5*time.Second, func() bool { return s.Statuses()["a.example.org."].Failing }, "no failure")
	st := s.Statuses()["a.example.org."]
	if strings.Contains(st.Endpoint+st.LastError+log.String(), "secret") || !strings.Contains(st.Endpoint, "user:xxxxx@") {
		t.Errorf("the password shows: %+v\n%s", st, log)
	}
	if _, err := New(NewMemory()).fetch(context.Background(), &config.Discovery{Type: config.DiscoveryHTTP,
		Endpoint: "http://user:secret@127.0.0.1:1/", Interval: time.Second}); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("a connection error: %v", err)
	}
}

func TestHTTPFetchErrors(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"not json", `nope`, "invalid character"},
		{"not a list", `{"address": "10.0.0.1"}`, "cannot unmarshal object"},
		{"not an address", `["web1"]`, `"web1" is not an IP address`},
		{"bad item", `[42]`, "item 0: not an address nor an object"},
		{"bad port", `[{"address": "10.0.0.1", "port": 70000}]`, "port 70000 of 10.0.0.1 is out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(&list{status: 200, body: tt.body})
			defer srv.Close()
			_, err := New(NewMemory()).fetch(context.Background(), &config.Discovery{Type: config.DiscoveryHTTP, Endpoint: srv.URL, Interval: time.Second})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// fetched returns the endpoints one fetch of d returns, as address:port.
func fetched(t *testing.T, d *config.Discovery) []string {
	t.Helper()
	eps, err := New(NewMemory()).fetch(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ep := range eps {
		got = append(got, ep.String())
	}
	return got
}

func TestDNSSources(t *testing.T) {
	auth := testutil.StartAuthoritative(t, "svc.test",
		`_web IN SVCB 1 web1 port=8443 ipv4hint=10.1.0.1,10.1.0.2 ipv6hint=2001:db8::1`,
		`_web IN SVCB 2 web2`,
		`_web IN SVCB 0 elsewhere.example.`,
		`web2 IN A 10.1.0.3`,
		`web2 IN AAAA 2001:db8::3`,
		`www IN HTTPS 1 . port=443`,
		`www IN A 10.2.0.1`,
	)
	tests := []struct {
		typ     config.DiscoveryType
		service string
		want    []string
	}{
		{config.DiscoverySVCB, "_web.svc.test.", []string{"10.1.0.1:8443", "10.1.0.2:8443", "10.1.0.3:0", "[2001:db8::1]:8443", "[2001:db8::3]:0"}},
		{config.DiscoveryHTTPS, "www.svc.test.", []string{"10.2.0.1:443"}},
		{config.DiscoveryHTTPS, "_web.svc.test.", nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.typ)+" "+tt.service, func(t *testing.T) {
			got := fetched(t, &config.Discovery{Type: tt.typ, Endpoint: auth.Addr, Service: tt.service, Interval: time.Second})
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	_, err := New(NewMemory()).fetch(context.Background(), &config.Discovery{Type: config.DiscoverySVCB, Endpoint: auth.Addr, Service: "nope.svc.test.", Interval: time.Second})
	if err == nil || !strings.Contains(err.Error(), "NXDOMAIN") {
		t.Errorf("a name that does not exist: %v", err)
	}
}

func TestConsulSource(t *testing.T) {
	consul := testutil.StartConsul(t)
	consul.Register(t, "a", "web", "10.3.0.1", "", 80, "primary")
	consul.Register(t, "b", "web", "10.3.0.2", "2001:db8::2", 8080, "primary", "v2")
	consul.Register(t, "c", "web", "10.3.0.3", "", 80, "canary")
	consul.Register(t, "d", "db", "10.3.0.4", "", 5432, "primary")
	tests := []struct {
		tag  string
		want []string
	}{
		{"primary", []string{"10.3.0.1:80", "[2001:db8::2]:8080"}},
		{"", []string{"10.3.0.1:80", "10.3.0.3:80", "[2001:db8::2]:8080"}},
		{"v3", nil},
	}
	for _, tt := range tests {
		t.Run("tag "+tt.tag, func(t *testing.T) {
			got := fetched(t, &config.Discovery{Type: config.DiscoveryConsul,
				Endpoint: consul.URL + "/", Service: "web", Tag: tt.tag, Interval: time.Second})
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	consul.Register(t, "e", "web", "node.example", "", 80)
	if _, err := New(NewMemory()).fetch(context.Background(), &config.Discovery{Type: config.DiscoveryConsul,
		Endpoint: consul.URL, Service: "web", Interval: time.Second}); err == nil || !strings.Contains(err.Error(), `"node.example" is not an IP address`) {
		t.Errorf("a host name: %v", err)
	}
	consul.Stop()
	if _, err := New(NewMemory()).fetch(context.Background(), &config.Discovery{Type: config.DiscoveryConsul,
		Endpoint: consul.URL, Service: "web", Interval: time.Second}); err == nil {
		t.Error("no error from a stopped server")
	}
}

func TestPortlessBackendsOfAPortCheck(t *testing.T) {
	srv := httptest.NewServer(&list{status: 200, body: `[{"address": "10.0.0.1", "port": 80}, "10.0.0.2"]`})
	defer srv.Close()
	tests := []struct{ checks, want string }{
		{"[{type: tcp}]", "10.0.0.2 has no port, which the block's tcp check needs"},
		{"[{type: grpc}]", "10.0.0.2 has no port, which the block's grpc check needs"},
		{"[{type: tcp, params: {port: 80}}]", ""},
		{"[{type: http}]", ""},
	}
	for _, tt := range tests {
		t.Run(tt.checks, func(t *testing.T) {
			zones := zone(t, "records:\n  a.example.org:\n    discovery: {type: http, endpoint: '"+srv.URL+"', healthchecks: "+tt.checks+"}\n")
			_, err := New(NewMemory()).fetch(context.Background(), zones[0].Records[0].Discovery)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}
