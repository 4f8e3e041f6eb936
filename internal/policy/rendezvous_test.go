package policy

import (
	"math"
	"net/netip"
	"slices"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
)

var hashPrefix = config.HashPrefix{V4: 24, V6: 56}

// hashed prepares a consistent-hash set over cands with the default prefixes.
func hashed(cands []Candidate) *Set {
	return Prepare(config.ModeConsistentHash, cands, Options{HashPrefix: hashPrefix}, nil)
}

// subnets returns n IPv4 clients, one in each of n distinct /24 networks.
func subnets(n int) []netip.Addr {
	out := make([]netip.Addr, n)
	for i := range out {
		out[i] = netip.AddrFrom4([4]byte{byte(10 + i>>16), byte(i >> 8), byte(i), byte(i*7 + 1)})
	}
	return out
}

// owner returns the address (or host) of the candidate s picks for client.
func owner(t *testing.T, s *Set, cands []Candidate, client netip.Addr) string {
	t.Helper()
	got := picked(s, cands, client)
	if len(got) != 1 {
		t.Fatalf("Pick for %s = %v, want one answer", client, got)
	}
	return got[0]
}

func weighted(ws ...int) []Candidate {
	out := make([]Candidate, len(ws))
	for i, w := range ws {
		out[i] = Candidate{Weight: w, Addr: netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)})}
	}
	return out
}

func TestConsistentHashRules(t *testing.T) {
	clients := subnets(2000)
	tests := []struct {
		name  string
		cands []Candidate
		// check inspects the answers, by address, over clients.
		check func(t *testing.T, counts map[string]int)
	}{
		{"one candidate answers every client", weighted(3), func(t *testing.T, counts map[string]int) {
			if counts["192.0.2.1"] != len(clients) {
				t.Errorf("counts %v", counts)
			}
		}},
		{"weight 0 is never chosen while another weight is positive", weighted(0, 1, -4, 2), func(t *testing.T, counts map[string]int) {
			if counts["192.0.2.1"] != 0 || counts["192.0.2.3"] != 0 || counts["192.0.2.2"] == 0 || counts["192.0.2.4"] == 0 {
				t.Errorf("counts %v", counts)
			}
		}},
		{"all weights 0 count as equal", weighted(0, 0, -1), func(t *testing.T, counts map[string]int) {
			for _, a := range []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"} {
				if c := counts[a]; c < len(clients)/3*8/10 {
					t.Errorf("%s has %d of %d clients, want about a third: %v", a, c, len(clients), counts)
				}
			}
		}},
		{"share divides the weight", []Candidate{
			{Weight: 2, Share: 2, Addr: netip.MustParseAddr("192.0.2.1")},
			{Weight: 2, Share: 2, Addr: netip.MustParseAddr("192.0.2.2")},
			{Weight: 2, Addr: netip.MustParseAddr("192.0.2.3")},
		}, func(t *testing.T, counts map[string]int) {
			if c := counts["192.0.2.3"]; math.Abs(float64(c)/float64(len(clients))-0.5) > 0.05 {
				t.Errorf("the unshared backend has %d of %d clients, want half: %v", c, len(clients), counts)
			}
		}},
		{"host names take part by name", []Candidate{
			{Weight: 1, Host: "a.example.net."},
			{Weight: 1, Host: "b.example.net."},
		}, func(t *testing.T, counts map[string]int) {
			if counts["a.example.net."] == 0 || counts["b.example.net."] == 0 {
				t.Errorf("counts %v", counts)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := hashed(tt.cands)
			counts := map[string]int{}
			for _, c := range clients {
				counts[owner(t, s, tt.cands, c)]++
			}
			tt.check(t, counts)
		})
	}
}

