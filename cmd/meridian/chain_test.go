package main

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestChainEndToEnd serves a chain record [rtt, load, weighted] over three real loopback HTTP
// backends whose checks measure their RTT and read their load: a fast one, a slow one (its
// answers delayed 80 ms) and a fast one over max_load. The fast, not overloaded backend
// answers alone; when it is overloaded too, the load step keeps both fast ones (all over
// max_load: nothing is shed) and weighted shares them; when the slow one becomes fast, it is
// the least loaded, and answers alone. Explain lists every step.
func TestChainEndToEnd(t *testing.T) {
	t.Parallel()
	fast, slow, loaded := startMetricBackend(t, "127.0.7.1"), startMetricBackend(t, "127.0.7.2"), startMetricBackend(t, "127.0.7.3")
	fast.inflight.Store(30)
	slow.inflight.Store(10)
	slow.delay.Store(int64(80 * time.Millisecond))
	loaded.inflight.Store(95)
	backend := func(addr string, b *metricBackend) string {
		return fmt.Sprintf(`      - address: %s
        capacity: 100
        rise: 1
        fall: 1
        healthchecks: [{type: http, params: {port: %d, enable_tls: false, uri: /metrics, metric: 'http_inflight{pool="a"}'}}]
`, addr, b.port)
	}
	zone := `
records:
  www.example.org.:
    mode: chain
    chain: [rtt, load, weighted]
    rtt_tolerance: 20ms
    max_load: 0.9
    max_answers: 1
    scrape_interval: 200ms
    scrape_timeout: 150ms
    backends:
` + backend("127.0.7.1", fast) + backend("127.0.7.2", slow) + backend("127.0.7.3", loaded)
	s := startWithAPI(t, zone, filepath.Join(t.TempDir(), "overrides.json"))
	answers := func() []string { // the distinct answers of 60 queries
		seen := map[string]bool{}
		for range 60 {
			for _, a := range s.answer(t) {
				seen[a] = true
			}
		}
		return slices.Sorted(maps.Keys(seen))
	}
	explain := func() string {
		exp, err := s.client.Explain(context.Background(), admin.Query{Name: "www.example.org."})
		if err != nil {
			return err.Error()
		}
		var b strings.Builder
		for _, st := range exp.Steps {
			fmt.Fprintf(&b, "  %s: %s\n", st.Stage, st.Text)
		}
		return b.String()
	}
	want := func(step string, addrs ...string) {
		t.Helper()
		testutil.Eventually(t, 15*time.Second, func() bool { return slices.Equal(answers(), addrs) },
			"%s: answers %v, want %v; explain:\n%s", step, answers(), addrs, explain())
	}
	// Once all three are up and measured: the slow one fails the rtt step, the loaded one the
	// load step.
	chainSteps := func() []string {
		exp, err := s.client.Explain(context.Background(), admin.Query{Name: "www.example.org."})
		if err != nil {
			return []string{err.Error()}
		}
		var steps []string
		for _, st := range exp.Steps {
			if strings.HasPrefix(st.Stage, "IPv4 chain") {
				steps = append(steps, st.Stage+": "+st.Text)
			}
		}
		return steps
	}
	testutil.Eventually(t, 15*time.Second, func() bool {
		steps := chainSteps()
		return len(steps) == 4 && strings.Contains(steps[0], "3 healthy") && strings.Contains(steps[1], "rtt") && strings.Contains(steps[1], "kept 2 of 3") &&
			strings.Contains(steps[2], "load") && strings.Contains(steps[2], "kept 1 of 2: [127.0.7.1]") && strings.Contains(steps[3], "not run: one candidate left")
	}, "explain's chain steps:\n%s", strings.Join(chainSteps(), "\n"))
	want("the fast backend under max_load", "127.0.7.1")

	fast.inflight.Store(97)
	want("both fast backends over max_load: nothing shed, weighted shares them", "127.0.7.1", "127.0.7.3")
	slow.delay.Store(0)
	want("the slow backend fast again, and the least loaded", "127.0.7.2")
}

