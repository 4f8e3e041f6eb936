package policy_test

import (
	"fmt"
	"net/netip"
	"sync/atomic"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/policy"
)

// A record's healthy backends become candidates; Prepare orders them for the mode once, when
// health or configuration changes, and every query calls Pick. Pick returns indexes into the
// set, and set.Order maps them back to the candidates given to Prepare.
func ExamplePrepare() {
	cands := []policy.Candidate{
		{Priority: 2, Addr: netip.MustParseAddr("198.51.100.1")}, // the standby
		{Priority: 1, Addr: netip.MustParseAddr("192.0.2.1")},
		{Priority: 1, Addr: netip.MustParseAddr("192.0.2.2")},
	}
	client := netip.MustParseAddr("203.0.113.7")

	// failover answers with every candidate of the best priority.
	set := policy.Prepare(config.ModeFailover, cands, policy.Options{}, nil)
	for _, i := range set.Pick(client, nil) {
		fmt.Println("up:", cands[set.Order[i]].Addr)
	}

	// When both backends of priority 1 are down, they are no longer candidates: prepared again,
	// the set answers with the standby.
	set = policy.Prepare(config.ModeFailover, cands[:1], policy.Options{}, nil)
	for _, i := range set.Pick(client, nil) {
		fmt.Println("priority 1 down:", cands[set.Order[i]].Addr)
	}
	// Output:
	// up: 192.0.2.1
	// up: 192.0.2.2
	// priority 1 down: 198.51.100.1
}

// roundrobin answers with one candidate in turn. The rotation counter belongs to the record,
// so that a set prepared again after a health change goes on where the last one stopped.
func ExampleSet_Pick() {
	cands := []policy.Candidate{
		{Addr: netip.MustParseAddr("192.0.2.1")},
		{Addr: netip.MustParseAddr("192.0.2.2")},
		{Addr: netip.MustParseAddr("192.0.2.3")},
	}
	var counter atomic.Uint64
	set := policy.Prepare(config.ModeRoundRobin, cands, policy.Options{}, &counter)
	var buf [1]int // queries pick into a buffer on their stack: Pick does not allocate
	for range 4 {
		for _, i := range set.Pick(netip.Addr{}, buf[:0]) {
			fmt.Println(cands[set.Order[i]].Addr)
		}
	}
	// Output:
	// 192.0.2.1
	// 192.0.2.2
	// 192.0.2.3
	// 192.0.2.1
}

// weighted answers with one candidate at random, in proportion to its weight.
func ExampleSet_Pick_weighted() {
	cands := []policy.Candidate{
		{Weight: 3, Addr: netip.MustParseAddr("192.0.2.1")},
		{Weight: 1, Addr: netip.MustParseAddr("192.0.2.2")},
	}
	set := policy.Prepare(config.ModeWeighted, cands, policy.Options{}, nil)
	counts := map[netip.Addr]int{}
	for range 10000 {
		for _, i := range set.Pick(netip.Addr{}, nil) {
			counts[cands[set.Order[i]].Addr]++
		}
	}
	share := float64(counts[cands[0].Addr]) / 10000
	fmt.Println("weight 3 of 4 gets about three quarters:", share > 0.7 && share < 0.8)
	// Output:
	// weight 3 of 4 gets about three quarters: true
}

// ip-hash keeps each client on one candidate, whatever the order of the configuration; Rule
// says how it chose, as the admin API's explain prints it.
func ExampleSet_Pick_ipHash() {
	cands := []policy.Candidate{
		{Addr: netip.MustParseAddr("192.0.2.2")},
		{Addr: netip.MustParseAddr("192.0.2.1")},
	}
	set := policy.Prepare(config.ModeIPHash, cands, policy.Options{}, nil)
	client := netip.MustParseAddr("203.0.113.7")
	i := set.Pick(client, nil)[0]
	fmt.Println(cands[set.Order[i]].Addr)
	fmt.Println(policy.Rule(config.ModeIPHash, policy.Options{}, client, set.Len()))
	// Output:
	// 192.0.2.1
	// ip-hash (FNV-1a of 203.0.113.7 mod 2 = 0, in address order)
}
