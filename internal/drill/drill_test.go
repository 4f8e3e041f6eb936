package drill

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// states is the health source of the tests' snapshots: every probed backend up.
type states map[string]*health.State

func (s states) State(key string) *health.State {
	if s[key] == nil {
		s[key] = &health.State{}
		s[key].Set(health.Up)
	}
	return s[key]
}

const zone = `
defaults:
  scrape_interval: 10s
  scrape_timeout: 5s
  record_ttl: 30
records:
  www.example.org.:
    mode: failover
    failover_target: 70s
    backends:
      - {address: 192.0.2.1, priority: 1, site: eu, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 192.0.2.2, priority: 2, site: us, healthchecks: [{type: tcp, params: {port: 80}}]}
  slow.example.org.:
    mode: failover
    failover_target: 30s
    backends:
      - {address: 192.0.2.11, priority: 1, site: eu, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 192.0.2.12, priority: 2, site: us, healthchecks: [{type: tcp, params: {port: 80}}]}
  lone.example.org.:
    mode: failover
    fallback_policy: {mode: fail-closed}
    backends:
      - {address: 192.0.2.21, site: eu, healthchecks: [{type: tcp, params: {port: 80}}]}
  pool.example.org.:
    mode: roundrobin
    drain_guard: {min_healthy: 2}
    backends:
      - {address: 192.0.2.31, site: eu}
      - {address: 192.0.2.32, site: eu}
      - {address: 192.0.2.33, site: us}
      - {address: 2001:db8::31, site: us}
`

