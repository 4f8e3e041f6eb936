package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// host is the IP address of s.
func (s *site) host() string {
	h, _, _ := net.SplitHostPort(s.addr)
	return h
}

// discoveryZone is a record of example.org. with one static backend (127.0.0.1, always up) and
// the discovery block block, whose backends get a tcp check at their port.
func discoveryZone(block string) string {
	return fmt.Sprintf(`records:
  www.example.org.:
    mode: failover
    scrape_interval: 1h
    backends: [{address: 127.0.0.1}]
    discovery:
%s      interval: 100ms
      healthchecks: [{type: tcp}]
      rise: 1
`, block)
}

// answersFollow waits until the server answers want for www.example.org.
func answersFollow(t *testing.T, s *testutil.Server, want ...string) {
	t.Helper()
	slices.Sort(want)
	answer := func() []string { return addresses(s.Query(t, "udp", "www.example.org", dns.TypeA)) }
	testutil.Eventually(t, 10*time.Second, func() bool { return slices.Equal(answer(), want) },
		"the answer is %v, want %v\n%s", answer(), want, s.Logs())
}

// failed waits until the server logged that its discovery source of type typ failed.
func failed(t *testing.T, s *testutil.Server, typ string) {
	t.Helper()
	want := "discovery " + typ + " "
	testutil.Eventually(t, 10*time.Second, func() bool {
		return strings.Contains(s.Logs(), want) && strings.Contains(s.Logs(), "failed, keeping its last")
	}, "no failure logged:\n%s", s.Logs())
}

// TestDiscoveryHTTP: the backends of an HTTP list are answered once their checks pass; a
// changed list changes the answers and keeps the health of the backends it still has; a list
// that fails keeps the last good set, and the admin API says so.
func TestDiscoveryHTTP(t *testing.T) {
	t.Parallel()
	a, b, c := startSite(t, "127.0.0.2"), startSite(t, "127.0.0.3"), startSite(t, "127.0.0.4")
	var mu sync.Mutex
	status, sites := http.StatusOK, []*site{a, b}
	list := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(status)
		if status != http.StatusOK {
			return
		}
		fmt.Fprint(w, "[")
		for i, s := range sites {
			if i > 0 {
				fmt.Fprint(w, ",")
			}
			fmt.Fprintf(w, `{"address": %q, "port": %d}`, s.host(), s.port())
		}
		fmt.Fprint(w, "]")
	}))
	defer list.Close()
	set := func(st int, s ...*site) {
		mu.Lock()
		status, sites = st, s
		mu.Unlock()
	}

	s := startWithAPI(t, discoveryZone(fmt.Sprintf("      type: http\n      endpoint: %s/backends\n", list.URL)), t.TempDir()+"/overrides.json")
	answersFollow(t, s.Server, "127.0.0.1", "127.0.0.2", "127.0.0.3")
	record := func() admin.Record {
		zones, err := s.client.Zones(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return zones[0].Records[0]
	}
	lastChange := func(ip string) time.Time {
		for _, ab := range record().Backends {
			if ab.Address == ip {
				return ab.LastChange
			}
		}
		t.Fatalf("no backend %s", ip)
		return time.Time{}
	}
	before := lastChange("127.0.0.2")

	set(http.StatusOK, a, c)
	answersFollow(t, s.Server, "127.0.0.1", "127.0.0.2", "127.0.0.4")
	if after := lastChange("127.0.0.2"); !after.Equal(before) {
		t.Errorf("the backend in both sets started over: last change %v, then %v", before, after)
	}

	set(http.StatusServiceUnavailable)
	testutil.Eventually(t, 10*time.Second, func() bool { d := record().Discovery; return d != nil && d.Failing },
		"the API does not show the failure: %+v", record().Discovery)
	answersFollow(t, s.Server, "127.0.0.1", "127.0.0.2", "127.0.0.4")
	if d := record().Discovery; d.Backends != 2 || d.LastSuccess == nil || d.LastError == "" || d.Type != "http" {
		t.Errorf("discovery %+v", d)
	}

	// A Corefile reload while the source fails starts the new load with the last good set:
	// no answer misses the discovered backends, which keep their health.
	if err := s.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.1", "127.0.0.2", "127.0.0.4"}
	for !strings.Contains(s.Logs(), "Reloading complete") {
		if got := addresses(s.Query(t, "udp", "www.example.org", dns.TypeA)); !slices.Equal(got, want) {
			t.Fatalf("during a Corefile reload the answer was %v, want %v", got, want)
		}
	}
	answersFollow(t, s.Server, want...)
	if after := lastChange("127.0.0.2"); !after.Equal(before) {
		t.Errorf("the Corefile reload reset a discovered backend: last change %v, then %v", before, after)
	}
}

// TestDiscoverySVCB reads the backends from the SVCB records of a real authoritative server
// (a second meridian process serving a zone file), and follows their changes.
func TestDiscoverySVCB(t *testing.T) {
	t.Parallel()
	a, b := startSite(t, "127.0.0.2"), startSite(t, "127.0.0.3")
	auth := testutil.StartAuthoritative(t, "svc.test",
		fmt.Sprintf("_web IN SVCB 1 . port=%d ipv4hint=127.0.0.2", a.port()))
	s := serveZone(t, discoveryZone(fmt.Sprintf("      type: dns_svcb\n      endpoint: %s\n      service: _web.svc.test\n", auth.Addr)), "")
	answersFollow(t, s, "127.0.0.1", "127.0.0.2")

	auth.SetRecords(t, fmt.Sprintf("_web IN SVCB 1 . port=%d ipv4hint=127.0.0.2", a.port()),
		fmt.Sprintf("_web IN SVCB 2 web2 port=%d", b.port()), "web2 IN A 127.0.0.3")
	answersFollow(t, s, "127.0.0.1", "127.0.0.2", "127.0.0.3")

	// An upstream that stops answering keeps the last good set.
	auth.Stop()
	failed(t, s, "dns_svcb")
	answersFollow(t, s, "127.0.0.1", "127.0.0.2", "127.0.0.3")
}

// TestDiscoveryConsul reads the instances of a Consul service with a tag from the catalog of a
// real Consul dev agent (testutil.StartConsul), and follows registrations.
func TestDiscoveryConsul(t *testing.T) {
	t.Parallel()
	a, b, c := startSite(t, "127.0.0.2"), startSite(t, "127.0.0.3"), startSite(t, "127.0.0.4")
	consul := testutil.StartConsul(t)
	consul.Register(t, "web-a", "web", "127.0.0.2", "", a.port(), "primary")
	consul.Register(t, "web-b", "web", "192.0.2.1", "127.0.0.3", b.port(), "primary")
	consul.Register(t, "web-c", "web", "127.0.0.4", "", c.port(), "canary")
	s := serveZone(t, discoveryZone(fmt.Sprintf("      type: consul\n      endpoint: %s\n      service: web\n      tag: primary\n", consul.URL)), "")
	answersFollow(t, s, "127.0.0.1", "127.0.0.2", "127.0.0.3")

	consul.Deregister(t, "web-b")
	consul.Register(t, "web-c", "web", "127.0.0.4", "", c.port(), "primary")
	answersFollow(t, s, "127.0.0.1", "127.0.0.2", "127.0.0.4")

	consul.Stop()
	failed(t, s, "consul")
	answersFollow(t, s, "127.0.0.1", "127.0.0.2", "127.0.0.4")
}
