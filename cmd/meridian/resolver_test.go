package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestResolverCachesBySubnetScope runs a real recursive resolver (unbound with its subnetcache
// module) in front of meridian: two client subnets must get their own answers, and later
// clients of the same subnets must get them from the resolver's cache without asking meridian
// again. A scope of 0 on a client-dependent answer would make the resolver serve the first
// subnet's answer to everyone; a missing ECS echo would make it cache nothing per subnet.
func TestResolverCachesBySubnetScope(t *testing.T) {
	s := serveZone(t, `
records:
  hash.example.org.:
    mode: ip-hash
    record_ttl: 300
    backends:
      - address: 10.0.0.1
      - address: 10.0.0.2
      - address: 10.0.0.3
      - address: 10.0.0.4
`, "  use_edns_csubnet\n }\n log\n {\n")
	u := testutil.StartUnbound(t, "example.org.", s.Addr)
	assertSubnetCaching(t, s, u, "hash.example.org.", []subnetAnswer{
		{first: "198.51.100.0/24", later: "198.51.100.77/32", want: "10.0.0.1"},
		{first: "203.0.113.0/24", later: "203.0.113.200/32", want: "10.0.0.2"},
	})
}

// TestResolverCachesGeoAnswersBySubnet is TestResolverCachesBySubnetScope for a geoip record,
// whose scope is the database network that placed the client.
func TestResolverCachesGeoAnswersBySubnet(t *testing.T) {
	s := serveGeo(t, " }\n log\n {\n")
	u := testutil.StartUnbound(t, "example.org.", s.Addr)
	assertSubnetCaching(t, s, u, "geo.example.org.", []subnetAnswer{
		{first: "198.51.100.0/24", later: "198.51.100.77/32", want: "10.0.0.1"},
		{first: "203.0.113.0/24", later: "203.0.113.200/32", want: "10.0.0.2"},
	})
}

// subnetAnswer is what clients of one subnet must be answered.
type subnetAnswer struct {
	first string // the ECS subnet of the first query, which the resolver must send on
	later string // another client of the same subnet, which the resolver must answer from cache
	want  string
}

// assertSubnetCaching asks name through the resolver u for each subnet's first client, then
// for each subnet's later client, and checks the answers and that meridian s saw exactly one
// query per subnet.
func assertSubnetCaching(t *testing.T, s *testutil.Server, u *testutil.Unbound, name string, subnets []subnetAnswer) {
	t.Helper()
	check := func(subnet, want string) {
		t.Helper()
		r := u.QueryECS(t, name, dns.TypeA, subnet)
		if got := addresses(r); r.Rcode != dns.RcodeSuccess || !slices.Equal(got, []string{want}) {
			t.Fatalf("client %s: resolver answered %s %v, want %s\nmeridian logs:\n%s", subnet, dns.RcodeToString[r.Rcode], got, want, s.Logs())
		}
	}
	for _, sn := range subnets {
		check(sn.first, sn.want)
	}
	for _, sn := range subnets {
		check(sn.later, sn.want)
	}
	// The log lines reach us through a pipe, later than the answers. A last query for another
	// name, which the resolver must forward, is logged after every query forwarded before it:
	// once its line is in, the count is final.
	const barrier = "barrier.example.org."
	u.QueryECS(t, barrier, dns.TypeA, subnets[0].first)
	testutil.Eventually(t, 5*time.Second, func() bool { return strings.Contains(s.Logs(), `"A IN `+barrier) }, "the last query was not logged:\n%s", s.Logs)
	if n := strings.Count(s.Logs(), `"A IN `+name); n != len(subnets) {
		t.Fatalf("meridian was asked %d times for %s, want %d (one per subnet; the rest from the resolver's cache)\nlogs:\n%s", n, name, len(subnets), s.Logs())
	}
}