func snapshot(t *testing.T) *catalog.Snapshot {
	t.Helper()
	z, err := config.ParseZone("example.org.yml", []byte(zone), "example.org.", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Build([]*config.Zone{z}, states{})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// TestRun supposes sites down, drained and the primaries down, and reads each record's report.
func TestRun(t *testing.T) {
	snap := snapshot(t)
	o := config.DefaultOptions()
	tests := []struct {
		name    string
		h       Hypothesis
		records map[string]string // record: its answers, then its failures, as reported
		failed  bool
	}{
		{"us down: nothing fails over", Hypothesis{Down: []string{"site:us"}}, map[string]string{
			"www.example.org.":  "A=192.0.2.1",
			"slow.example.org.": "A=192.0.2.11 | failover misses its target: worst case 1m5s",
			"pool.example.org.": "A=192.0.2.31,192.0.2.32 AAAA=fallback fail-open | no AAAA backend left",
		}, true},
		{"eu drained", Hypothesis{Drained: []string{"site:eu"}}, map[string]string{
			"www.example.org.":  "A=192.0.2.2",
			"slow.example.org.": "A=192.0.2.12 | failover misses its target",
			"lone.example.org.": "A=fallback fail-closed | no A backend left: the fallback policy (fail-closed) answers",
			"pool.example.org.": "A=192.0.2.33 AAAA=2001:db8::31 | below its drain guard: pool.example.org. A: 1 of 3 backends served",
		}, true},
		{"the primaries down", Hypothesis{Primaries: true}, map[string]string{
			"www.example.org.":  "A=192.0.2.2",
			"slow.example.org.": "A=192.0.2.12 | failover misses its target",
			"lone.example.org.": "A=fallback fail-closed | no A backend left",
		}, true},
		{"nothing matches", Hypothesis{Down: []string{"site:ap"}}, map[string]string{}, false},
	}
	for _, tt := range tests {
		rep := Run(snap, o, tt.h, time.Now())
		got := map[string]string{}
		for _, r := range rep.Records {
			var answers []string
			for _, f := range []string{"A", "AAAA"} {
				if a, ok := r.Answers[f]; ok {
					answers = append(answers, f+"="+strings.Join(a, ","))
				}
			}
			got[r.Record] = strings.Join(answers, " ")
			if len(r.Failures) > 0 {
				got[r.Record] += " | " + strings.Join(r.Failures, "; ")
			}
		}
		if len(got) != len(tt.records) {
			t.Errorf("%s: records %v, want %v", tt.name, got, tt.records)
		}
		for rec, want := range tt.records {
			if !strings.HasPrefix(got[rec], want) {
				t.Errorf("%s: %s reports %q, want it to start with %q", tt.name, rec, got[rec], want)
			}
		}
		if rep.Failed != tt.failed || rep.Summary == "" {
			t.Errorf("%s: failed %t (%s), want %t", tt.name, rep.Failed, rep.Summary, tt.failed)
		}
	}
	// The served snapshot is untouched.
	for _, r := range snap.Records() {
		for _, b := range r.Backends {
			if !b.Healthy() {
				t.Errorf("%s is no longer served after the drills", b.Key())
			}
		}
	}
}

// TestRunnerSchedulesAndReports runs a drill every second: its reports are kept, a failed one
// is reported, and a live drill drains through the store (with its user), or says why not.
func TestRunnerSchedulesAndReports(t *testing.T) {
	snap := snapshot(t)
	o := config.DefaultOptions()
	o.Safety.Drills = []config.Drill{
		{Name: "primaries", Every: time.Second, Primaries: true},
		{Name: "us-live", Every: time.Hour, Drained: []string{"site:us"}, Live: time.Minute},
		{Name: "ap-live", Every: time.Hour, Drained: []string{"site:ap"}, Live: time.Minute},
	}
	store := overlay.NewMemory(overlay.SystemClock{})
	var applied []overlay.Change
	var mu sync.Mutex
	apply := func(ctx context.Context, by string, changes []overlay.Change) error {
		mu.Lock()
		defer mu.Unlock()
		for i := range changes {
			changes[i].By = by
		}
		applied = append(applied, changes...)
		return store.Apply(ctx, changes)
	}
	var reported []Report
	report := func(r Report) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, r)
	}
	log := &testutil.Log{}
	r := NewRunner()
	r.Configure(o, func() *catalog.Snapshot { return snap }, apply, report, log)
	r.Start()
	defer r.Stop()

	testutil.Eventually(t, 5*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(reported) > 0
	}, "no report of the failing drill")
	st := r.Statuses(time.Now())
	if len(st) != 3 || st[0].Last == nil || !st[0].Last.Failed || st[0].Next.IsZero() || st[1].Last != nil || st[1].Live != "1m0s" {
		t.Fatalf("statuses %+v", st)
	}
	if log.Count("drill primaries failed") == 0 {
		t.Errorf("the failure is not logged:\n%s", log)
	}

	rep, err := r.Run(context.Background(), "us-live", Hypothesis{})
	if err != nil || rep.Live == nil || rep.Live.Error != "" || len(rep.Live.Backends) != 4 {
		t.Fatalf("live drill: %+v, %v", rep.Live, err)
	}
	o2, ok := store.Get("www.example.org.|192.0.2.2|0")
	if !ok || o2.Action != overlay.Drain || o2.By != "drill:us-live" || o2.Expires.IsZero() || !strings.Contains(o2.Reason, "us-live") {
		t.Errorf("the live drill's override %+v", o2)
	}
	if rep, _ := r.Run(context.Background(), "ap-live", Hypothesis{}); rep.Live == nil || rep.Live.Error != "no backend matches" || !rep.Failed {
		t.Errorf("a live drill that matches nothing: %+v", rep)
	}
	refuse := func(context.Context, string, []overlay.Change) error {
		return errors.New("refused by the drain guard: x")
	}
	r.Configure(o, func() *catalog.Snapshot { return snap }, refuse, report, log)
	if rep, _ := r.Run(context.Background(), "us-live", Hypothesis{}); !rep.Failed || !strings.Contains(rep.Summary, "the live drain was not made: refused by the drain guard") {
		t.Errorf("a refused live drill: %+v", rep)
	}

	if _, err := r.Run(context.Background(), "nope", Hypothesis{}); !errors.Is(err, ErrUnknown) {
		t.Errorf("an unknown drill: %v", err)
	}
	if _, err := r.Run(context.Background(), "", Hypothesis{}); err == nil {
		t.Error("a drill that supposes nothing runs")
	}
	if rep, err := r.Run(context.Background(), "", Hypothesis{Down: []string{"site:us"}}); err != nil || rep.Drill != "" || rep.Matched != 4 {
		t.Errorf("on demand: %+v, %v", rep, err)
	}

	// A configuration without the drill drops its report.
	o.Safety.Drills = o.Safety.Drills[1:]
	r.Configure(o, func() *catalog.Snapshot { return snap }, apply, report, log)
	if st := r.Statuses(time.Now()); len(st) != 2 || slices.ContainsFunc(st, func(s Status) bool { return s.Name == "primaries" }) {
		t.Errorf("after the drill left: %+v", st)
	}
}
