package policy_test

import (
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/policy"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// chainCands are five candidates: two of priority 1 (a fast loaded one and a slower idle
// one), two of priority 2, and one without measures.
var chainCands = []policy.Candidate{
	{Priority: 1, Weight: 1, RTT: 10 * time.Millisecond, Load: 0.9, Addr: netip.MustParseAddr("192.0.2.1")},
	{Priority: 1, Weight: 3, RTT: 11 * time.Millisecond, Load: 0.2, Addr: netip.MustParseAddr("192.0.2.2")},
	{Priority: 2, Weight: 1, RTT: 40 * time.Millisecond, Load: 0.1, Addr: netip.MustParseAddr("192.0.2.3")},
	{Priority: 2, Weight: 1, RTT: 5 * time.Millisecond, Load: 1.5, Addr: netip.MustParseAddr("192.0.2.4")},
	{Priority: 3, Weight: 1, RTT: 0, Load: -1, Addr: netip.MustParseAddr("192.0.2.5")},
}

// pickChain prepares opts over cands and picks once for a client with no location.
func pickChain(opts policy.ChainOptions, cands []policy.Candidate) []int {
	if opts.RTTTolerance == (config.Tolerance{}) {
		opts.RTTTolerance = config.DefaultRTTTolerance
	}
	if opts.MaxLoad == 0 {
		opts.MaxLoad = config.DefaultMaxLoad
	}
	c := policy.PrepareChain(opts, cands, make([]policy.GeoCandidate, len(cands)), new(atomic.Uint64))
	var loc geo.Location
	got, _ := c.Pick(netip.MustParseAddr("198.51.100.7"), nil, &loc, nil)
	return got
}

// TestChainSteps checks each narrowing step on its own and in chains: ties, one candidate,
// empty sets, unmeasured candidates, load shedding and its spillover, and max_answers.
func TestChainSteps(t *testing.T) {
	steps := func(s ...config.ChainStep) []config.ChainStep { return s }
	tests := []struct {
		name  string
		opts  policy.ChainOptions
		cands []policy.Candidate
		want  []int // sorted
	}{
		{"empty", policy.ChainOptions{Steps: steps(config.StepPriority)}, nil, nil},
		{"one candidate", policy.ChainOptions{Steps: steps(config.StepRTT, config.StepLoad)}, chainCands[4:], []int{0}},
		{"priority: best group, ties kept", policy.ChainOptions{Steps: steps(config.StepPriority)}, chainCands, []int{0, 1}},
		{"rtt: fastest within 20%", policy.ChainOptions{Steps: steps(config.StepRTT)}, chainCands, []int{3}},
		{"rtt after priority: 11ms is within 20% of 10ms", policy.ChainOptions{Steps: steps(config.StepPriority, config.StepRTT)}, chainCands, []int{0, 1}},
		{"rtt: a tight tolerance", policy.ChainOptions{Steps: steps(config.StepPriority, config.StepRTT), RTTTolerance: config.Tolerance{Duration: time.Nanosecond}}, chainCands, []int{0}},
		{"rtt: a tolerance of 40ms", policy.ChainOptions{Steps: steps(config.StepRTT), RTTTolerance: config.Tolerance{Duration: 40 * time.Millisecond}}, chainCands, []int{0, 1, 2, 3}},
		{"rtt: none measured keeps all", policy.ChainOptions{Steps: steps(config.StepRTT)}, []policy.Candidate{{}, {}}, []int{0, 1}},
		{"load: least loaded, the one over capacity shed", policy.ChainOptions{Steps: steps(config.StepLoad)}, chainCands, []int{2}},
		{"load after priority", policy.ChainOptions{Steps: steps(config.StepPriority, config.StepLoad)}, chainCands, []int{1}},
		{"load: ties within five points", policy.ChainOptions{Steps: steps(config.StepLoad)}, []policy.Candidate{{Load: 0.30}, {Load: 0.34}, {Load: 0.5}}, []int{0, 1}},
		{"load: all over max_load, the least loaded still answers", policy.ChainOptions{Steps: steps(config.StepLoad), MaxLoad: 0.5}, []policy.Candidate{{Load: 0.9}, {Load: 0.7}}, []int{1}},
		{"load: unknown kept only when none is known", policy.ChainOptions{Steps: steps(config.StepLoad)}, []policy.Candidate{{Load: -1}, {Load: -1}}, []int{0, 1}},
		{"load: the next step sees what load kept", policy.ChainOptions{Steps: steps(config.StepLoad, config.StepRTT)}, []policy.Candidate{{Load: 0.1, RTT: 30 * time.Millisecond}, {Load: 0.12, RTT: 10 * time.Millisecond}, {Load: 0.9, RTT: time.Millisecond}}, []int{1}},
		{"no selection step: every candidate left", policy.ChainOptions{Steps: steps(config.StepPriority)}, chainCands[2:4], []int{0, 1}},
		{"max_answers caps", policy.ChainOptions{Steps: steps(config.StepRTT), RTTTolerance: config.Tolerance{Fraction: 10}, MaxAnswers: 2}, chainCands, []int{0, 1}}, // the first two left, in their order
	}
	for _, tt := range tests {
		got := pickChain(tt.opts, tt.cands)
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: picked %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestChainSelection checks the selection steps: weighted draws in proportion to weight,
// roundrobin rotates one turn per query, random answers every candidate, and each puts its
// pick first, the chain answering max_answers of them.
func TestChainSelection(t *testing.T) {
	cands := []policy.Candidate{{Weight: 1}, {Weight: 3}, {Weight: 0}}
	counts := map[int]int{}
	c := policy.PrepareChain(policy.ChainOptions{Steps: []config.ChainStep{config.StepWeighted}, MaxAnswers: 1}, cands, make([]policy.GeoCandidate, 3), new(atomic.Uint64))
	var loc geo.Location
	const n = 20000
	for range n {
		got, _ := c.Pick(netip.Addr{}, nil, &loc, nil)
		if len(got) != 1 {
			t.Fatalf("weighted with max_answers 1 answered %v", got)
		}
		counts[got[0]]++
	}
	if counts[2] != 0 || counts[1] < n*7/10 || counts[1] > n*8/10 {
		t.Errorf("weighted 1:3:0 drew %v of %d", counts, n)
	}
	rr := policy.PrepareChain(policy.ChainOptions{Steps: []config.ChainStep{config.StepRoundRobin}}, cands, make([]policy.GeoCandidate, 3), new(atomic.Uint64))
	var firsts []int
	for range 4 {
		got, _ := rr.Pick(netip.Addr{}, nil, &loc, nil)
		if len(got) != 3 {
			t.Fatalf("roundrobin without max_answers answered %v, want all three", got)
		}
		firsts = append(firsts, got[0])
	}
	if !slices.Equal(firsts, []int{0, 1, 2, 0}) {
		t.Errorf("roundrobin's first answers %v, want 0 1 2 0", firsts)
	}
	random := policy.PrepareChain(policy.ChainOptions{Steps: []config.ChainStep{config.StepRandom}}, cands, make([]policy.GeoCandidate, 3), new(atomic.Uint64))
	got, _ := random.Pick(netip.Addr{}, nil, &loc, nil)
	slices.Sort(got)
	if !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("random answered %v, want every candidate", got)
	}
}

// TestChainGeo checks the geo step: it keeps the candidates nearest the client by the
// location map, the next step choosing among them, and keeps all when none matches.
func TestChainGeo(t *testing.T) {
	cands := []policy.Candidate{{RTT: 30 * time.Millisecond}, {RTT: 20 * time.Millisecond}, {RTT: time.Millisecond}}
	geoCands := []policy.GeoCandidate{{Healthy: true, Location: "eu-west"}, {Healthy: true, Location: "eu-west"}, {Healthy: true, Location: "us-east"}}
	c := policy.PrepareChain(policy.ChainOptions{Steps: []config.ChainStep{config.StepGeo, config.StepRTT}, RTTTolerance: config.DefaultRTTTolerance}, cands, geoCands, new(atomic.Uint64))
	if !c.NeedsLocation() {
		t.Fatal("a chain with a geo step does not need the client's location")
	}
	src := testutil.World(t, "map")
	for _, tt := range []struct {
		client string
		want   []int
		scope  int
	}{
		{"10.0.0.7", []int{1}, 24},   // eu-west, then the faster of its two
		{"203.0.113.9", []int{2}, 5}, // no location: every candidate, then the fastest; scoped to the map's empty /5
	} {
		client := netip.MustParseAddr(tt.client)
		got, scope := c.Pick(client, src, testutil.Lookup(src, tt.client), nil)
		if !slices.Equal(got, tt.want) || scope != tt.scope {
			t.Errorf("client %s: picked %v (scope %d), want %v (scope %d)", tt.client, got, scope, tt.want, tt.scope)
		}
	}
}

// TestChainExplain lists every step with what it kept, the prepared ones marked.
func TestChainExplain(t *testing.T) {
	c := policy.PrepareChain(policy.ChainOptions{Steps: []config.ChainStep{config.StepPriority, config.StepLoad, config.StepRTT, config.StepWeighted}, RTTTolerance: config.DefaultRTTTolerance, MaxLoad: 1}, chainCands, make([]policy.GeoCandidate, len(chainCands)), new(atomic.Uint64))
	var loc geo.Location
	tr := c.Explain(netip.Addr{}, nil, &loc)
	var got []string
	for _, s := range tr {
		got = append(got, string(s.Step))
	}
	if !slices.Equal(got, []string{"health", "priority", "load", "rtt", "weighted"}) {
		t.Fatalf("steps %v", got)
	}
	if !slices.Equal(tr[1].Kept, []int{0, 1}) || !tr[1].Prepared || !slices.Equal(tr[2].Kept, []int{1}) || tr[3].Note != "not run: one candidate left" {
		t.Errorf("explanation %+v", tr)
	}
}

// BenchmarkChainPick measures a chain's per-query work: it must not allocate.
func BenchmarkChainPick(b *testing.B) {
	for _, bc := range []struct {
		name  string
		steps []config.ChainStep
	}{
		{"prepared+weighted", []config.ChainStep{config.StepPriority, config.StepRTT, config.StepWeighted}},
		{"load+roundrobin", []config.ChainStep{config.StepLoad, config.StepRoundRobin}},
		{"random", []config.ChainStep{config.StepRandom}},
		{"geo+priority+weighted", []config.ChainStep{config.StepGeo, config.StepPriority, config.StepWeighted}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := policy.PrepareChain(policy.ChainOptions{Steps: bc.steps, RTTTolerance: config.Tolerance{Fraction: 10}, MaxLoad: 2, MaxAnswers: 2}, chainCands, make([]policy.GeoCandidate, len(chainCands)), new(atomic.Uint64))
			var loc geo.Location
			var buf [16]int
			client := netip.MustParseAddr("198.51.100.7")
			b.ReportAllocs()
			for b.Loop() {
				if got, _ := c.Pick(client, nil, &loc, buf[:0]); len(got) == 0 {
					b.Fatal("no pick")
				}
			}
		})
	}
}

// TestChainHash: the hash step answers what consistent-hash answers for the same candidates,
// and its scope is the hash prefix.
func TestChainHash(t *testing.T) {
	cands := chainCands[:4]
	prefix := config.HashPrefix{V4: 24, V6: 56}
	set := policy.Prepare(config.ModeConsistentHash, cands, policy.Options{HashPrefix: prefix}, nil)
	ch := policy.PrepareChain(policy.ChainOptions{Steps: []config.ChainStep{config.StepHash}, MaxAnswers: 1, HashPrefix: prefix}, cands, make([]policy.GeoCandidate, len(cands)), new(atomic.Uint64))
	var loc geo.Location
	for i := range 200 {
		client := netip.AddrFrom4([4]byte{198, 51, byte(i), 7})
		want := set.Order[set.Pick(client, nil)[0]]
		got, scope := ch.Pick(client, nil, &loc, nil)
		if len(got) != 1 || got[0] != want || scope != 24 {
			t.Fatalf("client %s: chain hash picked %v scope %d, consistent-hash %d", client, got, scope, want)
		}
	}
}

// TestChainVantages: with RTTs measured from vantage sites (quorum mode), the rtt step steers
// a client whose location is a site by that site's RTTs, and the others by this instance's;
// the step then runs per query, and its scope is the location map's network.
func TestChainVantages(t *testing.T) {
	ms := time.Millisecond
	cands := []policy.Candidate{
		{RTT: 10 * ms, Vantages: map[string]time.Duration{"eu-west": 50 * ms, "us-east": 5 * ms}},
		{RTT: 20 * ms, Vantages: map[string]time.Duration{"eu-west": 5 * ms}},
	}
	c := policy.PrepareChain(policy.ChainOptions{Steps: []config.ChainStep{config.StepRTT}, RTTTolerance: config.DefaultRTTTolerance}, cands, make([]policy.GeoCandidate, 2), new(atomic.Uint64))
	if !c.NeedsLocation() {
		t.Fatal("a chain with RTTs by vantage does not look the client up")
	}
	src := testutil.World(t, "map")
	for _, tt := range []struct {
		client string
		want   []int
		scope  int
	}{
		{"10.0.0.7", []int{1}, 24},    // eu-west: eu-west's RTTs
		{"192.168.1.9", []int{0}, 24}, // us-east: us-east's, and its own for the one us-east did not measure
		{"203.0.113.9", []int{0}, 5},  // no vantage: this instance's (the map has nothing in its /5)
	} {
		client, loc := netip.MustParseAddr(tt.client), testutil.Lookup(src, tt.client)
		got, scope := c.Pick(client, src, loc, nil)
		if !slices.Equal(got, tt.want) || scope != tt.scope {
			t.Errorf("client %s: picked %v scope %d, want %v scope %d", tt.client, got, scope, tt.want, tt.scope)
		}
		var buf [4]int
		if n := testing.AllocsPerRun(100, func() { c.Pick(client, src, loc, buf[:0]) }); n != 0 {
			t.Errorf("client %s: %v allocations", tt.client, n)
		}
	}
}

// TestChainMinHealthy: the priority step skips a group with fewer candidates than min_healthy,
// and keeps the best group when none has that many.
func TestChainMinHealthy(t *testing.T) {
	cands := []policy.Candidate{{Priority: 1}, {Priority: 2}, {Priority: 2}, {Priority: 3}, {Priority: 3}, {Priority: 3}}
	for _, tt := range []struct {
		minHealthy int
		want       []int
	}{{0, []int{0}}, {1, []int{0}}, {2, []int{1, 2}}, {3, []int{3, 4, 5}}, {4, []int{0}}} {
		got := pickChain(policy.ChainOptions{Steps: []config.ChainStep{config.StepPriority}, MinHealthy: tt.minHealthy}, cands)
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("min_healthy %d: %v, want %v", tt.minHealthy, got, tt.want)
		}
	}
}

