package catalog

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/policy"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

func TestRampFraction(t *testing.T) {
	const d = 60 * time.Second
	tests := []struct {
		elapsed, slowStart time.Duration
		want               float64
	}{
		{0, d, 0.1},
		{-time.Second, d, 0.1}, // a clock step back: the start
		{d / 2, d, 0.55},
		{d * 9 / 10, d, 0.91},
		{d, d, 1},
		{2 * d, d, 1},
		{time.Second, 0, 1}, // off
	}
	for _, tc := range tests {
		if got := rampFraction(tc.elapsed, tc.slowStart); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("rampFraction(%v, %v) = %v, want %v", tc.elapsed, tc.slowStart, got, tc.want)
		}
	}
}

func TestRampStep(t *testing.T) {
	for _, tc := range []struct{ slowStart, want time.Duration }{
		{time.Second, 100 * time.Millisecond},
		{3 * time.Second, 300 * time.Millisecond},
		{time.Minute, time.Second},
	} {
		if got := rampStep(tc.slowStart); got != tc.want {
			t.Errorf("rampStep(%v) = %v, want %v", tc.slowStart, got, tc.want)
		}
	}
}

// TestRampIncluded: over the ramp, roundrobin has a recovering backend in its rotation for the
// share of the steps its mean fraction says, fewer early than late.
func TestRampIncluded(t *testing.T) {
	const d = 60 * time.Second // 60 steps of 1 s
	var in []bool
	for k := range 60 {
		in = append(in, rampIncluded(time.Duration(k)*time.Second+time.Second/2, d))
	}
	count := func(s []bool) (n int) {
		for _, b := range s {
			if b {
				n++
			}
		}
		return n
	}
	// The area under the fraction: 0.1·60 + 0.9·60/2 = 33 steps; 0.1·20 + 0.9·20²/120 = 5 in the first third.
	if got := count(in); got != 33 {
		t.Errorf("in for %d of 60 steps, want 33", got)
	}
	if got := count(in[:20]); got != 5 {
		t.Errorf("in for %d of the first 20 steps, want 5", got)
	}
	if in[0] {
		t.Error("in the rotation from the first step")
	}
	if !rampIncluded(d, d) || !rampIncluded(time.Hour, d) {
		t.Error("out of the rotation after the ramp")
	}
}

const slowStartZone = `
records:
  w.example.org.:
    mode: %s
    slow_start: 60s
    backends:
      - {address: 10.0.0.1, weight: 2, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.0.0.2, weight: 2, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.0.0.3, weight: 1, healthchecks: [{type: tcp, params: {port: 80}}]}
`

// slowStartRecord returns the record of slowStartZone in mode with every backend up, and its
// states.
func slowStartRecord(t *testing.T, mode string) (*Record, states) {
	t.Helper()
	hs := states{}
	snap, err := Build([]*config.Zone{mustZone(t, "example.org", fmt.Sprintf(slowStartZone, mode))}, hs)
	if err != nil {
		t.Fatal(err)
	}
	r := snap.Records()[0]
	for _, b := range r.Backends {
		b.State.Set(health.Up)
	}
	r.Refresh()
	return r, hs
}

func TestSlowStartWeights(t *testing.T) {
	r, _ := slowStartRecord(t, "weighted")
	now := time.Now()
	tests := []struct {
		name    string
		elapsed []time.Duration // per backend since it recovered; -1: never did
		want    []int
		ramping bool
	}{
		{"none ramps", []time.Duration{-1, -1, -1}, []int{2, 2, 1}, false},
		{"just recovered", []time.Duration{-1, 0, -1}, []int{200, 20, 100}, true},
		{"half way", []time.Duration{-1, 30 * time.Second, -1}, []int{200, 110, 100}, true},
		{"weight 1 keeps its fractions", []time.Duration{-1, -1, 45 * time.Second}, []int{200, 200, 78}, true},
		{"done", []time.Duration{-1, 60 * time.Second, -1}, []int{2, 2, 1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cands []policy.Candidate
			for i, b := range r.Backends {
				b.State.SetRecovered(time.Time{})
				if tc.elapsed[i] >= 0 {
					b.State.SetRecovered(now.Add(-tc.elapsed[i]))
				}
				cands = append(cands, policy.Candidate{Weight: int(b.Config.Weight)})
			}
			healthy, cands, next := r.slowStart(now, slices.Clone(r.Backends), cands)
			var got []int
			for _, c := range cands {
				got = append(got, c.Weight)
			}
			if !slices.Equal(got, tc.want) || len(healthy) != 3 || next.IsZero() == tc.ramping {
				t.Errorf("weights %v (want %v), %d backends, next step %v", got, tc.want, len(healthy), next)
			}
		})
	}
}

func TestSlowStartRoundRobin(t *testing.T) {
	r, _ := slowStartRecord(t, "roundrobin")
	now := time.Now()
	b := r.Backends[1]
	cands := make([]policy.Candidate, 3)
	served := func(at time.Time) bool {
		healthy, c, _ := r.slowStart(at, slices.Clone(r.Backends), slices.Clone(cands))
		if len(healthy) != len(c) {
			t.Fatalf("%d backends, %d candidates", len(healthy), len(c))
		}
		return slices.Contains(healthy, b)
	}
	b.State.SetRecovered(now)
	if served(now.Add(500 * time.Millisecond)) {
		t.Error("served in the first step of its ramp")
	}
	if !served(now.Add(time.Minute)) {
		t.Error("not served after its ramp")
	}
	// Every backend ramps: none is left out.
	for _, o := range r.Backends {
		o.State.SetRecovered(now)
	}
	if !served(now.Add(500 * time.Millisecond)) {
		t.Error("left out while every backend ramps")
	}
}

// TestRefreshRampTimer: Refresh keeps refreshing the record while a backend ramps, and stops.
func TestRefreshRampTimer(t *testing.T) {
	r, _ := slowStartRecord(t, "weighted")
	steering := *r.Config.Steering()
	steering.SlowStart = 300 * time.Millisecond
	r.Config.SetSteering(steering)
	b := r.Backends[1]
	b.State.SetRecovered(time.Now())
	r.Refresh()
	first := r.View()
	testutil.Eventually(t, 5*time.Second, func() bool {
		r.refreshMu.Lock()
		defer r.refreshMu.Unlock()
		return r.ramp == nil
	}, "the ramp timer never stopped")
	if r.View() == first {
		t.Error("the ramp never refreshed the view")
	}
}

func TestRelativeLoad(t *testing.T) {
	tests := []struct {
		load, capacity, want float64
	}{
		{3, 10, 0.3},
		{0.5, 0, 0.5}, // capacity unset: 1
		{12, 10, 1.2}, // over capacity
		{0, 4, 0},
		{math.NaN(), 10, -1}, // unknown
	}
	for _, tc := range tests {
		bc := config.Backend{}.WithChecks(config.Checks{Capacity: tc.capacity})
		b := &Backend{Config: &bc, State: &health.State{}}
		b.State.SetLoad(tc.load)
		if got := b.RelativeLoad(); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("load %v of capacity %v: %v, want %v", tc.load, tc.capacity, got, tc.want)
		}
	}
	if got := (&Backend{Config: &config.Backend{}, State: &health.State{}}).RelativeLoad(); got != -1 {
		t.Errorf("a fresh state's load is %v, want -1 (unknown)", got)
	}
}
