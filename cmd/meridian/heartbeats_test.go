package main

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/source/heartbeats"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// The timing of the heartbeat tests.
const (
	hbInterval = 250 * time.Millisecond
	hbHealthy  = 2 * time.Second
	hbSelfHeal = 4 * time.Second
)

// hbKey is the TSIG key the update servers of the tests accept.
var hbKey = testutil.TSIGKey{Name: "meridian-sites.", Algorithm: dns.HmacSHA256, Secret: "aGVhcnRiZWF0cy1vZi10aGUtc2l0ZXMtYXJlLXNpZ25lZA=="}

// hbZones are the heartbeat zones of the tests: a local zone per region and the global one.
var hbZones = map[string][]string{"europe.hb.test.": nil, "america.hb.test.": nil, "global.hb.test.": nil}

// hbSites are three sites in two regions (eu-1, eu-2 in europe; us-1 in america), in the
// order of failoverSites' priorities.
var hbSites = []struct{ name, region string }{{"eu-1", "europe"}, {"eu-2", "europe"}, {"us-1", "america"}}

// hbTransport returns the heartbeat lines of site i: its region, the local zone of its region
// and the global zone at server (host:port), the key (secret overrides the test key's when
// set), the healthy durations (hbHealthy when 0), and extra lines.
func hbTransport(server string, secret func(i int) string, healthy time.Duration, extra string) func(int, []*siteProc) string {
	healthy = cmp.Or(healthy, hbHealthy)
	return func(i int, _ []*siteProc) string {
		s := hbKey.Secret
		if secret != nil {
			s = secret(i)
		}
		site := hbSites[i]
		return fmt.Sprintf("  region %s\n  heartbeat_zone local %s.hb.test. %s\n  heartbeat_zone global global.hb.test. %s\n"+
			"  heartbeat_tsig %s hmac-sha256 %s\n  heartbeat_interval %s\n  local_healthy_duration %s\n  global_healthy_duration %s\n  self_heal_interval %s\n%s",
			site.region, site.region, server, server, hbKey.Name, s, hbInterval, healthy, healthy, hbSelfHeal, extra)
	}
}

// startHBSites starts the three sites of hbSites writing their heartbeats at server, with the
// failover record of failoverSites over one backend each.
func startHBSites(t *testing.T, server string, base string, secret func(int) string, healthy time.Duration) []*siteProc {
	t.Helper()
	backends := []string{base + ".1", base + ".2", base + ".3"}
	names := []string{hbSites[0].name, hbSites[1].name, hbSites[2].name}
	procs := startSites(t, siteSetup{names: names, backends: backends, yaml: hbFailover(backends), transport: hbTransport(server, secret, healthy, "")})
	for _, p := range procs {
		t.Cleanup(func() { _ = p.srv.Signal(syscall.SIGCONT) })
	}
	return procs
}

// hbFailover is failoverSites with the heartbeat tests' site names.
func hbFailover(backends []string) func(int, []int) string {
	yaml := failoverSites(backends)
	return func(i int, ports []int) string {
		s := yaml(i, ports)
		for j, site := range hbSites {
			s = strings.ReplaceAll(s, fmt.Sprintf("site: s%d,", j+1), "site: "+site.name+",")
		}
		return s
	}
}

// heartbeatIn reads site's heartbeat in zone from the server.
func heartbeatIn(t *testing.T, s *testutil.UpdateServer, site, zone string) (heartbeats.Record, bool) {
	t.Helper()
	for _, rr := range s.Query(t, heartbeats.Name(site, zone), dns.TypeTXT).Answer {
		if txt, ok := rr.(*dns.TXT); ok {
			rec, err := heartbeats.ParseRecord(txt.Txt)
			if err != nil {
				t.Fatalf("%s's heartbeat in %s: %v", site, zone, err)
			}
			return rec, true
		}
	}
	return heartbeats.Record{}, false
}

