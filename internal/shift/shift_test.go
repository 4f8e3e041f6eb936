package shift

import (
	"context"
	"fmt"
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

func snapshot(t *testing.T) *catalog.Snapshot {
	t.Helper()
	z, err := config.ParseZone("example.org.yml", []byte(`
records:
  www.example.org.:
    mode: weighted
    backends:
      - {address: 192.0.2.1, weight: 3, site: a}
      - {address: 192.0.2.2, weight: 1, site: a}
      - {address: 192.0.2.3, weight: 2, site: b}
      - {address: 192.0.2.4, weight: 6, site: c}
  v6.example.org.:
    mode: weighted
    backends:
      - {address: 192.0.2.10, site: a}
      - {address: 2001:db8::10, site: a}
      - {address: 192.0.2.11, site: b}
  failover.example.org.:
    backends: [{address: 192.0.2.20, site: a}, {address: 192.0.2.21, site: b}]
`), "example.org.", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Build([]*config.Zone{z}, health.NewManager(health.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func TestWeights(t *testing.T) {
	r := Record(snapshot(t), "www.example.org.")
	for _, tc := range []struct {
		step int
		want string // the weights of .1 .2 .3 .4
	}{
		{-1, "450 150 0 600"}, // a carries a's and b's weight, b none
		{0, "300 100 200 600"},
		{1, "0 0 600 600"},
	} {
		s := &Shift{From: []string{"site:a"}, To: []string{"site:b"}, Steps: []float64{1.0 / 3, 1}, Step: tc.step}
		w := s.Weights(r)
		var got []string
		for _, b := range r.Backends {
			got = append(got, fmt.Sprint(w[b]))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("step %d: weights %v, want %s", tc.step, got, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	snap := snapshot(t)
	above := 0.1
	tests := []struct {
		name, record string
		s            Shift
		want         string // in the error; empty: none
	}{
		{"fine", "www.example.org.", Shift{From: []string{"site:a"}, To: []string{"site:b"}, Steps: []float64{0.1, 1}, Every: Duration(time.Minute)}, ""},
		{"a failover record", "failover.example.org.", Shift{From: []string{"site:a"}, To: []string{"site:b"}, Steps: []float64{1}, Every: Duration(time.Minute)}, "is in mode failover"},
		{"nothing to move to", "www.example.org.", Shift{From: []string{"site:a"}, To: []string{"site:x"}, Steps: []float64{1}, Every: Duration(time.Minute)}, "to [site:x] names no backend"},
		{"in both", "www.example.org.", Shift{From: []string{"site:a"}, To: []string{"192.0.2.1", "site:b"}, Steps: []float64{1}, Every: Duration(time.Minute)}, "is in both from and to"},
		{"AAAA left behind", "v6.example.org.", Shift{From: []string{"site:a"}, To: []string{"site:b"}, Steps: []float64{1}, Every: Duration(time.Minute)}, "from has AAAA backends and to none"},
		{"steps that go back", "www.example.org.", Shift{From: []string{"site:a"}, To: []string{"site:b"}, Steps: []float64{0.5, 0.25}, Every: Duration(time.Minute)}, "steps must increase"},
		{"too fast", "www.example.org.", Shift{From: []string{"site:a"}, To: []string{"site:b"}, Steps: []float64{1}, Every: Duration(time.Millisecond)}, "shorter than a second"},
		{"a prometheus signal without a server", "www.example.org.", Shift{From: []string{"site:a"}, To: []string{"site:b"}, Steps: []float64{1}, Every: Duration(time.Minute),
			Signal: &Signal{Kind: SignalPrometheus, Query: "up", Above: &above}}, "needs the block's prometheus option"},
		{"no threshold", "www.example.org.", Shift{From: []string{"site:a"}, To: []string{"site:b"}, Steps: []float64{1}, Every: Duration(time.Minute),
			Signal: &Signal{Kind: SignalMetric}}, "has no threshold"},
	}
	for _, tt := range tests {
		err := tt.s.Check(Record(snap, tt.record), false)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestControllerWithPrometheus moves shifts on a real Prometheus's query: one completes while
// the error ratio stays low, the next rolls back when it rises, and says why.
func TestControllerWithPrometheus(t *testing.T) {
	ratio, target := testutil.ServeGauge(t, "test_error_ratio")
	prom := testutil.StartPrometheus(t, target)
	snap := snapshot(t)
	store := overlay.NewMemory(overlay.SystemClock{})
	var mu sync.Mutex
	var reports []string
	log := &testutil.Log{}
	c := NewController()
	c.Configure(Setup{
		Served: func() *catalog.Snapshot { return snap },
		List:   store.List,
		Apply: func(ctx context.Context, by string, changes []overlay.Change) error {
			for i := range changes {
				changes[i].By = by
			}
			return store.Apply(ctx, changes)
		},
		Prometheus: prom.URL,
		Report: func(s *Shift, change string) {
			mu.Lock()
			defer mu.Unlock()
			reports = append(reports, s.ID+" "+change)
		},
		Log: log,
	})
	c.Start()
	defer c.Stop()

	above := 0.1
	start := func(id string, every time.Duration) {
		t.Helper()
		s := &Shift{ID: id, Record: "www.example.org.", From: []string{"site:a"}, To: []string{"site:b"}, Steps: []float64{0.5, 1},
			Every: Duration(every), Signal: &Signal{Kind: SignalPrometheus, Query: "max(test_error_ratio)", Above: &above},
			State: Running, StepStarted: time.Now()}
		if err := s.Check(Record(snap, s.Record), true); err != nil {
			t.Fatal(err)
		}
		ch, err := s.Change()
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Apply(context.Background(), []overlay.Change{ch}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(id string) *Shift {
		for _, s := range FromOverrides(store.List()) {
			if s.ID == id {
				return s
			}
		}
		return nil
	}
	ratio.Set(0.01)
	start("good", time.Second)
	testutil.Eventually(t, 20*time.Second, func() bool { return get("good").State == Completed },
		"shift good is %+v\nnotes %v\n%s\n%s", get("good"), c.Notes(), log, prom.Logs())
	if g := get("good"); g.Step != 1 || len(g.History) != 2 || g.History[0].What != "step" || g.History[1].What != "completed" {
		t.Errorf("completed shift %+v", g)
	}
	if err := store.Apply(context.Background(), []overlay.Change{{Key: overlay.ShiftPrefix + "good", Action: overlay.Clear}}); err != nil {
		t.Fatal(err)
	}

	// The bad shift holds its first step (50%) until its signal rises: with a step of a second
	// it could take its next one before Prometheus scraped the risen ratio on a loaded machine.
	start("bad", time.Hour)
	testutil.Eventually(t, 10*time.Second, func() bool { return strings.Contains(c.Notes()["bad"], "= 0.01") },
		"no reading of the signal: %v", c.Notes())
	ratio.Set(0.5)
	testutil.Eventually(t, 20*time.Second, func() bool { return get("bad").State == RolledBack }, "shift bad is %+v\n%s", get("bad"), log)
	b := get("bad")
	if b.Share() >= 0.5 || !strings.Contains(b.Why, `prometheus "max(test_error_ratio)" 0.5 is above 0.1`) {
		t.Errorf("rolled back shift %+v", b)
	}
	if o, _ := store.Get(b.Key()); o.By != "shift:bad" {
		t.Errorf("the rollback was written by %q", o.By)
	}
	if log.Count("shift bad of www.example.org. rolled back") != 1 {
		t.Errorf("the rollback is not logged once:\n%s", log)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(strings.Join(reports, ","), "bad rolled-back") || !strings.Contains(strings.Join(reports, ","), "good completed") {
		t.Errorf("reports %v", reports)
	}
}

// TestFailureRateAndMetric reads the other two signals.
func TestFailureRateAndMetric(t *testing.T) {
	snap := snapshot(t)
	r := Record(snap, "www.example.org.")
	above := 0.2
	s := &Shift{From: []string{"site:a"}, To: []string{"site:b"}, Steps: []float64{1}, Signal: &Signal{Kind: SignalFailureRate, Above: &above}}
	var asked []string
	rd := reader{results: func(keys []string, _ time.Time) (int, int) { asked = keys; return 10, 3 }}
	v, err := rd.read(context.Background(), s, r)
	if err != nil || v != 0.3 || len(asked) != 1 || asked[0] != "www.example.org.|192.0.2.3|0" {
		t.Errorf("failure rate %g, %v of %v", v, err, asked)
	}
	if bad, why := s.Signal.degraded(v); !bad || why != "failure_rate 0.3 is above 0.2" {
		t.Errorf("degraded %t %q", bad, why)
	}
	rd.results = func([]string, time.Time) (int, int) { return 0, 0 }
	if _, err := rd.read(context.Background(), s, r); err == nil {
		t.Error("no result reads as a value")
	}
	s.Signal.Kind = SignalMetric
	if _, err := rd.read(context.Background(), s, r); err == nil || !strings.Contains(err.Error(), "no load") {
		t.Errorf("a metric without load: %v", err)
	}
}
