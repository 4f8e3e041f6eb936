package health

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/health/probe"
)

// TestReportSetsExternalBackends feeds an external backend's status through Report: it changes
// the state word, calls OnChange once per change, records the transition with who judged it,
// keeps the status across a Sync with the same spec, and is refused for backends that are not
// external.
func TestReportSetsExternalBackends(t *testing.T) {
	m := NewManager(Options{Log: testLog{}})
	var changes atomic.Int32
	ext := Spec{Key: "ext", Record: "www.example.org.", Backend: "192.0.2.1", External: true, OnChange: func() { changes.Add(1) }}
	probed := spec("probed", &scriptedProber{script: []bool{true}}, "c1", 0)
	specs := []Spec{ext, probed}
	m.Sync(specs, map[string]bool{"ext": true, "probed": true})

	steps := []struct {
		key     string
		status  Status
		ok      bool
		want    Status
		changes int32
	}{
		{"ext", Up, true, Up, 1},
		{"ext", Up, true, Up, 1}, // no change, no call
		{"ext", Stale, true, Stale, 2},
		{"ext", Down, true, Down, 3},
		{"probed", Up, false, Down, 3}, // a probed backend is not reported to
		{"nobody", Up, false, Down, 3},
	}
	for i, s := range steps {
		if got := m.Report(s.key, s.status, "test"); got != s.ok {
			t.Fatalf("step %d: Report(%s) = %v, want %v", i, s.key, got, s.ok)
		}
		if got := m.State("ext").Status(); got != s.want {
			t.Fatalf("step %d: ext is %s, want %s", i, got, s.want)
		}
		if got := changes.Load(); got != s.changes {
			t.Fatalf("step %d: OnChange ran %d times, want %d", i, got, s.changes)
		}
	}
	last := m.Transitions(1)
	if len(last) != 1 || last[0].To != Down || last[0].Reason != "test" {
		t.Fatalf("last transition = %+v", last)
	}
	m.Sync(specs, map[string]bool{"ext": true, "probed": true})
	if got := m.State("ext").Status(); got != Down {
		t.Fatalf("after a Sync with the same spec ext is %s, want down", got)
	}
	if d := m.Details()["ext"]; d.Status != Down || d.Reason != "test" {
		t.Fatalf("details = %+v", d)
	}
}

// TestExternalBackendsAreSeeded starts external backends at their seeded status, stale
// included; a probed backend is never seeded stale (only another site's can be).
func TestExternalBackendsAreSeeded(t *testing.T) {
	m := NewManager(Options{Log: testLog{}, Seed: map[string]Status{"ext": Up, "gone": Stale, "probed": Stale}})
	m.Sync([]Spec{{Key: "ext", External: true}, {Key: "gone", External: true}, spec("probed", &scriptedProber{}, "c", time.Hour)},
		map[string]bool{"ext": true, "gone": true, "probed": true})
	for key, want := range map[string]Status{"ext": Up, "gone": Stale, "probed": Unknown} {
		if got := m.State(key).Status(); got != want {
			t.Errorf("%s starts %s, want %s", key, got, want)
		}
	}
}

// step is one event of an External backend with checks: a result of its check (report ==
// nil) or a report of its source, and what the backend is after it.
type step struct {
	ok     bool    // the check's result, when report is nil
	report *Status // the status reported
	want   Status
	reason string // the reason its details show
}

func probed(ok bool, want Status, reason string) step {
	return step{ok: ok, want: want, reason: reason}
}

func reported(st Status, want Status, reason string) step {
	return step{report: &st, want: want, reason: reason}
}

// observe applies one result of the check of the backend with key, as the scheduler does when
// a probe ends: no scheduler runs, so the order of events is the test's.
func observe(m *Manager, key string, ok bool) {
	m.mu.Lock()
	b := m.backendLocked(key)
	j := b.subscriptions()[0].job
	m.mu.Unlock()
	res := probe.Result{OK: ok, Reason: "probe failed"}
	if ok {
		res.Reason = "probe ok"
	}
	m.apply(j, res)
}

