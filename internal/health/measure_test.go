package health

import (
	"maps"
	"math"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/health/probe"
)

func TestSmoothRTT(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name    string
		samples []time.Duration
		want    time.Duration
	}{
		{"first sample taken as it is", []time.Duration{10 * ms}, 10 * ms},
		{"steady", []time.Duration{10 * ms, 10 * ms, 10 * ms}, 10 * ms},
		{"one outlier moves it by 30% of its excess", []time.Duration{10 * ms, 110 * ms}, 40 * ms},
		{"two steps up", []time.Duration{10 * ms, 20 * ms, 20 * ms}, 10*ms + 3*ms + 2100*time.Microsecond},
		{"down", []time.Duration{100 * ms, 0 + 50*ms}, 85 * ms},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var srtt time.Duration
			for _, s := range tc.samples {
				srtt = smoothRTT(srtt, s)
			}
			if srtt != tc.want {
				t.Errorf("got %v, want %v", srtt, tc.want)
			}
		})
	}
}

func TestRTTMoved(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		announced, srtt time.Duration
		want            bool
	}{
		{0, 5 * ms, true},               // the first measurement
		{5 * ms, 0, true},               // forgotten
		{0, 0, false},                   // nothing either way
		{100 * ms, 109 * ms, false},     // under 10%
		{100 * ms, 111 * ms, true},      // over 10% and 1 ms
		{100 * ms, 89 * ms, true},       // down too
		{5 * ms, 5*ms + 900_000, false}, // 18% but under 1 ms
		{5 * ms, 6*ms + 100_000, true},  // 22% and over 1 ms
	}
	for _, tc := range tests {
		if got := rttMoved(tc.announced, tc.srtt); got != tc.want {
			t.Errorf("rttMoved(%v, %v) = %v, want %v", tc.announced, tc.srtt, got, tc.want)
		}
	}
}

func TestLoadMoved(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		announced, load, capacity float64
		want                      bool
	}{
		{nan, 0.3, 1, true},    // became known
		{0.3, nan, 1, true},    // became unknown
		{nan, nan, 1, false},   // still unknown
		{0.30, 0.34, 1, false}, // under 5% of the capacity
		{0.30, 0.36, 1, true},
		{0.30, 0.24, 0, true}, // capacity 0 counts as 1
		{30, 34, 100, false},  // 4 of 100
		{30, 36, 100, true},   // 6 of 100
	}
	for _, tc := range tests {
		if got := loadMoved(tc.announced, tc.load, tc.capacity); got != tc.want {
			t.Errorf("loadMoved(%v, %v, %v) = %v, want %v", tc.announced, tc.load, tc.capacity, got, tc.want)
		}
	}
}

// measured is a manager with one backend "a" of two checks (not started: results are applied
// by hand), and counts of its OnChange and OnMeasure calls.
type measured struct {
	m                 *Manager
	first, second     *job
	changes, measures int
}

func newMeasured(t *testing.T) *measured {
	t.Helper()
	x := &measured{m: NewManager(Options{Log: testLog{}})}
	s := spec("a", &scriptedProber{}, "rtt-check", time.Hour)
	s.Checks = append(s.Checks, &probe.Compiled{Prober: &scriptedProber{}, Type: "test", Timeout: time.Second, Key: "load-check"})
	s.Capacity = 10
	s.OnChange = func() { x.changes++ }
	s.OnMeasure = func() { x.measures++ }
	x.m.Sync([]Spec{s}, keys(s))
	for j := range x.m.queue.All() {
		if j.subscribers()[0] == &j.subscribers()[0].backend.subscriptions()[0] {
			x.first = j
		} else {
			x.second = j
		}
	}
	return x
}

// apply applies res to j and returns the calls of OnChange and OnMeasure it made.
func (x *measured) apply(j *job, res probe.Result) (changes, measures int) {
	c, m := x.changes, x.measures
	x.m.apply(j, res)
	return x.changes - c, x.measures - m
}