// TestHeartbeatsInBINDAndKnot: three sites in two regions write their heartbeats into a real
// BIND and a real Knot and read each other's there. The records carry fresh timestamps and
// the sites' healthy addresses; every site answers eu-1's backend. eu-1's process dies with
// its backend alive: the others keep it until its last heartbeat is older than the healthy
// duration, not before, then answer eu-2's; once eu-2 dies too, the whole region is stale and
// us-1's backend (the other region's, the failover answer) is answered.
func TestHeartbeatsInBINDAndKnot(t *testing.T) {
	t.Parallel()
	forEachUpdateServer(t, hbZones, func(t *testing.T, srv *testutil.UpdateServer, i int) {
		procs := startHBSites(t, srv.Addr, fmt.Sprintf("127.0.%d", 20+10*i), nil, 0)
		waitAnswer(t, procs, 10*time.Second, "app.gslb.example.com.", dns.TypeA, procs[0].backendIP())
		for _, site := range hbSites {
			for _, zone := range []string{site.region + ".hb.test.", "global.hb.test."} {
				var rec heartbeats.Record
				var ok bool
				testutil.Eventually(t, 5*time.Second, func() bool {
					rec, ok = heartbeatIn(t, srv, site.name, zone)
					return ok && rec.Region == site.region && time.Since(rec.Time) < hbHealthy/2 && len(rec.Up) == 1
				}, "%s's heartbeat in %s: %+v (found %v), want fresh, in %s, one address up", site.name, zone, rec, ok, site.region)
			}
		}

		if err := procs[0].srv.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		last, _ := heartbeatIn(t, srv, "eu-1", "europe.hb.test.")
		for i, at := range watchChange(t, procs[1:], hbHealthy+5*time.Second, procs[0].backendIP(), procs[1].backendIP()) {
			stale := last.Time.Add(hbHealthy)
			if !at.IsZero() && at.Before(stale) {
				t.Errorf("%s left eu-1's backend %s before its heartbeat of %s was stale", procs[i+1].name, stale.Sub(at), last.Time.Format(time.StampMilli))
			}
			if limit := stale.Add(2*hbInterval + siteMargin); !at.IsZero() && at.After(limit) {
				t.Errorf("%s left eu-1's backend %s after its heartbeat went stale", procs[i+1].name, at.Sub(stale))
			}
		}
		var view []struct {
			Sites []struct{ Name, State, Peer string }
		}
		procs[1].getJSON(t, "/api/v1/sites", &view)
		if len(view) != 1 || !slices.Contains(view[0].Sites, struct{ Name, State, Peer string }{"eu-1", "stale", "local"}) {
			t.Errorf("eu-2's API does not show eu-1 stale in the local zone: %+v", view)
		}
		if err := procs[1].srv.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitAnswer(t, procs[2:], hbHealthy+5*time.Second, "app.gslb.example.com.", dns.TypeA, procs[2].backendIP())
		if v, _ := procs[2].metric(t, `coredns_gslb_heartbeat_region_healthy{region="europe"}`); v != "0" {
			t.Errorf("us-1 sees region europe healthy (%q) with both its sites dead", v)
		}
	})
}

