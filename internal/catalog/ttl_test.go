package catalog

import (
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// ttlRecord is a failover record of three probed IPv4 backends (priorities 1, 1, 2) and one
// IPv6 backend, record_ttl 30, degraded_ttl 10 and drain_ttl 5 unless yaml says otherwise.
func ttlRecord(t *testing.T, hs states, settings string) *Record {
	t.Helper()
	z := mustZone(t, "example.org", `
records:
  www.example.org.:
    mode: failover
`+settings+`
    backends:
      - {address: 10.0.0.1, priority: 1, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.0.0.2, priority: 1, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.0.0.3, priority: 2, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: "2001:db8::1", healthchecks: [{type: tcp, params: {port: 80}}]}
`)
	snap, err := Build([]*config.Zone{z}, hs)
	if err != nil {
		t.Fatal(err)
	}
	return snap.Records()[0]
}

func TestTTLFollowsHealth(t *testing.T) {
	const settings = "    record_ttl: 30\n    degraded_ttl: 10\n    drain_ttl: 5\n"
	up, down, stale := health.Up, health.Down, health.Stale
	tests := []struct {
		name  string
		v4    [3]health.Status // 10.0.0.1, 10.0.0.2, 10.0.0.3
		v6    health.Status
		drain time.Duration // a drain of 10.0.0.2 starting this far ahead; 0 for none
		// want is the IPv4 TTL and why; want6 the IPv6 TTL.
		want  uint32
		why   TTLReason
		want6 uint32
	}{
		{"healthy", [3]health.Status{up, up, up}, up, 0, 30, TTLHealthy, 30},
		{"one down", [3]health.Status{up, down, up}, up, 0, 10, TTLBackendDown, 30},
		{"spare down", [3]health.Status{up, up, down}, up, 0, 10, TTLBackendDown, 30},
		{"failover", [3]health.Status{down, down, up}, up, 0, 10, TTLFailover, 30},
		{"stale", [3]health.Status{stale, down, down}, up, 0, 10, TTLStale, 30},
		{"fallback", [3]health.Status{down, down, down}, up, 0, 10, TTLFallback, 30},
		{"other family down", [3]health.Status{up, up, up}, down, 0, 30, TTLHealthy, 10},
		{"drain far ahead", [3]health.Status{up, up, up}, up, time.Hour, 30, TTLHealthy, 30},
		{"drain ahead", [3]health.Status{up, up, up}, up, 20 * time.Second, 5, TTLDrainAhead, 30},
		{"drain in 3.5 s", [3]health.Status{up, up, up}, up, 3500 * time.Millisecond, 3, TTLDrainAhead, 30},
		{"drain ahead, degraded lower", [3]health.Status{up, up, down}, up, 20 * time.Second, 5, TTLDrainAhead, 30},
		{"drain started", [3]health.Status{up, up, up}, up, -time.Second, 30, TTLHealthy, 30}, // drained: not enabled, not down
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := states{}
			rec := ttlRecord(t, hs, settings)
			for i, st := range tt.v4 {
				hs[rec.Backends[i].Key()].Set(st)
			}
			hs[rec.Backends[3].Key()].Set(tt.v6)
			if tt.drain != 0 {
				rec.Backends[1].SetDrainAt(time.Now().Add(tt.drain))
			}
			rec.Refresh()
			v := rec.View()
			if v.TTL[IPv4] != tt.want || v.TTLReason[IPv4] != tt.why || v.TTL[IPv6] != tt.want6 {
				t.Fatalf("TTL %d (%s), IPv6 %d; want %d (%s), IPv6 %d", v.TTL[IPv4], v.TTLReason[IPv4], v.TTL[IPv6], tt.want, tt.why, tt.want6)
			}
			if tt.drain == -time.Second && len(v.Enabled[IPv4]) != 2 {
				t.Fatalf("a started drain leaves %d enabled, want 2", len(v.Enabled[IPv4]))
			}
			if tt.drain > 0 && v.Extra().NextTTLChange.IsZero() {
				t.Fatal("no NextTTLChange ahead of a drain")
			}
		})
	}
}