func TestManagerMeasures(t *testing.T) {
	ms := time.Millisecond
	x := newMeasured(t)
	st := x.m.State("a")
	if st.RTT() != 0 || !math.IsNaN(st.Load()) || !st.Recovered().IsZero() {
		t.Fatalf("starts with RTT %v, load %v, recovered %v", st.RTT(), st.Load(), st.Recovered())
	}
	steps := []struct {
		name              string
		second            bool // the result is the second check's
		res               probe.Result
		changes, measures int
		rtt               time.Duration
		load              float64 // NaN: unknown
		recovered         bool
	}{
		{"first check up (the backend is not yet): its RTT", false, probe.Result{OK: true, Latency: 10 * ms}, 0, 1, 10 * ms, math.NaN(), false},
		{"small move: not announced", false, probe.Result{OK: true, Latency: 12 * ms}, 0, 0, 10*ms + 600*time.Microsecond, math.NaN(), false},
		{"big move: announced", false, probe.Result{OK: true, Latency: 40 * ms}, 0, 1, 10*ms + 600*time.Microsecond + 8820*time.Microsecond, math.NaN(), false},
		{"second check up: the change, with its load but not its RTT", true, probe.Result{OK: true, Latency: 500 * ms, HasLoad: true, Load: 3}, 1, 0, 10*ms + 600*time.Microsecond + 8820*time.Microsecond, 3, false},
		{"a load move under 5% of the capacity", true, probe.Result{OK: true, HasLoad: true, Load: 3.4}, 0, 0, 19420 * time.Microsecond, 3.4, false},
		{"a result without load keeps it", false, probe.Result{OK: true, Latency: 19 * ms}, 0, 0, 19294 * time.Microsecond, 3.4, false},
		{"a load that became unknown", true, probe.Result{OK: true, HasLoad: true, Load: math.NaN()}, 0, 1, 19294 * time.Microsecond, math.NaN(), false},
		{"a failure does not feed the RTT", false, probe.Result{Reason: "refused", Latency: 5 * time.Second, HasLoad: true, Load: 1}, 1, 0, 0, math.NaN(), false},
		{"up again: a recovery, the RTT starts over", false, probe.Result{OK: true, Latency: 30 * ms}, 1, 0, 30 * ms, math.NaN(), true},
	}
	for _, s := range steps {
		j := x.first
		if s.second {
			j = x.second
		}
		changes, measures := x.apply(j, s.res)
		if changes != s.changes || measures != s.measures {
			t.Errorf("%s: %d changes and %d measures, want %d and %d", s.name, changes, measures, s.changes, s.measures)
		}
		if st.RTT() != s.rtt || !(st.Load() == s.load || math.IsNaN(st.Load()) && math.IsNaN(s.load)) {
			t.Errorf("%s: RTT %v, load %v; want %v, %v", s.name, st.RTT(), st.Load(), s.rtt, s.load)
		}
		if got := !st.Recovered().IsZero(); got != s.recovered {
			t.Errorf("%s: recovered %v, want %v", s.name, got, s.recovered)
		}
	}
}

// TestManagerMeasuresOnlyLocalProbes: a result another instance probed (Receive, by set) has
// no latency of ours, so it feeds no RTT; its load is the backend's, and feeds the load.
func TestManagerMeasuresOnlyLocalProbes(t *testing.T) {
	x := newMeasured(t)
	x.m.mu.Lock()
	notify := x.m.observeLocked(x.first, probe.Result{OK: true, Latency: 10 * time.Millisecond}, "other")
	x.m.mu.Unlock()
	if st := x.m.State("a"); st.RTT() != 0 || !math.IsNaN(st.Load()) || len(notify) != 0 {
		t.Errorf("RTT %v, load %v, %d notifications (want 0, unknown, none)", st.RTT(), st.Load(), len(notify))
	}
	x.m.mu.Lock()
	notify = x.m.observeLocked(x.first, probe.Result{OK: true, Latency: 10 * time.Millisecond, HasLoad: true, Load: 2}, "other")
	x.m.mu.Unlock()
	if st := x.m.State("a"); st.RTT() != 0 || st.Load() != 2 || len(notify) != 1 {
		t.Errorf("with a load: RTT %v, load %v, %d notifications (want 0, 2, one)", st.RTT(), st.Load(), len(notify))
	}
}