// TestChainStepsAllocateNothing runs every step per query (after a geo step, which keeps every
// candidate here, the steps that would otherwise run ahead), with the destination, the client
// and its location on the stack, as the query path has them: no step allocates, nor makes
// them escape to the heap (a step missing from runStep's cases would).
func TestChainStepsAllocateNothing(t *testing.T) {
	src := testutil.World(t, "city country asn map")
	ms := time.Millisecond
	vantages := map[string]time.Duration{"eu-west": 5 * ms}
	cands := []policy.Candidate{
		{Priority: 1, Weight: 1, RTT: 10 * ms, Load: 0.5, Addr: netip.MustParseAddr("192.0.2.1"), Vantages: vantages},
		{Priority: 1, Weight: 2, RTT: 11 * ms, Load: 0.2, Addr: netip.MustParseAddr("192.0.2.2")},
		{Priority: 2, Weight: 3, RTT: 12 * ms, Load: 0.1, Addr: netip.MustParseAddr("192.0.2.3")},
		{Priority: 2, Weight: 4, RTT: 13 * ms, Load: 0.3, Addr: netip.MustParseAddr("192.0.2.4")},
	}
	geoCands := make([]policy.GeoCandidate, len(cands))
	for i := range geoCands {
		geoCands[i].Healthy = true
	}
	for _, s := range config.ChainSteps {
		steps := []config.ChainStep{config.StepGeo, s}
		if s.Selects() || s == config.StepGeo {
			steps = steps[1:]
		}
		for _, client := range testutil.WorldClients {
			opts := policy.ChainOptions{Steps: steps, RTTTolerance: config.Tolerance{Fraction: 10}, MaxLoad: 1, MinHealthy: 2,
				HashPrefix: config.HashPrefix{V4: 24, V6: 56}}
			c := policy.PrepareChain(opts, cands, geoCands, new(atomic.Uint64))
			addr := netip.MustParseAddr(client)
			n := testing.AllocsPerRun(20, func() {
				// The client and its location held together, as the query path holds them.
				var loc geo.Location
				q := struct {
					addr netip.Addr
					loc  *geo.Location
				}{addr, &loc}
				src.Lookup(addr, q.loc)
				var buf [8]int
				if got, _ := c.Pick(q.addr, src, q.loc, buf[:0]); len(got) == 0 {
					t.Fatalf("%v: no pick", steps)
				}
			})
			if n != 0 {
				t.Errorf("%v for %s: %v allocations a query", steps, client, n)
			}
		}
	}
}

