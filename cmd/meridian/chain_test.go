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
		m := new(dns.Msg)
		m.SetQuestion("app.example.org.", dns.TypeA)
		m.SetEdns0(1232, false)
		p := netip.MustParsePrefix(subnet)
		m.IsEdns0().Option = []dns.EDNS0{&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: uint8(p.Bits()), Address: p.Addr().AsSlice()}}
		return addresses(v.Exchange(t, "udp", m))
	}
	for _, v := range fleet {
		for _, tt := range []struct{ subnet, want string }{{"10.0.0.0/24", "127.0.8.2"}, {"192.168.1.0/24", "127.0.8.1"}} {
			testutil.Eventually(t, 15*time.Second, func() bool { return slices.Equal(ask(v, tt.subnet), []string{tt.want}) },
				"instance %d, a client at %s: answered %v, want %s\n%s", v.n, tt.subnet, ask(v, tt.subnet), tt.want, v.Logs())
		}
	}
}
