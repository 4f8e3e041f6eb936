package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestTTLFollowsHealthAndDrains serves a failover record with record_ttl 30, degraded_ttl 10
// and drain_ttl 5: healthy answers carry 30; within record_ttl of a scheduled drain they
// carry the drain TTL, capped so that none outlives the start; once drained they carry 30
// again; when the primary's listener closes they carry 10.
func TestTTLFollowsHealthAndDrains(t *testing.T) {
	t.Parallel()
	primary, secondary := startSite(t, "127.0.0.1"), startSite(t, "127.0.0.2")
	yaml := fmt.Sprintf(`
records:
  www.example.org.:
    mode: failover
    record_ttl: 30
    degraded_ttl: 10
    drain_ttl: 5
    scrape_interval: 200ms
    scrape_timeout: 100ms
    backends:
      - {address: 127.0.0.1, priority: 1, rise: 1, fall: 1, healthchecks: [{type: tcp, params: {port: %d}}]}
      - {address: 127.0.0.2, priority: 2, rise: 1, fall: 1, healthchecks: [{type: tcp, params: {port: %d}}]}
      - {address: 127.0.0.3, priority: 3}
`, primary.port(), secondary.port())
	s := startWithAPI(t, yaml, filepath.Join(t.TempDir(), "overrides.json"))
	ctx := context.Background()
	ttl := func() uint32 {
		m := s.Query(t, "udp", "www.example.org", dns.TypeA)
		if len(m.Answer) == 0 {
			t.Fatalf("no answer:\n%s", s.Logs())
		}
		return m.Answer[0].Header().Ttl
	}
	s.waitState(t, primaryKey, admin.StateUp)
	s.waitState(t, secondaryKey, admin.StateUp)
	if got := ttl(); got != 30 {
		t.Fatalf("healthy TTL %d, want record_ttl 30", got)
	}
	drain := func(in string) admin.ActionResult {
		t.Helper()
		res, err := s.client.Act(ctx, overlay.Drain, admin.ActionRequest{Selector: admin.Selector{Keys: []string{secondaryKey}}, StartsIn: in})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	// A drain 25 s ahead: within record_ttl, so drain_ttl at once; cleared, record_ttl again.
	drain("25s")
	if got := ttl(); got != 5 {
		t.Fatalf("TTL %d 25 s ahead of a drain, want drain_ttl 5", got)
	}
	if _, err := s.client.Act(ctx, overlay.Clear, admin.ActionRequest{Selector: admin.Selector{Keys: []string{secondaryKey}}}); err != nil {
		t.Fatal(err)
	}
	if got := ttl(); got != 30 {
		t.Fatalf("TTL %d after the scheduled drain was cleared, want 30", got)
	}

	// A drain 3 s ahead: the TTL steps down so that no answer outlives the start, then the
	// secondary is drained and the record is healthy again.
	start := drain("3s").Starts
	for time.Now().Before(start.Add(-200 * time.Millisecond)) {
		asked := time.Now()
		got := ttl()
		if asked.Add(time.Duration(got) * time.Second).After(start.Add(100 * time.Millisecond)) {
			t.Fatalf("an answer at %s with TTL %d outlives the drain at %s", asked.Format("15:04:05.000"), got, start.Format("15:04:05.000"))
		}
		time.Sleep(50 * time.Millisecond) // pacing the queries, not synchronisation
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return !s.backend(t, secondaryKey).Healthy && ttl() == 30 },
		"after the drain started: secondary %+v, TTL %d", s.backend(t, secondaryKey), ttl())

	// The primary goes down: a failover to the spare, degraded_ttl.
	primary.fail()
	s.waitState(t, primaryKey, admin.StateDown)
	testutil.Eventually(t, 5*time.Second, func() bool { return ttl() == 10 }, "TTL %d with the primary down, want degraded_ttl 10", ttl())
	exp, err := s.client.Explain(ctx, admin.Query{Name: "www.example.org", Type: "A"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, st := range exp.Steps {
		found = found || st.Stage == "IPv4 ttl" && st.Text == "10 s, degraded_ttl (failover; record_ttl 30 while healthy)"
	}
	if !found {
		t.Errorf("explain does not say the TTL: %+v", exp.Steps)
	}
	zones, err := s.client.Zones(ctx)
	if err != nil || len(zones) != 1 || zones[0].Records[0].TTL != 10 || zones[0].Records[0].TTLReason != "failover" {
		t.Errorf("zones: %+v, %v", zones, err)
	}
}