// TestReportAndChecksBothDecide drives External backends with checks through check results
// and reports: both must be up for the backend to be up, either down makes it down at once
// (the report is not damped, the checks are by rise and fall), a stale report over up checks is
// stale, and the details' reason names the side that decides.
func TestReportAndChecksBothDecide(t *testing.T) {
	const (
		probeOK, probeFailed = "probe ok", "probe failed"
		none                 = notReported
	)
	tests := []struct {
		name       string
		rise, fall int
		seed       Status
		steps      []step
	}{
		{"report down while the checks are up", 1, 3, Unknown, []step{
			probed(true, Unknown, none),
			reported(Up, Up, probeOK),
			reported(Down, Down, "report down"),
			probed(true, Down, "report down"),
			reported(Up, Up, probeOK),
		}},
		{"checks fall while the report is up", 1, 2, Unknown, []step{
			reported(Up, Unknown, ""), // the checks have no result yet (and no reason)
			probed(true, Up, probeOK),
			probed(false, Up, probeFailed), // fall is 2
			probed(false, Down, probeFailed),
			reported(Up, Down, probeFailed),
		}},
		{"report recovers while the checks are down", 1, 1, Unknown, []step{
			probed(false, Down, probeFailed),
			reported(Down, Down, "report down"),
			reported(Up, Down, probeFailed),
			probed(true, Up, probeOK),
		}},
		{"rise applies to the checks only", 3, 1, Unknown, []step{
			probed(false, Down, probeFailed), // a first result sets the machine at once
			reported(Up, Down, probeFailed),
			probed(true, Down, probeOK),
			probed(true, Down, probeOK),
			probed(true, Up, probeOK),
			reported(Down, Down, "report down"),
			reported(Up, Up, probeOK), // at once: no rise for a report
		}},
		{"stale report", 1, 1, Unknown, []step{
			probed(true, Unknown, none),
			reported(Stale, Stale, "report stale"),
			probed(false, Down, probeFailed),
			probed(true, Stale, "report stale"),
			reported(Up, Up, probeOK),
			reported(Unknown, Unknown, "report unknown"),
		}},
		{"seeded up", 2, 2, Up, []step{
			reported(Down, Down, "report down"),
			reported(Up, Up, restored), // the machines start up
			probed(false, Up, probeFailed),
		}},
		{"seeded down", 2, 1, Down, []step{
			reported(Up, Down, restored),
			probed(true, Down, probeOK), // rise is 2, counted from down
			probed(true, Up, probeOK),
		}},
		{"seeded stale", 1, 1, Stale, []step{
			reported(Stale, Stale, "report stale"), // the machines start up
			probed(false, Down, probeFailed),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewManager(Options{Log: testLog{}, Seed: map[string]Status{"k": tt.seed}})
			var changes atomic.Int32
			s := spec("k", &scriptedProber{}, "check", time.Hour)
			s.External, s.Rise, s.Fall = true, tt.rise, tt.fall
			s.OnChange = func() { changes.Add(1) }
			m.Sync([]Spec{s}, keys(s))
			if got := m.State("k").Status(); got != tt.seed {
				t.Fatalf("starts %s, want %s", got, tt.seed)
			}
			last, want := tt.seed, int32(0)
			for i, st := range tt.steps {
				if st.report != nil {
					if !m.Report("k", *st.report, "report "+st.report.String()) {
						t.Fatalf("step %d: Report refused", i)
					}
				} else {
					observe(m, "k", st.ok)
				}
				if st.want != last {
					want++
				}
				last = st.want
				if got := m.State("k").Status(); got != st.want {
					t.Fatalf("step %d: %s, want %s", i, got, st.want)
				}
				if d := m.Details()["k"]; d.Status != st.want || d.Reason != st.reason {
					t.Fatalf("step %d: details %s (%q), want %s (%q)", i, d.Status, d.Reason, st.want, st.reason)
				}
				if got := changes.Load(); got != want {
					t.Fatalf("step %d: OnChange ran %d times, want %d", i, got, want)
				}
			}
		})
	}
}

// TestExternalWithChecksScheduled runs the check of an External backend on the scheduler: the
// checks' verdict holds while reports come and go, and a report down takes it down at once.
func TestExternalWithChecksScheduled(t *testing.T) {
	m := NewManager(Options{Log: testLog{}})
	p := &scriptedProber{script: []bool{true}}
	s := spec("k", p, "check", 10*time.Millisecond)
	s.External = true
	m.Sync([]Spec{s}, keys(s))
	m.Start()
	defer m.Stop()
	m.Report("k", Up, "test")
	waitFor(t, "the checks up", func() bool { return m.State("k").Status() == Up })
	for i, st := range []Status{Down, Up, Stale, Unknown, Down} {
		m.Report("k", st, "test")
		if got := m.State("k").Status(); got != st {
			t.Fatalf("report %d (%s) over up checks: %s", i, st, got)
		}
	}
	before := p.calls.Load()
	waitFor(t, "more probes", func() bool { return p.calls.Load() > before+1 })
	if got := m.State("k").Status(); got != Down {
		t.Fatalf("probes up after a report down: %s, want down", got)
	}
}

// TestBecomingExternalStartsOver: a backend whose checks stay but which a source now judges
// starts over, as unknown until its first report.
func TestBecomingExternalStartsOver(t *testing.T) {
	m := NewManager(Options{Log: testLog{}})
	s := spec("k", &scriptedProber{}, "check", time.Hour)
	m.Sync([]Spec{s}, keys(s))
	observe(m, "k", true)
	if got := m.State("k").Status(); got != Up {
		t.Fatalf("probed up: %s", got)
	}
	ext := s
	ext.External = true
	m.Sync([]Spec{ext}, keys(ext))
	if got := m.State("k").Status(); got != Unknown {
		t.Fatalf("after becoming External: %s, want unknown", got)
	}
	observe(m, "k", true)
	m.Report("k", Up, "test")
	if got := m.State("k").Status(); got != Up {
		t.Fatalf("checks and report up: %s, want up", got)
	}
}