// TestRecoveryAcrossReload: a backend that went down, whose checks a reload changed, recovers
// when it comes up; one that was never down does not.
func TestRecoveryAcrossReload(t *testing.T) {
	x := newMeasured(t)
	x.apply(x.first, probe.Result{Reason: "refused"})
	s := spec("a", &scriptedProber{}, "rtt-check-changed", time.Hour)
	x.m.Sync([]Spec{s}, keys(s))
	x.m.apply(jobOf(x.m, jobKey(s.Checks[0], &s)), probe.Result{OK: true, Latency: time.Millisecond})
	if x.m.State("a").Recovered().IsZero() {
		t.Error("a backend that was down did not recover after the reload")
	}
	y := newMeasured(t)
	y.apply(y.first, probe.Result{OK: true, Latency: time.Millisecond})
	if !y.m.State("a").Recovered().IsZero() {
		t.Error("a backend's first up is a recovery")
	}
}

// TestVantageRTTs: a quorum verdict's votes give the backend its RTT as each site's instances
// measured it (the mean of a site's votes, smoothed), leaving out failed, isolated and
// site-less votes; a site without a vote keeps its RTT; the record hears of a move, and the
// RTTs are forgotten when the backend goes down.
func TestVantageRTTs(t *testing.T) {
	ms := time.Millisecond
	b := &backend{state: &State{}}
	steps := []struct {
		name  string
		votes []Vote
		want  map[string]time.Duration
		moved bool
	}{
		{"no vantage", []Vote{{Instance: "a", OK: true, Latency: 5 * ms}}, nil, false},
		{"two sites", []Vote{
			{Instance: "a", Site: "eu", OK: true, Latency: 10 * ms}, {Instance: "b", Site: "eu", OK: true, Latency: 20 * ms},
			{Instance: "c", Site: "us", OK: true, Latency: 80 * ms}, {Instance: "d", Site: "us", OK: false, Latency: time.Second},
			{Instance: "e", Site: "ap", OK: true, Latency: 7 * ms, Isolated: true},
		}, map[string]time.Duration{"eu": 15 * ms, "us": 80 * ms}, true},
		{"us again, eu silent", []Vote{{Instance: "c", Site: "us", OK: true, Latency: 40 * ms}},
			map[string]time.Duration{"eu": 15 * ms, "us": 68 * ms}, true},
		{"a small move", []Vote{{Instance: "c", Site: "us", OK: true, Latency: 69 * ms}},
			map[string]time.Duration{"eu": 15 * ms, "us": 68*ms + 300*time.Microsecond}, false},
	}
	for _, s := range steps {
		moved := b.measureVantages(s.votes)
		if moved != s.moved || !maps.Equal(b.vantages(), s.want) {
			t.Errorf("%s: moved %v, vantages %v; want %v, %v", s.name, moved, b.vantages(), s.moved, s.want)
		}
	}
	if got := b.state.VantageRTTs(); got["us"] != 68*ms {
		t.Errorf("the state holds %v, want what was last announced (us 68ms)", got)
	}
	b.noteStatus(Down, time.Now())
	if b.state.VantageRTTs() != nil || b.vantages() != nil {
		t.Error("the RTTs by site outlived the backend going down")
	}
}

