package health

import (
	"math"
	"slices"
	"testing"
	"time"
)

// hour0 is a time on a bucket boundary.
var hour0 = time.Unix(1_800_000_000, 0) // divisible by 30

func TestHistoryBuckets(t *testing.T) {
	type result struct {
		at      time.Duration // after hour0
		ok      bool
		latency time.Duration
	}
	tests := []struct {
		name    string
		results []result
		now     time.Duration // after hour0
		// want are the non-empty samples, by index from the newest (0: the bucket holding now).
		want map[int]Sample
	}{
		{
			name:    "one bucket: mean of the measured latencies, failures counted",
			results: []result{{0, true, 2 * time.Millisecond}, {10 * time.Second, false, 4 * time.Millisecond}, {29 * time.Second, true, 0}},
			now:     29 * time.Second,
			want:    map[int]Sample{0: {Results: 3, Failures: 1, Latency: 3 * time.Millisecond}},
		},
		{
			name:    "a result on the boundary opens the next bucket",
			results: []result{{29*time.Second + 999*time.Millisecond, true, time.Millisecond}, {30 * time.Second, false, 5 * time.Millisecond}},
			now:     30 * time.Second,
			want:    map[int]Sample{1: {Results: 1, Latency: time.Millisecond}, 0: {Results: 1, Failures: 1, Latency: 5 * time.Millisecond}},
		},
		{
			name:    "empty buckets between results stay empty",
			results: []result{{0, true, time.Millisecond}, {5 * time.Minute, true, 2 * time.Millisecond}},
			now:     6 * time.Minute,
			want:    map[int]Sample{12: {Results: 1, Latency: time.Millisecond}, 2: {Results: 1, Latency: 2 * time.Millisecond}},
		},
		{
			name:    "results of other instances count without a latency",
			results: []result{{0, false, 0}},
			now:     0,
			want:    map[int]Sample{0: {Results: 1, Failures: 1}},
		},
		{
			name:    "the ring wraps: a bucket an hour old is overwritten, not added to",
			results: []result{{0, true, time.Millisecond}, {time.Hour, true, 3 * time.Millisecond}},
			now:     time.Hour,
			want:    map[int]Sample{0: {Results: 1, Latency: 3 * time.Millisecond}},
		},
		{
			name:    "the oldest bucket is an hour minus one bucket old",
			results: []result{{30 * time.Second, true, time.Millisecond}},
			now:     time.Hour,
			want:    map[int]Sample{HistoryBuckets - 1: {Results: 1, Latency: time.Millisecond}},
		},
		{
			name:    "a clock set back an hour or more keeps only what came after",
			results: []result{{2 * time.Hour, true, time.Millisecond}, {0, false, 0}},
			now:     0,
			want:    map[int]Sample{0: {Results: 1, Failures: 1}},
		},
		{
			name:    "results older than the hour are gone",
			results: []result{{0, true, time.Millisecond}},
			now:     time.Hour + time.Minute,
			want:    map[int]Sample{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHistory(hour0, Unknown)
			for _, r := range tt.results {
				h.observe(hour0.Add(r.at), r.ok, r.latency)
			}
			now := hour0.Add(tt.now)
			v := h.view(now)
			if len(v.Samples) != HistoryBuckets {
				t.Fatalf("%d samples, want %d", len(v.Samples), HistoryBuckets)
			}
			if want := now.Truncate(HistoryBucket).Add(-(HistoryBuckets - 1) * HistoryBucket); !v.Start.Equal(want) {
				t.Errorf("start %s, want %s", v.Start, want)
			}
			for i, s := range v.Samples {
				if got, want := s, tt.want[HistoryBuckets-1-i]; got != want {
					t.Errorf("sample %d from the newest = %+v, want %+v", HistoryBuckets-1-i, got, want)
				}
			}
		})
	}
}

// TestHistoryCountsSaturate checks that a bucket's counts stop at maxCount, each kind on its
// own, and that its mean latency stays the mean of the measured results it counted.
func TestHistoryCountsSaturate(t *testing.T) {
	type result struct {
		ok      bool
		latency time.Duration
		times   int
	}
	tests := []struct {
		name    string
		results []result
		want    Sample
	}{
		{
			name:    "failures with a latency: every count saturates, and the sum too",
			results: []result{{false, time.Hour, math.MaxUint16 + 10}},
			want:    Sample{Results: maxCount, Failures: maxCount, Latency: time.Duration(math.MaxUint32/maxCount) * time.Microsecond},
		},
		{
			name:    "measured passes past the count keep their mean",
			results: []result{{true, time.Millisecond, 300}, {true, time.Second, 10}},
			want:    Sample{Results: maxCount, Latency: time.Millisecond},
		},
		{
			name:    "results without a latency count apart from the measured ones",
			results: []result{{true, 2 * time.Millisecond, 300}, {true, 0, 300}, {false, 0, 3}},
			want:    Sample{Results: 2 * maxCount, Failures: 3, Latency: 2 * time.Millisecond},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHistory(hour0, Unknown)
			for _, r := range tt.results {
				for range r.times {
					h.observe(hour0, r.ok, r.latency)
				}
			}
			if s := h.view(hour0).Samples[HistoryBuckets-1]; s != tt.want {
				t.Fatalf("sample %+v, want %+v", s, tt.want)
			}
		})
	}
}