func TestConsistentHashEmptySetAppendsNothing(t *testing.T) {
	s := hashed(nil)
	if got := s.Pick(netip.MustParseAddr("192.0.2.1"), []int{7}); !slices.Equal(got, []int{7}) {
		t.Errorf("Pick = %v, want [7]", got)
	}
	if got := PrepareRendezvous(nil, hashPrefix).Pick(nil, netip.MustParseAddr("192.0.2.1")); got != -1 {
		t.Errorf("Rendezvous.Pick over nothing = %d, want -1", got)
	}
}

func TestConsistentHashTiesGoToTheFirst(t *testing.T) {
	// The same address twice has the same score for every client.
	cands := []Candidate{
		{Weight: 1, Addr: netip.MustParseAddr("192.0.2.1")},
		{Weight: 1, Addr: netip.MustParseAddr("192.0.2.1")},
	}
	for _, c := range subnets(100) {
		if got := PrepareRendezvous(cands, hashPrefix).Pick([]int{1, 0}, c); got != 0 {
			t.Fatalf("Rendezvous.Pick for %s = %d, want 0 (the first in idx)", c, got)
		}
		if got := hashed(cands).Pick(c, nil); !slices.Equal(got, []int{0}) {
			t.Fatalf("Pick for %s = %v, want [0]", c, got)
		}
	}
}

func TestConsistentHashKeysOnTheSubnet(t *testing.T) {
	cands := weighted(1, 1, 1, 1, 1, 1, 1, 1)
	tests := []struct {
		name       string
		prefix     config.HashPrefix
		same, diff []string // same: the clients that share the first's answer
		scope      int
	}{
		{"IPv4 /24", hashPrefix, []string{"198.51.100.1", "198.51.100.200", "::ffff:198.51.100.9"}, nil, 24},
		{"IPv4 /32", config.HashPrefix{V4: 32, V6: 56}, []string{"198.51.100.1"}, nil, 32},
		{"IPv4 /0", config.HashPrefix{V4: 0, V6: 56}, []string{"198.51.100.1", "203.0.113.7", "10.0.0.1"}, nil, 0},
		{"IPv6 /56", hashPrefix, []string{"2001:db8:1:200::1", "2001:db8:1:2ff:ffff::9"}, nil, 56},
		{"IPv6 /128", config.HashPrefix{V4: 24, V6: 128}, []string{"2001:db8::1"}, nil, 128},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Prepare(config.ModeConsistentHash, cands, Options{HashPrefix: tt.prefix}, nil)
			first := netip.MustParseAddr(tt.same[0])
			want := owner(t, s, cands, first)
			for _, c := range tt.same[1:] {
				if got := owner(t, s, cands, netip.MustParseAddr(c)); got != want {
					t.Errorf("%s gets %s, %s gets %s: want the same", c, got, first, want)
				}
			}
			if got := s.Scope(first); got != tt.scope {
				t.Errorf("Scope(%s) = %d, want %d", first, got, tt.scope)
			}
		})
	}
	// Different networks of the prefix are spread: eight backends all get clients.
	s := hashed(cands)
	counts := map[string]int{}
	for _, c := range subnets(800) {
		counts[owner(t, s, cands, c)]++
	}
	if len(counts) != len(cands) {
		t.Errorf("800 networks went to %d of %d backends: %v", len(counts), len(cands), counts)
	}
}

func TestConsistentHashIgnoresConfigOrder(t *testing.T) {
	a := weighted(1, 2, 3, 4)
	b := slices.Clone(a)
	slices.Reverse(b)
	sa, sb := hashed(a), hashed(b)
	for _, c := range subnets(500) {
		if x, y := owner(t, sa, a, c), owner(t, sb, b, c); x != y {
			t.Fatalf("client %s gets %s in one order, %s in the other", c, x, y)
		}
	}
}