// TestHeartbeatsSelfHeal: the sites write through a fault proxy that refuses most updates (it
// stands in for a provider's rate limiting, which cannot be made to happen here). eu-1 stays
// healthy for the others through self-heal: its heartbeat in the server is dated ahead and its
// recovering metric is 1. When it then really stops, the others see it stale only once its
// dated time plus the healthy duration has passed.
func TestHeartbeatsSelfHeal(t *testing.T) {
	t.Parallel()
	srv := testutil.StartKnot(t, hbKey, hbZones)
	proxy := testutil.StartFaultProxy(t, srv.Addr)
	// Longer healthy durations than the other tests': a dated write must pass within three
	// quarters of it while most updates fail.
	const healthy = 2 * hbHealthy
	procs := startHBSites(t, proxy.Addr, "127.0.22", nil, healthy)
	waitAnswer(t, procs, 10*time.Second, "app.gslb.example.com.", dns.TypeA, procs[0].backendIP())

	proxy.SetUpdateFaults(0.4, 0.1) // most writes still pass within the healthy duration on a loaded machine
	const metric = `coredns_gslb_heartbeat_recovering_from_rate_limiting{zone="local"}`
	// Self-heal starts when the heartbeat the zone holds is a second old, which takes a few
	// rounds in a row whose writes all failed (or a dropped write's timeout), and ends after two
	// rounds that wrote: on a busy machine a window of 10 s has missed it.
	testutil.Eventually(t, 30*time.Second, func() bool { v, _ := procs[0].metric(t, metric); return v == "1" },
		"eu-1 does not say it is recovering from rate limiting")
	testutil.Eventually(t, 5*time.Second, func() bool {
		rec, ok := heartbeatIn(t, srv, "eu-1", "europe.hb.test.")
		return ok && time.Until(rec.Time) > hbSelfHeal/2
	}, "eu-1's heartbeat in the server is not dated ahead")
	// Meanwhile nobody failed over: eu-1's backend is answered by every site throughout.
	for deadline := time.Now().Add(healthy + time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, p := range procs {
			if got := p.answer("app.gslb.example.com.", dns.TypeA); len(got) != 1 || got[0] != procs[0].backendIP() {
				t.Fatalf("while its writes are throttled, %s answers %v, not eu-1's backend", p.name, got)
			}
		}
	}
	if passed, refused, dropped := proxy.Counts(); refused == 0 || dropped == 0 || passed == 0 {
		t.Errorf("the proxy passed %d, refused %d, dropped %d updates: the test throttled nothing", passed, refused, dropped)
	}

	// eu-1 really stops: it stays fresh until its dated time has passed, then leaves.
	if err := procs[0].srv.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// An update eu-1 sent just before it died may still be on its way through the proxy, and
	// the heartbeat it holds need not be dated as far ahead (the last of a self-heal is dated
	// now): its last heartbeat is the one that stays unchanged for a second.
	last, _ := heartbeatIn(t, srv, "eu-1", "europe.hb.test.")
	for unchanged := time.Now(); time.Since(unchanged) < time.Second; time.Sleep(100 * time.Millisecond) {
		if rec, _ := heartbeatIn(t, srv, "eu-1", "europe.hb.test."); !rec.Time.Equal(last.Time) {
			last, unchanged = rec, time.Now()
		}
	}
	stale := last.Time.Add(healthy)
	// eu-2 sees it stale at its next read of the heartbeats after that time: 15 s of slack, as
	// a full test run's load once made 5 s too few.
	at := watchChange(t, procs[1:2], time.Until(stale)+15*time.Second, procs[0].backendIP(), procs[1].backendIP())
	if !at[0].IsZero() && at[0].Before(stale) {
		t.Errorf("eu-2 left the stopped eu-1 %s before its self-healed heartbeat (dated %s) was stale", stale.Sub(at[0]), last.Time.Format(time.StampMilli))
	}
}

// TestHeartbeatsWrongKey: a site with a wrong secret is refused by the server (NOTAUTH), logs it
// once however often it retries, counts every refusal, and its backend is never answered by
// the others, which never read a heartbeat of it.
func TestHeartbeatsWrongKey(t *testing.T) {
	t.Parallel()
	forEachUpdateServer(t, hbZones, func(t *testing.T, srv *testutil.UpdateServer, i int) {
		testWrongKey(t, srv, fmt.Sprintf("127.0.%d", 23+10*i))
	})
}

// forEachUpdateServer runs test, in parallel, against a BIND and a Knot serving zones (i is 0
// for BIND, 1 for Knot, for the test to choose its addresses).
func forEachUpdateServer(t *testing.T, zones map[string][]string, test func(t *testing.T, srv *testutil.UpdateServer, i int)) {
	for i, start := range []func(testing.TB, testutil.TSIGKey, map[string][]string) *testutil.UpdateServer{testutil.StartBIND, testutil.StartKnot} {
		srv := start(t, hbKey, zones)
		t.Run(srv.Kind, func(t *testing.T) {
			t.Parallel()
			test(t, srv, i)
		})
	}
}

func testWrongKey(t *testing.T, srv *testutil.UpdateServer, base string) {
	procs := startHBSites(t, srv.Addr, base, func(i int) string {
		if i == 0 {
			return "d3JvbmctZm9yLWV1LTEtb25seQ=="
		}
		return hbKey.Secret
	}, 0)
	const refused = `coredns_gslb_heartbeat_updates_total{rcode="NOTAUTH",zone="local"}`
	// Three rounds of three attempts each at least: the first round's log line, and no other.
	testutil.Eventually(t, 10*time.Second, func() bool {
		v, _ := procs[0].metric(t, refused)
		n, err := strconv.Atoi(v)
		return err == nil && n >= 3*3
	}, "eu-1's refused updates are not counted")
	if n := strings.Count(procs[0].srv.Logs(), "writing this site's local heartbeat"); n != 1 {
		t.Errorf("eu-1 logged its refused local heartbeat %d times, want once:\n%s", n, procs[0].srv.Logs())
	}
	if _, ok := heartbeatIn(t, srv, "eu-1", "europe.hb.test."); ok {
		t.Error("the server holds a heartbeat of eu-1, whose key is wrong")
	}
	waitAnswer(t, procs[1:], 5*time.Second, "app.gslb.example.com.", dns.TypeA, procs[1].backendIP())
}