func TestDegradedTTLDefaultsToRecordTTL(t *testing.T) {
	hs := states{}
	rec := ttlRecord(t, hs, "    record_ttl: 20\n")
	for _, b := range rec.Backends {
		hs[b.Key()].Set(health.Up)
	}
	hs[rec.Backends[0].Key()].Set(health.Down)
	rec.Refresh()
	if v := rec.View(); v.TTL[IPv4] != 20 || v.TTLReason[IPv4] != TTLBackendDown {
		t.Fatalf("TTL %d (%s), want record_ttl 20 while degraded without degraded_ttl", v.TTL[IPv4], v.TTLReason[IPv4])
	}
	if got := rec.Config.DrainAnswerTTL(); got != config.DefaultDrainTTL {
		t.Fatalf("drain TTL %d, want the default %d", got, config.DefaultDrainTTL)
	}
}

// TestDrainTTLArithmetic walks the worked example of docs/modes.md: record_ttl 30, drain_ttl
// 5, a drain at 10:00:00. No answer given before the start outlives it.
func TestDrainTTLArithmetic(t *testing.T) {
	five := uint32(5)
	rec := &config.Record{TTL: 30}
	rec.SetSettings(config.Settings{DrainTTL: &five})
	start := time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC)
	at := func(s string) time.Time {
		t, _ := time.Parse("15:04:05.000", s)
		return start.Add(t.Sub(time.Date(0, 1, 1, 10, 0, 0, 0, time.UTC)))
	}
	tests := []struct {
		now   string
		ttl   uint32
		until string
	}{
		{"09:59:00.000", 30, "09:59:30.000"},
		{"09:59:29.999", 30, "09:59:30.000"},
		{"09:59:30.000", 5, "09:59:55.000"},
		{"09:59:54.999", 5, "09:59:55.000"},
		{"09:59:55.000", 4, "09:59:56.000"},
		{"09:59:55.500", 4, "09:59:56.000"},
		{"09:59:58.200", 1, "09:59:59.000"},
		{"09:59:59.000", 0, "10:00:00.000"},
		{"09:59:59.900", 0, "10:00:00.000"},
	}
	for _, tt := range tests {
		now := at(tt.now)
		ttl, until := DrainTTL(rec, start, now)
		if ttl != tt.ttl || !until.Equal(at(tt.until)) {
			t.Errorf("at %s: TTL %d until %s, want %d until %s", tt.now, ttl, until.Format("15:04:05.000"), tt.ttl, tt.until)
		}
		if now.Add(time.Duration(ttl)*time.Second).After(start) && !now.Before(at("09:59:30.000")) {
			t.Errorf("at %s: an answer with TTL %d outlives the start", tt.now, ttl)
		}
	}
	if ttl, until := DrainTTL(rec, start, start); ttl != 30 || !until.IsZero() {
		t.Errorf("at the start: TTL %d until %v, want 30 and no next change", ttl, until)
	}
}

func TestForceUpServesADownBackend(t *testing.T) {
	hs := states{}
	rec := ttlRecord(t, hs, "")
	for _, b := range rec.Backends {
		hs[b.Key()].Set(health.Down)
	}
	b := rec.Backends[0]
	b.SetOverride(ForceUp)
	rec.Refresh()
	if v := rec.View(); !b.Healthy() || len(v.Healthy[IPv4]) != 1 || v.Healthy[IPv4][0] != b || v.FallbackApplies(IPv4) {
		t.Fatalf("forced up: healthy %v, view %v", b.Healthy(), v.Healthy[IPv4])
	}
	b.Config.Enable = false // force-up also wins over the configuration
	if !b.Healthy() {
		t.Fatal("a forced-up backend the configuration disables is not served")
	}
	b.Config.Enable = true
	b.SetOverride(NoOverride)
	if b.Healthy() {
		t.Fatal("still healthy without the override")
	}
}

// TestTTLReasonNames gives every reason its own name, which the admin API shows.
func TestTTLReasonNames(t *testing.T) {
	seen := map[string]TTLReason{}
	for r := TTLHealthy; r <= TTLDrainAhead; r++ {
		name := r.String()
		if prev, dup := seen[name]; dup || name == "unknown" {
			t.Errorf("reason %d is named %q, as reason %d", r, name, prev)
		}
		seen[name] = r
	}
	if TTLFailover.String() != "failover" || (TTLDrainAhead+1).String() != "unknown" {
		t.Errorf("failover is %q, past the last %q", TTLFailover, TTLDrainAhead+1)
	}
}