// TestHistoryOddCountsDropped checks that a history keeps the counts of failures and of results
// without a latency only while its hour holds some: a backend that passes every probe it makes
// keeps none, and one that failed keeps them for the hour after.
func TestHistoryOddCountsDropped(t *testing.T) {
	h := newHistory(hour0, Unknown)
	probe := func(at time.Duration, ok bool) {
		t.Helper()
		h.observe(hour0.Add(at), ok, time.Millisecond)
	}
	for at := time.Duration(0); at < 10*time.Minute; at += 10 * time.Second {
		probe(at, true)
	}
	if h.odd != nil {
		t.Fatal("odd counts kept for a backend that passed every probe")
	}
	probe(10*time.Minute, false)
	probe(10*time.Minute+40*time.Second, false)
	if h.odd == nil || h.oddBuckets != 2 {
		t.Fatalf("after failures in two buckets: odd counts %v in %d buckets", h.odd != nil, h.oddBuckets)
	}
	probe(time.Hour+10*time.Minute, true) // the first failure's bucket is an hour old
	if h.odd == nil || h.oddBuckets != 1 {
		t.Fatalf("an hour after the first failure: odd counts %v in %d buckets", h.odd != nil, h.oddBuckets)
	}
	if s := h.view(hour0.Add(time.Hour + 10*time.Minute)).Samples[0]; s != (Sample{Results: 1, Failures: 1, Latency: time.Millisecond}) {
		t.Fatalf("the second failure's bucket, the oldest: %+v", s)
	}
	probe(time.Hour+10*time.Minute+30*time.Second, true)
	if h.odd != nil || h.oddBuckets != 0 {
		t.Fatalf("an hour after the last failure: odd counts %v in %d buckets", h.odd != nil, h.oddBuckets)
	}
}

func TestHistoryTimeline(t *testing.T) {
	type step struct {
		at     time.Duration // after hour0
		to     Status
		reason string
	}
	tests := []struct {
		name       string
		changes    []step
		now        time.Duration
		wantFrom   time.Duration
		wantStatus Status
		wantTo     []Status
	}{
		{
			name:       "a young backend's timeline starts when it did",
			changes:    []step{{time.Minute, Up, "ok"}, {2 * time.Minute, Down, "refused"}},
			now:        3 * time.Minute,
			wantFrom:   0,
			wantStatus: Unknown,
			wantTo:     []Status{Up, Down},
		},
		{
			name:       "changes before the hour give the status at its start",
			changes:    []step{{time.Minute, Up, "ok"}, {2 * time.Minute, Down, "refused"}, {70 * time.Minute, Up, "ok"}},
			now:        90 * time.Minute,
			wantFrom:   90*time.Minute - time.Hour + HistoryBucket, // the start of the first bucket
			wantStatus: Down,
			wantTo:     []Status{Up},
		},
	}
	flapping := tests[0]
	flapping.name, flapping.changes, flapping.wantTo = "a flapping backend keeps its newest changes", nil, nil
	for i := range historyChanges + 3 {
		st := Status(Up)
		if i%2 == 1 {
			st = Down
		}
		flapping.changes = append(flapping.changes, step{time.Duration(i+1) * time.Second, st, "flap"})
		if i >= 3 {
			flapping.wantTo = append(flapping.wantTo, st)
		}
	}
	flapping.wantFrom, flapping.wantStatus = 3*time.Second, Up // the third change, the last one dropped, was to up
	tests = append(tests, flapping)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHistory(hour0, Unknown)
			for _, c := range tt.changes {
				h.change(hour0.Add(c.at), c.to, c.reason)
			}
			v := h.view(hour0.Add(tt.now))
			if !v.From.Equal(hour0.Add(tt.wantFrom)) || v.Status != tt.wantStatus {
				t.Errorf("timeline starts at %s %s, want %s %s", v.From.Sub(hour0), v.Status, tt.wantFrom, tt.wantStatus)
			}
			var got []Status
			for _, c := range v.Changes {
				got = append(got, c.To)
				if c.Time.Before(v.From) || c.Reason == "" {
					t.Errorf("change %+v is before the start %s or has no reason", c, v.From)
				}
			}
			if len(got) != len(tt.wantTo) {
				t.Fatalf("changes %v, want %v", got, tt.wantTo)
			}
			for i := range got {
				if got[i] != tt.wantTo[i] {
					t.Fatalf("changes %v, want %v", got, tt.wantTo)
				}
			}
		})
	}
}

