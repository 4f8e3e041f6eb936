package policy

import (
	"hash/fnv"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
)

func addrs(ss ...string) []Candidate {
	out := make([]Candidate, len(ss))
	for i, s := range ss {
		out[i] = Candidate{Addr: netip.MustParseAddr(s)}
	}
	return out
}

// picked maps the set indexes chosen by Pick back to the addresses given to Prepare.
func picked(s *Set, cands []Candidate, client netip.Addr) []string {
	var out []string
	for _, i := range s.Pick(client, nil) {
		c := cands[s.Order[i]]
		if c.Addr.IsValid() {
			out = append(out, c.Addr.String())
		} else {
			out = append(out, c.Host)
		}
	}
	return out
}

func TestFailoverReturnsBestPriorityGroup(t *testing.T) {
	tests := []struct {
		name  string
		cands []Candidate
		want  []string
	}{
		{"empty", nil, nil},
		{"lowest priority wins", []Candidate{
			{Priority: 2, Addr: netip.MustParseAddr("10.0.0.2")},
			{Priority: 1, Addr: netip.MustParseAddr("10.0.0.1")},
		}, []string{"10.0.0.1"}},
		{"ties all returned in config order", []Candidate{
			{Priority: 1, Addr: netip.MustParseAddr("10.0.0.3")},
			{Priority: 2, Addr: netip.MustParseAddr("10.0.0.9")},
			{Priority: 1, Addr: netip.MustParseAddr("10.0.0.1")},
		}, []string{"10.0.0.3", "10.0.0.1"}},
		{"host names take part", []Candidate{
			{Priority: 5, Addr: netip.MustParseAddr("10.0.0.3")},
			{Priority: 0, Host: "backup.example.net."},
		}, []string{"backup.example.net."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Prepare(config.ModeFailover, tt.cands, Options{}, nil)
			if got := picked(s, tt.cands, netip.Addr{}); !slices.Equal(got, tt.want) {
				t.Fatalf("picked %v, want %v", got, tt.want)
			}
		})
	}
}

// TestFailoverSetsInConfigOrderAreShared gives the failover records whose few candidates are
// already in priority order one set per shape, and the others sets of their own that answer
// the same as before.
func TestFailoverSetsInConfigOrderAreShared(t *testing.T) {
	prio := func(ps ...int) []Candidate {
		out := make([]Candidate, len(ps))
		for i, p := range ps {
			out[i] = Candidate{Priority: p, Addr: netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)})}
		}
		return out
	}
	tests := []struct {
		name   string
		cands  []Candidate
		opts   Options
		shared bool
		want   []string
	}{
		{"two in order", prio(1, 2), Options{}, true, []string{"10.0.0.1"}},
		{"a tie first", prio(1, 1, 2), Options{}, true, []string{"10.0.0.1", "10.0.0.2"}},
		{"min_healthy skips a group", prio(1, 2, 2), Options{MinHealthy: 2}, true, []string{"10.0.0.2", "10.0.0.3"}},
		{"out of order", prio(2, 1), Options{}, false, []string{"10.0.0.2"}},
		{"more than four", prio(1, 2, 3, 4, 5), Options{}, false, []string{"10.0.0.1"}},
	}
	for _, tt := range tests {
		a := Prepare(config.ModeFailover, tt.cands, tt.opts, nil)
		b := Prepare(config.ModeFailover, slices.Clone(tt.cands), tt.opts, nil)
		if got := a == b; got != tt.shared {
			t.Errorf("%s: shared %v, want %v", tt.name, got, tt.shared)
		}
		if got := picked(a, tt.cands, netip.Addr{}); !slices.Equal(got, tt.want) {
			t.Errorf("%s: picked %v, want %v", tt.name, got, tt.want)
		}
	}
	if Prepare(config.ModeGeoIP, prio(1, 2), Options{}, nil) == Prepare(config.ModeFailover, prio(1, 2), Options{}, nil) {
		t.Error("a geo mode's fallback set is failover's shared set")
	}
}

func TestRoundRobinRotatesAndSurvivesHealthChanges(t *testing.T) {
	var counter atomic.Uint64
	three := addrs("10.0.0.1", "10.0.0.2", "10.0.0.3")
	s := Prepare(config.ModeRoundRobin, three, Options{}, &counter)
	var got []string
	for range 6 {
		got = append(got, picked(s, three, netip.Addr{})...)
	}
	want := []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.1", "10.0.0.2", "10.0.0.3"}
	if !slices.Equal(got, want) {
		t.Fatalf("rotation %v, want %v", got, want)
	}
	// A backend goes down: the shared counter keeps turning, every remaining backend is served.
	two := addrs("10.0.0.1", "10.0.0.3")
	s = Prepare(config.ModeRoundRobin, two, Options{}, &counter)
	seen := map[string]int{}
	for range 10 {
		seen[picked(s, two, netip.Addr{})[0]]++
	}
	if seen["10.0.0.1"] != 5 || seen["10.0.0.3"] != 5 {
		t.Fatalf("after a health change the rotation is uneven: %v", seen)
	}
}

