package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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