func TestRendezvousAgreesWithSetPick(t *testing.T) {
	cands := weighted(5, 1, 3, 0, 2)
	subset := []int{4, 0, 2}
	full, sub := hashed(cands), hashed([]Candidate{cands[4], cands[0], cands[2]})
	for _, c := range subnets(1000) {
		want := owner(t, full, cands, c)
		if got := PrepareRendezvous(cands, hashPrefix).Pick([]int{0, 1, 2, 3, 4}, c); cands[got].Addr.String() != want {
			t.Fatalf("over all, Rendezvous.Pick gives %s, Pick %s", cands[got].Addr, want)
		}
		want = owner(t, sub, []Candidate{cands[4], cands[0], cands[2]}, c)
		if got := PrepareRendezvous(cands, hashPrefix).Pick(subset, c); cands[subset[got]].Addr.String() != want {
			t.Fatalf("over a subset, Rendezvous.Pick gives %s, Pick %s", cands[subset[got]].Addr, want)
		}
	}
}

// TestConsistentHashMovement removes one of five weighted backends: only its clients move,
// and before and after, each backend's share of 10,000 client networks is its weight's.
func TestConsistentHashMovement(t *testing.T) {
	clients := subnets(10000)
	cands := weighted(1, 2, 3, 4, 5)
	shares := func(cands []Candidate) (map[netip.Addr]string, map[string]int) {
		s := hashed(cands)
		owners, counts := map[netip.Addr]string{}, map[string]int{}
		for _, c := range clients {
			o := owner(t, s, cands, c)
			owners[c] = o
			counts[o]++
		}
		return owners, counts
	}
	checkShares := func(cands []Candidate, counts map[string]int) {
		t.Helper()
		total := 0
		for _, c := range cands {
			total += c.Weight
		}
		for _, c := range cands {
			want := float64(c.Weight) / float64(total)
			got := float64(counts[c.Addr.String()]) / float64(len(clients))
			t.Logf("%s weight %d: %.4f of the clients, want %.4f", c.Addr, c.Weight, got, want)
			if math.Abs(got-want) > 0.02 {
				t.Errorf("%s has %.4f of the clients, want %.4f ± 0.02", c.Addr, got, want)
			}
		}
	}
	before, counts := shares(cands)
	checkShares(cands, counts)
	removed := cands[2].Addr.String()
	rest := slices.Delete(slices.Clone(cands), 2, 3)
	after, counts := shares(rest)
	checkShares(rest, counts)
	moved, ownedByRemoved := 0, 0
	for _, c := range clients {
		if before[c] == removed {
			ownedByRemoved++
		}
		if before[c] != after[c] {
			moved++
			if before[c] != removed {
				t.Errorf("client %s moved from %s, which stayed, to %s", c, before[c], after[c])
			}
		}
	}
	t.Logf("removing %s moved %d of %d clients: the %d it had", removed, moved, len(clients), ownedByRemoved)
	if moved != ownedByRemoved {
		t.Errorf("moved %d clients, want the %d of the removed backend", moved, ownedByRemoved)
	}
}

func TestMinHealthyGroups(t *testing.T) {
	// Priority 1 has two candidates, priority 2 three, priority 3 one.
	var cands []Candidate
	for i, p := range []int{2, 1, 3, 2, 1, 2} {
		cands = append(cands, Candidate{Priority: p, Addr: netip.AddrFrom4([4]byte{10, 0, byte(p), byte(i)})})
	}
	p1 := []string{"10.0.1.1", "10.0.1.4"}
	p2 := []string{"10.0.2.0", "10.0.2.3", "10.0.2.5"}
	tests := []struct {
		name       string
		cands      []Candidate
		minHealthy int
		want       []string
		skipped    bool
	}{
		{"0 counts as 1", cands, 0, p1, false},
		{"1 is the best group", cands, 1, p1, false},
		{"the best group has exactly enough", cands, 2, p1, false},
		{"one short moves to the next group", cands, 3, p2, true},
		{"no group has enough: the best answers", cands, 4, p1, false},
		{"one candidate, threshold not reached", cands[2:3], 2, []string{"10.0.3.2"}, false},
		{"empty", nil, 2, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Prepare(config.ModeFailover, tt.cands, Options{MinHealthy: tt.minHealthy}, nil)
			if got := picked(s, tt.cands, netip.Addr{}); !slices.Equal(got, tt.want) {
				t.Errorf("picked %v, want %v", got, tt.want)
			}
			if got := s.SkippedGroups(); got != tt.skipped {
				t.Errorf("SkippedGroups = %v, want %v", got, tt.skipped)
			}
		})
	}
}