// TestMeasureOnly: a MeasureOnly backend's checks feed its RTT and load, never its status,
// which is its source's last report: failing checks leave it up, passing ones do not make an
// unreported backend up, and the details explain it by the report.
func TestMeasureOnly(t *testing.T) {
	ms := time.Millisecond
	m := NewManager(Options{Log: testLog{}})
	s := spec("k", &scriptedProber{}, "check", time.Hour)
	s.External, s.MeasureOnly, s.Rise, s.Fall = true, true, 1, 1
	m.Sync([]Spec{s}, keys(s))
	st := m.State("k")
	steps := []struct {
		name   string
		report *Status
		res    *probe.Result
		want   Status
		rtt    time.Duration
		reason string
	}{
		{"a probe before any report", nil, &probe.Result{OK: true, Latency: 10 * ms, Reason: "probe ok"}, Unknown, 10 * ms, notReported},
		{"reported up", ptr(Up), nil, Up, 10 * ms, "site us"},
		{"a failing probe leaves it up", nil, &probe.Result{Reason: "refused"}, Up, 10 * ms, "site us"},
		{"a passing probe measures", nil, &probe.Result{OK: true, Latency: 20 * ms, Reason: "probe ok"}, Up, 13 * ms, "site us"},
		{"reported down: the RTT is forgotten", ptr(Down), nil, Down, 0, "site us"},
		{"a passing probe while down measures but does not raise it", nil, &probe.Result{OK: true, Latency: 5 * ms, Reason: "probe ok"}, Down, 5 * ms, "site us"},
	}
	for _, step := range steps {
		if step.report != nil {
			m.Report("k", *step.report, "site us")
		} else {
			m.apply(jobOf(m, jobKey(s.Checks[0], &s)), *step.res)
		}
		if st.Status() != step.want || st.RTT() != step.rtt {
			t.Errorf("%s: %s with RTT %v, want %s with %v", step.name, st.Status(), st.RTT(), step.want, step.rtt)
		}
		if d := m.Details()["k"]; d.Reason != step.reason {
			t.Errorf("%s: the details' reason %q, want %q", step.name, d.Reason, step.reason)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestReportRTTs: the RTTs other sites published join the quorum's RTTs by site (the quorum
// wins a site both have), the record hears of a move, and an empty report takes them back.
func TestReportRTTs(t *testing.T) {
	ms := time.Millisecond
	x := newMeasured(t)
	b := x.m.backendLocked("a")
	if x.m.ReportRTTs("nobody", map[string]time.Duration{"us": ms}) {
		t.Error("ReportRTTs accepted an unknown key")
	}
	x.m.mu.Lock()
	b.measureVantages([]Vote{{Instance: "i", Site: "eu", OK: true, Latency: 10 * ms}})
	x.m.mu.Unlock()
	steps := []struct {
		name     string
		rtts     map[string]time.Duration
		want     map[string]time.Duration
		measures int
	}{
		{"two sites", map[string]time.Duration{"us": 80 * ms, "ap": 150 * ms}, map[string]time.Duration{"eu": 10 * ms, "us": 80 * ms, "ap": 150 * ms}, 1},
		{"the same again", map[string]time.Duration{"us": 80 * ms, "ap": 150 * ms}, map[string]time.Duration{"eu": 10 * ms, "us": 80 * ms, "ap": 150 * ms}, 0},
		{"the quorum's site wins", map[string]time.Duration{"eu": 99 * ms, "us": 80 * ms, "ap": 150 * ms}, map[string]time.Duration{"eu": 10 * ms, "us": 80 * ms, "ap": 150 * ms}, 0},
		{"a move", map[string]time.Duration{"us": 30 * ms}, map[string]time.Duration{"eu": 10 * ms, "us": 30 * ms}, 1},
		{"none", nil, map[string]time.Duration{"eu": 10 * ms}, 1},
	}
	for _, s := range steps {
		before := x.measures
		if !x.m.ReportRTTs("a", s.rtts) {
			t.Fatalf("%s: refused", s.name)
		}
		if got := x.m.State("a").VantageRTTs(); !maps.Equal(got, s.want) || x.measures-before != s.measures {
			t.Errorf("%s: %v and %d measures, want %v and %d", s.name, got, x.measures-before, s.want, s.measures)
		}
	}
}