func TestRandomReturnsEveryCandidateShuffled(t *testing.T) {
	cands := addrs("10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4")
	s := Prepare(config.ModeRandom, cands, Options{}, nil)
	firsts := map[string]bool{}
	for range 200 {
		got := picked(s, cands, netip.Addr{})
		sorted := slices.Clone(got)
		slices.Sort(sorted)
		if !slices.Equal(sorted, []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"}) {
			t.Fatalf("random returned %v, want a permutation of all four", got)
		}
		firsts[got[0]] = true
	}
	if len(firsts) != 4 {
		t.Fatalf("in 200 answers only %v came first; the order is not shuffled", firsts)
	}
}

// TestWeightedFollowsWeights draws weighted answers and compares each backend's share with
// its weight's: a weight of 0 or less counts as 1 (CoreDNS-GSLB's rule), or, with
// ZeroWeightIdle (k8gb's), gets nothing while a backend has a positive weight, and an equal
// share when none has.
func TestWeightedFollowsWeights(t *testing.T) {
	tests := []struct {
		name    string
		weights []int
		idle    bool
		want    []float64
	}{
		{"zero counts as one", []int{8, 2, 0, -5}, false, []float64{8.0 / 12, 2.0 / 12, 1.0 / 12, 1.0 / 12}},
		{"zero idles", []int{8, 2, 0, -5}, true, []float64{0.8, 0.2, 0, 0}},
		{"zero first idles", []int{0, 100}, true, []float64{0, 1}},
		{"all zero share alike", []int{0, 0}, true, []float64{0.5, 0.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cands []Candidate
			for i, w := range tt.weights {
				cands = append(cands, Candidate{Weight: w, Addr: netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)})})
			}
			s := Prepare(config.ModeWeighted, cands, Options{ZeroWeightIdle: tt.idle}, nil)
			const n = 60000
			counts := map[string]int{}
			for range n {
				got := picked(s, cands, netip.Addr{})
				if len(got) != 1 {
					t.Fatalf("weighted returned %d backends, want 1", len(got))
				}
				counts[got[0]]++
			}
			for i, share := range tt.want {
				a := cands[i].Addr.String()
				got := float64(counts[a]) / n
				if got < share-0.02 || got > share+0.02 || share == 0 && counts[a] > 0 {
					t.Errorf("%s (weight %d) got %.3f of the answers, want %.3f ± 0.02", a, tt.weights[i], got, share)
				}
			}
		})
	}
}

func TestIPHashIsStableAndIndependentOfConfigOrder(t *testing.T) {
	a := addrs("10.0.0.3", "10.0.0.1", "2001:db8::1", "10.0.0.2")
	b := addrs("10.0.0.2", "2001:db8::1", "10.0.0.1", "10.0.0.3")
	sa := Prepare(config.ModeIPHash, a, Options{}, nil)
	sb := Prepare(config.ModeIPHash, b, Options{}, nil)
	spread := map[string]bool{}
	for i := range 64 {
		client := netip.AddrFrom4([4]byte{192, 0, 2, byte(i)})
		ga, gb := picked(sa, a, client), picked(sb, b, client)
		if !slices.Equal(ga, gb) || len(ga) != 1 {
			t.Fatalf("client %s: %v with one order, %v with another", client, ga, gb)
		}
		if again := picked(sa, a, client); !slices.Equal(again, ga) {
			t.Fatalf("client %s moved from %v to %v", client, ga, again)
		}
		spread[ga[0]] = true
	}
	if len(spread) < 3 {
		t.Fatalf("64 clients landed on only %v", spread)
	}
}

func TestHashAddrIsFNV1aOfTheTextForm(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "2001:db8::1"} {
		h := fnv.New32a()
		h.Write([]byte(a))
		if got, want := HashAddr(netip.MustParseAddr(a)), h.Sum32(); got != want {
			t.Errorf("HashAddr(%s) = %#x, want %#x", a, got, want)
		}
	}
}

func BenchmarkPick(b *testing.B) {
	cands := []Candidate{
		{Priority: 1, Weight: 3, Addr: netip.MustParseAddr("10.0.0.1")},
		{Priority: 1, Weight: 1, Addr: netip.MustParseAddr("10.0.0.2")},
		{Priority: 2, Weight: 1, Addr: netip.MustParseAddr("10.0.0.3")},
	}
	client := netip.MustParseAddr("192.0.2.7")
	for _, mode := range config.Modes {
		var counter atomic.Uint64
		s := Prepare(mode, cands, Options{HashPrefix: hashPrefix}, &counter)
		b.Run(string(mode), func(b *testing.B) {
			var buf [8]int
			b.ReportAllocs()
			for b.Loop() {
				_ = s.Pick(client, buf[:0])
			}
		})
	}
}

// BenchmarkRendezvousPick is consistent-hash's core over eight prepared candidates, as the
// chain's hash step calls it.
func BenchmarkRendezvousPick(b *testing.B) {
	cands := weighted(1, 2, 3, 4, 5, 6, 7, 8)
	idx := []int{0, 1, 2, 3, 4, 5, 6, 7}
	r := PrepareRendezvous(cands, hashPrefix)
	for _, c := range []string{"192.0.2.7", "2001:db8::7"} {
		client := netip.MustParseAddr(c)
		b.Run(c, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = r.Pick(idx, client)
			}
		})
	}
}