// TestHistoryCountsAllocatedWithResults checks that a history allocates its counts with its
// first result, not before (the sizes are in TestPerBackendStructuresStaySmall).
func TestHistoryCountsAllocatedWithResults(t *testing.T) {
	h := newHistory(hour0, Unknown)
	if h.measured != nil || h.odd != nil {
		t.Error("a history without results holds counts")
	}
	h.observe(hour0, true, time.Millisecond)
	if h.measured == nil || h.odd != nil {
		t.Errorf("after a measured pass: measured counts %v, odd counts %v", h.measured != nil, h.odd != nil)
	}
}

// TestManagerHistory follows a backend's results and changes into History, across a change of
// its checks, and sees a removed backend's history dropped.
func TestManagerHistory(t *testing.T) {
	m := NewManager(Options{Log: testLog{}, History: true})
	a, b := spec("a", &scriptedProber{}, "check-a", time.Second), spec("b", &scriptedProber{}, "check-b", time.Second)
	m.Sync([]Spec{a, b}, keys(a, b))
	observe(m, "a", true)
	observe(m, "a", false)
	h, ok := m.History(time.Now())["a"]
	if !ok || h.Record != "www.example.org." || h.Backend != "a" {
		t.Fatalf("history of a: %+v, %v", h, ok)
	}
	if s := h.Samples[HistoryBuckets-1]; s.Results != 2 || s.Failures != 1 {
		// The two results may straddle a bucket boundary.
		if prev := h.Samples[HistoryBuckets-2]; prev.Results+s.Results != 2 || prev.Failures+s.Failures != 1 {
			t.Errorf("the last samples %+v %+v, want 2 results and 1 failure", prev, s)
		}
	}
	if h.Status != Unknown || len(h.Changes) != 2 || h.Changes[0].To != Up || h.Changes[1].To != Down || h.Changes[1].Reason != "probe failed" {
		t.Errorf("timeline %s then %+v, want unknown, up, down", h.Status, h.Changes)
	}

	// New checks: the backend starts over as unknown, and its hour goes on.
	a2 := spec("a", &scriptedProber{}, "check-a2", time.Second)
	m.Sync([]Spec{a2}, keys(a2))
	hs := m.History(time.Now())
	if _, ok := hs["b"]; ok {
		t.Errorf("b was removed, its history is still there")
	}
	h = hs["a"]
	if n := len(h.Changes); n != 3 || h.Changes[2].To != Unknown || h.Changes[2].Reason != checksChanged {
		t.Errorf("after new checks: %+v, want a change to unknown", h.Changes)
	}
}

// TestManagerHistoryLimit: at most Options.MaxHistories backends keep a history, the first
// ones of the specs; one that stays among them keeps its hour, one that falls out loses it.
func TestManagerHistoryLimit(t *testing.T) {
	m := NewManager(Options{Log: testLog{}, History: true, MaxHistories: 2})
	specs := map[string]Spec{}
	for _, name := range []string{"a", "b", "c", "d"} {
		specs[name] = spec(name, &scriptedProber{}, "check-"+name, time.Second)
	}
	sync := func(names ...string) {
		var list []Spec
		for _, n := range names {
			list = append(list, specs[n])
		}
		m.Sync(list, keys(list...))
	}
	kept := func() []string {
		var out []string
		for key := range m.History(time.Now()) {
			out = append(out, key)
		}
		slices.Sort(out)
		return out
	}
	steps := []struct {
		sync []string
		want []string
	}{
		{sync: []string{"a", "b", "c"}, want: []string{"a", "b"}},
		{sync: []string{"c", "a"}, want: []string{"a", "c"}},
		{sync: []string{"d", "c", "a"}, want: []string{"c", "d"}},
	}
	for i, step := range steps {
		sync(step.sync...)
		if i == 0 {
			observe(m, "a", true) // a's hour must go on while it keeps its place
		}
		if got := kept(); !slices.Equal(got, step.want) {
			t.Fatalf("after Sync(%v): histories of %v, want %v", step.sync, got, step.want)
		}
		if i == 1 {
			if h := m.History(time.Now())["a"]; len(h.Changes) != 1 || h.Changes[0].To != Up {
				t.Errorf("a's timeline after a second Sync: %+v, want its change to up", h.Changes)
			}
		}
	}
}

// TestManagerWithoutHistory: without Options.History, no backend keeps one, and results and
// changes go nowhere.
func TestManagerWithoutHistory(t *testing.T) {
	m := NewManager(Options{Log: testLog{}})
	a := spec("a", &scriptedProber{}, "check-a", time.Second)
	m.Sync([]Spec{a}, keys(a))
	observe(m, "a", false)
	if h := m.History(time.Now()); len(h) != 0 {
		t.Fatalf("history kept without Options.History: %v", h)
	}
	for _, b := range m.backends {
		if b.history() != nil {
			t.Fatalf("backend %s has a history", b.key())
		}
	}
}