// TestChainDecider checks which step the answer log names as the chain's decider: the last
// that narrowed, or the one that ordered what was left, and that naming it turns no rotation.
func TestChainDecider(t *testing.T) {
	steps := func(s ...config.ChainStep) []config.ChainStep { return s }
	tests := []struct {
		name  string
		steps []config.ChainStep
		cands []policy.Candidate
		want  config.ChainStep
	}{
		{"nothing narrows: health", steps(config.StepPriority), chainCands[:2], config.StepHealth},
		{"priority narrows", steps(config.StepPriority), chainCands[2:], config.StepPriority},
		{"rtt narrows after priority", steps(config.StepPriority, config.StepRTT), chainCands[2:], config.StepRTT},
		{"rtt after priority narrows to one", steps(config.StepPriority, config.StepLoad), chainCands, config.StepLoad},
		{"an ordering step decides among what is left", steps(config.StepPriority, config.StepRoundRobin), chainCands, config.StepRoundRobin},
		{"an ordering step with one left does not run", steps(config.StepLoad, config.StepWeighted), chainCands, config.StepLoad},
		{"a narrowing step after an ordering one", steps(config.StepRandom, config.StepLoad), chainCands, config.StepLoad},
		{"one candidate: health", steps(config.StepPriority, config.StepRandom), chainCands[4:], config.StepHealth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			counter := new(atomic.Uint64)
			opts := policy.ChainOptions{Steps: tt.steps, RTTTolerance: config.DefaultRTTTolerance, MaxLoad: config.DefaultMaxLoad}
			c := policy.PrepareChain(opts, tt.cands, make([]policy.GeoCandidate, len(tt.cands)), counter)
			if got := c.Decider(netip.MustParseAddr("198.51.100.7"), nil, nil); got != tt.want {
				t.Errorf("Decider = %s, want %s", got, tt.want)
			}
			if counter.Load() != 0 {
				t.Errorf("Decider turned the rotation %d times", counter.Load())
			}
		})
	}
}