// delegationNS returns the name servers of gslb.example.com. in the parent zone's referral.
func delegationNS(t *testing.T, srv *testutil.UpdateServer) []string {
	t.Helper()
	m := srv.Query(t, "gslb.example.com.", dns.TypeNS)
	var out []string
	for _, rr := range append(m.Answer, m.Ns...) {
		if ns, ok := rr.(*dns.NS); ok && ns.Hdr.Name == "gslb.example.com." {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(ns.Ns, "ns-"), ".example.com."))
		}
	}
	slices.Sort(out)
	return out
}

// TestHeartbeatsKeepTheDelegation: the parent zone (a real BIND) delegates gslb.example.com. to
// eu-1's name server only. eu-1 and eu-2 add theirs while they are healthy; us-1, which has no
// backend of its own, adds none. When both eu sites die, us-1 removes eu-1's name server once
// its heartbeat has been stale for the threshold, but never eu-2's, the last one. eu-1
// restarted adds itself back.
func TestHeartbeatsKeepTheDelegation(t *testing.T) {
	t.Parallel()
	zones := map[string][]string{"example.com.": {"gslb IN NS ns-eu-1", "ns-eu-1 IN A 127.0.25.11"}}
	for z := range hbZones {
		zones[z] = nil
	}
	forEachUpdateServer(t, zones, func(t *testing.T, srv *testutil.UpdateServer, i int) {
		testDelegation(t, srv, fmt.Sprintf("127.0.%d", 25+10*i))
	})
}

func testDelegation(t *testing.T, srv *testutil.UpdateServer, base string) {
	backends := []string{base + ".1", base + ".2", base + ".3"}
	eu := hbFailover(backends[:2])
	yaml := func(i int, ports []int) string { return eu(i, ports[:2]) } // us-1 serves no backend of its own
	transport := hbTransport(srv.Addr, nil, 0, "")
	procs := startSites(t, siteSetup{names: []string{"eu-1", "eu-2", "us-1"}, backends: backends, yaml: yaml,
		transport: func(i int, procs []*siteProc) string {
			return transport(i, procs) + fmt.Sprintf("  delegation example.com. %s\n  delegation_ns ns-%s.example.com. %s.%d\n  delegation_stale_threshold %s\n",
				srv.Addr, hbSites[i].name, base, 11+i, hbHealthy)
		}})
	testutil.Eventually(t, 10*time.Second, func() bool { return slices.Equal(delegationNS(t, srv), []string{"eu-1", "eu-2"}) },
		"the delegation is %v, want eu-1 and eu-2", delegationNS(t, srv))
	if glue := srv.Query(t, "ns-eu-2.example.com.", dns.TypeA); len(glue.Answer) != 1 {
		t.Errorf("eu-2's glue: %v", glue.Answer)
	}

	corefile, err := os.ReadFile(filepath.Join(procs[0].srv.Dir, "Corefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs[:2] {
		if err := p.srv.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 3*hbHealthy+5*time.Second, func() bool {
		ns := delegationNS(t, srv)
		if len(ns) == 0 {
			t.Fatal("the delegation is empty")
		}
		return len(ns) == 1
	}, "us-1 did not remove a dead site's name server: %v", delegationNS(t, srv))
	for deadline := time.Now().Add(2 * hbHealthy); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if ns := delegationNS(t, srv); len(ns) != 1 {
			t.Fatalf("the delegation became %v: the last name server must stay", ns)
		}
	}

	testutil.StartAt(t, procs[0].srv.Dir, procs[0].addr(), string(corefile), 15*time.Second)
	testutil.Eventually(t, 10*time.Second, func() bool { return slices.Contains(delegationNS(t, srv), "eu-1") },
		"eu-1, back, did not add its name server: %v", delegationNS(t, srv))
}