// TestWhatIfEndToEnd asks the binary's admin API where clients would go with the primary down
// or its site drained: the explanation answers the standby, and the DNS answer is unchanged.
func TestWhatIfEndToEnd(t *testing.T) {
	t.Parallel()
	s := startWithAPI(t, `
records:
  www.example.org.:
    mode: failover
    backends:
      - {address: 192.0.2.10, priority: 1, site: eu}
      - {address: 192.0.2.20, priority: 2, site: us}
`, filepath.Join(t.TempDir(), "overrides.json"))
	for _, q := range []admin.Query{
		{Name: "www.example.org.", Down: []string{"192.0.2.10"}},
		{Name: "www.example.org.", Drained: []string{"site:eu"}},
	} {
		exp, err := s.client.Explain(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(exp.Answer) != 1 || !strings.HasSuffix(exp.Answer[0], "192.0.2.20") || exp.Steps[0].Stage != "what if" || len(exp.Steps[0].Backends) != 1 {
			t.Errorf("what if %v/%v: answer %v, steps %+v", q.Down, q.Drained, exp.Answer, exp.Steps[:1])
		}
	}
	if got := s.answer(t); !slices.Equal(got, []string{"192.0.2.10"}) {
		t.Errorf("after the what-ifs the server answers %v, want the primary still", got)
	}
}

// slowFrom serves a tcp backend on addr that answers "ok" to every connection, after delay
// for those from the probe source slow (the backend's own slowness toward that vantage, not a
// wait of the test).
func slowFrom(t *testing.T, addr string, slow netip.Addr, delay time.Duration) int {
	t.Helper()
	l := testutil.ServeTCP(t, addr, func(c net.Conn) {
		if c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap() == slow {
			time.Sleep(delay)
		}
		_, _ = c.Write([]byte("ok\n"))
	})
	return l.Addr().(*net.TCPAddr).Port
}

// ecsQuery returns an A query of name with an ECS option for the IPv4 subnet.
func ecsQuery(name, subnet string) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	m.SetEdns0(1232, false)
	p := netip.MustParsePrefix(subnet)
	m.IsEdns0().Option = []dns.EDNS0{&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: uint8(p.Bits()), Address: p.Addr().AsSlice()}}
	return m
}