func TestScope(t *testing.T) {
	cands := weighted(1, 2)
	v4, v6, mapped := netip.MustParseAddr("198.51.100.7"), netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("::ffff:198.51.100.7")
	tests := []struct {
		mode            config.Mode
		v4, v6, mapped  int
		dependsOnClient bool
	}{
		{config.ModeFailover, 0, 0, 0, false},
		{config.ModeWeighted, 0, 0, 0, false},
		{config.ModeIPHash, 32, 128, 128, true},
		{config.ModeConsistentHash, 20, 48, 116, true},
	}
	for _, tt := range tests {
		s := Prepare(tt.mode, cands, Options{HashPrefix: config.HashPrefix{V4: 20, V6: 48}}, nil)
		if a, b, c := s.Scope(v4), s.Scope(v6), s.Scope(mapped); a != tt.v4 || b != tt.v6 || c != tt.mapped {
			t.Errorf("%s: Scope = %d, %d, %d, want %d, %d, %d", tt.mode, a, b, c, tt.v4, tt.v6, tt.mapped)
		}
		if got := DependsOnClient(tt.mode); got != tt.dependsOnClient {
			t.Errorf("DependsOnClient(%s) = %v", tt.mode, got)
		}
	}
}

func TestConsistentHashDoesNotAllocate(t *testing.T) {
	cands := weighted(1, 2, 3, 4)
	cands = append(cands, Candidate{Weight: 1, Host: "edge.example.net."})
	s := hashed(cands)
	idx := []int{4, 0, 2}
	r := PrepareRendezvous(cands, hashPrefix)
	var buf [4]int
	for _, c := range []string{"198.51.100.7", "2001:db8::1", "::ffff:10.0.0.1"} {
		client := netip.MustParseAddr(c)
		if n := testing.AllocsPerRun(100, func() { _ = s.Pick(client, buf[:0]) }); n != 0 {
			t.Errorf("Pick for %s: %v allocations", c, n)
		}
		if n := testing.AllocsPerRun(100, func() { _ = r.Pick(idx, client) }); n != 0 {
			t.Errorf("Rendezvous.Pick for %s: %v allocations", c, n)
		}
	}
}

func TestRuleOfConsistentHashAndMinHealthy(t *testing.T) {
	tests := []struct {
		mode   config.Mode
		o      Options
		client string
		want   string
	}{
		{config.ModeConsistentHash, Options{HashPrefix: hashPrefix}, "198.51.100.7", "consistent-hash (the highest weighted rendezvous score for 198.51.100.0/24, by backend address)"},
		{config.ModeConsistentHash, Options{HashPrefix: hashPrefix}, "2001:db8:1:2ff::1", "consistent-hash (the highest weighted rendezvous score for 2001:db8:1:200::/56, by backend address)"},
		{config.ModeFailover, Options{MinHealthy: 2}, "198.51.100.7", "failover (every backend of the best priority with at least 2 healthy, else of the best priority)"},
		{config.ModeFailover, Options{MinHealthy: 1}, "198.51.100.7", "failover (every backend of the best priority)"},
	}
	for _, tt := range tests {
		if got := Rule(tt.mode, tt.o, netip.MustParseAddr(tt.client), 3); got != tt.want {
			t.Errorf("Rule(%s, %+v, %s) = %q, want %q", tt.mode, tt.o, tt.client, got, tt.want)
		}
	}
}