// TestChainVantagesEndToEnd runs two instances in quorum mode (sites site-1 and site-2, each
// probing from its own loopback address) over a chain [rtt] of two backends: A is slow from
// site-1, B from site-2. Clients that the location map places at site-1 are answered B, those
// at site-2 A, by either instance: each steers a client by the RTTs of the site nearest to it.
func TestChainVantagesEndToEnd(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t)
	portA := slowFrom(t, "127.0.8.1:0", netip.MustParseAddr("127.0.0.1"), 80*time.Millisecond)
	portB := slowFrom(t, "127.0.8.2:0", netip.MustParseAddr("127.0.0.2"), 80*time.Millisecond)
	zone := fmt.Sprintf(`records:
  app.example.org.:
    mode: chain
    chain: [rtt]
    max_answers: 1
    scrape_interval: %s
    scrape_timeout: %s
    backends:
      - {address: 127.0.8.1, rise: 1, fall: 1, healthchecks: [{type: tcp, params: {port: %d, expect: ok}}]}
      - {address: 127.0.8.2, rise: 1, fall: 1, healthchecks: [{type: tcp, params: {port: %d, expect: ok}}]}
`, quorumInterval, quorumTimeout, portA, portB)
	sites := filepath.Join(t.TempDir(), "sites.yml")
	if err := os.WriteFile(sites, []byte("subnets:\n  - {subnet: 10.0.0.0/24, location: site-1}\n  - {subnet: 192.168.1.0/24, location: site-2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	extra := "  use_edns_csubnet\n  geoip_custom " + sites + "\n"
	fleet := []*voter{startVoter(t, r, zone, 1, extra, false), startVoter(t, r, zone, 2, extra, false)}
	ask := func(v *voter, subnet string) []string {
		return addresses(v.Exchange(t, "udp", ecsQuery("app.example.org.", subnet)))
	}
	for _, v := range fleet {
		for _, tt := range []struct{ subnet, want string }{{"10.0.0.0/24", "127.0.8.2"}, {"192.168.1.0/24", "127.0.8.1"}} {
			testutil.Eventually(t, 15*time.Second, func() bool { return slices.Equal(ask(v, tt.subnet), []string{tt.want}) },
				"instance %d, a client at %s: answered %v, want %s\n%s", v.n, tt.subnet, ask(v, tt.subnet), tt.want, v.Logs())
		}
	}
}

// TestChainSitesVantagesEndToEnd runs two sites, eu and us, with measure_remote, over a chain
// [rtt] of one backend per site: each is slow from the other site (each site probes from its
// own loopback address, its own backends for their health, the other's for their RTT alone).
// Each site steers a client by the RTTs of the site the location map places it at, read from
// that site's localrtt: clients at eu get eu's backend and clients at us get us's from either
// site; a client placed at no site gets the answering site's own choice, its own backend.
func TestChainSitesVantagesEndToEnd(t *testing.T) {
	t.Parallel()
	const delay = 80 * time.Millisecond
	euSource, usSource := netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")
	euPort := slowFrom(t, "127.0.8.5:0", usSource, delay)
	usPort := slowFrom(t, "127.0.8.6:0", euSource, delay)
	locations := filepath.Join(t.TempDir(), "locations.yml")
	if err := os.WriteFile(locations, []byte("subnets:\n  - {subnet: 10.0.0.0/24, location: eu}\n  - {subnet: 192.168.1.0/24, location: us}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	procs := startSites(t, siteSetup{
		names:    []string{"eu", "us"},
		backends: []string{"", ""},
		yaml: func(int, []int) string {
			return fmt.Sprintf(`records:
  app.gslb.example.com.:
    mode: chain
    chain: [rtt]
    max_answers: 1
    scrape_interval: %s
    scrape_timeout: 150ms
    backends:
      - {address: 127.0.8.5, site: eu, rise: 1, fall: 1, healthchecks: [{type: tcp, params: {port: %d, expect: ok}}]}
      - {address: 127.0.8.6, site: us, rise: 1, fall: 1, healthchecks: [{type: tcp, params: {port: %d, expect: ok}}]}
`, siteScrape, euPort, usPort)
		},
		extra: func(i int) string {
			source := []netip.Addr{euSource, usSource}[i]
			return "  measure_remote\n  use_edns_csubnet\n  geoip_custom " + locations + "\n  probe_source " + source.String() + "\n"
		},
	})
	ask := func(p *siteProc, subnet string) []string {
		r, _, err := (&dns.Client{Timeout: time.Second}).Exchange(ecsQuery("app.gslb.example.com.", subnet), p.srv.Addr)
		if err != nil {
			return []string{"error: " + err.Error()}
		}
		return addresses(r)
	}
	for _, p := range procs {
		own := map[string]string{"eu": "127.0.8.5", "us": "127.0.8.6"}[p.name]
		for _, tt := range []struct{ subnet, want string }{
			{"10.0.0.0/24", "127.0.8.5"}, {"192.168.1.0/24", "127.0.8.6"}, {"172.16.0.0/24", own},
		} {
			testutil.Eventually(t, 20*time.Second, func() bool { return slices.Equal(ask(p, tt.subnet), []string{tt.want}) },
				"site %s, a client at %s: answered %v, want %s\n%s", p.name, tt.subnet, ask(p, tt.subnet), tt.want, p.srv.Logs())
		}
	}
	// What each site publishes: its RTT to both backends, its own the faster.
	for _, p := range procs {
		c := &dns.Client{Timeout: time.Second}
		m := new(dns.Msg)
		m.SetQuestion("localrtt-app.gslb.example.com.", dns.TypeTXT)
		r, _, err := c.Exchange(m, p.srv.Addr)
		if err != nil || len(r.Answer) != 2 {
			t.Fatalf("site %s: localrtt answered %v, %v; want the RTTs of both backends", p.name, r, err)
		}
	}
	// The admin API shows what each site read of the other's.
	var view []struct { // one per block
		Sites []struct {
			Name string
			RTTs map[string]map[string]float64 `json:"rtts_ms"`
		}
	}
	procs[0].getJSON(t, "/api/v1/sites", &view)
	if len(view) != 1 || len(view[0].Sites) != 1 || view[0].Sites[0].Name != "us" || len(view[0].Sites[0].RTTs["app.gslb.example.com."]) != 2 ||
		view[0].Sites[0].RTTs["app.gslb.example.com."]["127.0.8.5"] < float64(delay.Milliseconds()) {
		t.Errorf("site eu's view of the sites: %+v, want us's RTTs to both backends, eu's slow", view)
	}
}
