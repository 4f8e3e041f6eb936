package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/admin/admintest"
	"github.com/meridian-gslb/meridian/internal/canary"
	"github.com/meridian-gslb/meridian/internal/notify/notifytest"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// canaryZone is hash.example.org., ip-hash over four addresses (the answer depends on the
// client's /24, with that scope), TTL 5, and the zone's name server ns1.example.org. at
// 127.0.0.1.
const canaryZone = `
ns: [ns1.example.org.]
static:
  ns1: ["A 127.0.0.1"]
records:
  hash.example.org.:
    mode: ip-hash
    record_ttl: 5
    backends: [{address: 10.0.0.1}, {address: 10.0.0.2}, {address: 10.0.0.3}, {address: 10.0.0.4}]
`

// canaryWorld is a meridian serving canaryZone, asked by the canaries through four resolvers on
// loopback (unbound as it should be; unbound with a TTL floor; unbound without ECS; BIND, which
// has no ECS, with a TTL floor) and of a parent (BIND serving org.) whose delegation is stale.
type canaryWorld struct {
	*apiServer
	good, floor, noECS, bind, parent string
	hooks                            *notifytest.Receiver
}

// startCanaries starts the world; the meridian is started twice, its resolvers needing its
// address and its canaries theirs: the first, which the resolvers forward to, serves the zone
// alone.
func startCanaries(t *testing.T) *canaryWorld {
	t.Helper()
	auth := serveZone(t, canaryZone, "  use_edns_csubnet\n")
	w := &canaryWorld{hooks: notifytest.NewReceiver(t)}
	w.good = testutil.StartUnbound(t, "example.org.", auth.Addr).Addr
	w.floor = testutil.StartUnboundWith(t, "example.org.", auth.Addr, testutil.UnboundOptions{CacheMinTTL: 60}).Addr
	w.noECS = testutil.StartUnboundWith(t, "example.org.", auth.Addr, testutil.UnboundOptions{NoECS: true}).Addr
	w.bind = testutil.StartBINDResolver(t, "example.org.", auth.Addr, 30).Addr
	key := testutil.TSIGKey{Name: "canary-test.", Algorithm: dns.HmacSHA256, Secret: "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ="}
	w.parent = testutil.StartBIND(t, key, map[string][]string{"org.": {"example NS ns-old.example", "ns-old.example A 127.0.0.99"}}).Addr
	w.apiServer = startWithAPI(t, canaryZone, filepath.Join(t.TempDir(), "overrides.json"),
		"use_edns_csubnet",
		fmt.Sprintf("canary_resolver %s %s %s %s", w.good, w.floor, w.noECS, w.bind),
		"canary_name hash.example.org",
		"canary_ecs 198.51.100.0/24",
		"canary_parent "+w.parent,
		"canary_interval 1s",
		"webhook "+w.hooks.URL)
	return w
}

// TestCanariesThroughResolvers asks real resolvers that misbehave, and a parent with a stale
// delegation, through the binary: each misbehaviour is found where it is, and only there, and
// reported by meridian ctl, the API and the webhooks.
func TestCanariesThroughResolvers(t *testing.T) {
	t.Parallel()
	w := startCanaries(t)
	env := []string{"MERIDIAN_API=" + w.url}
	out := ctlWant(t, env, false, "canaries", "-run")
	rep, err := w.client.Canaries(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	kinds := func(resolver, ecs string) []string {
		var k []string
		for _, c := range rep.Checks {
			if c.Resolver == resolver && c.ECS == ecs {
				for _, m := range c.Mismatches {
					k = append(k, m.Kind)
				}
			}
		}
		slices.Sort(k)
		return slices.Compact(k)
	}
	const subnet = "198.51.100.0/24"
	for _, tc := range []struct {
		name, resolver, ecs string
		want                []string
	}{
		{"unbound as it should be", w.good, "", nil},
		{"unbound as it should be, with ECS", w.good, subnet, nil},
		{"unbound with a TTL floor", w.floor, "", []string{canary.KindTTL}},
		{"unbound without ECS, asked with ECS", w.noECS, subnet, []string{canary.KindAnswer, canary.KindECS}},
		{"BIND with a TTL floor, asked with ECS", w.bind, subnet, []string{canary.KindAnswer, canary.KindECS, canary.KindTTL}},
	} {
		if got := kinds(tc.resolver, tc.ecs); !slices.Equal(got, tc.want) {
			t.Errorf("%s: mismatches %v, want %v\n%s", tc.name, got, tc.want, out)
		}
	}
	// The floor is 60s; a scheduled round may have filled the resolver's cache a second or two
	// before.
	floorSays := regexp.MustCompile(regexp.QuoteMeta(w.floor+" hash.example.org.: serves TTL ") + `(5[5-9]|60), above the record's 5`)
	if !floorSays.MatchString(out) {
		t.Errorf("ctl canaries -run does not say %s:\n%s", floorSays, out)
	}
	for _, want := range []string{
		"its reply to ECS 198.51.100.0/24 carries no client subnet",
		"for ECS 198.51.100.0/24 serves",
		"the parent delegates example.org. to ns-old.example.org., the zone names ns1.example.org.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("ctl canaries -run does not say %q:\n%s", want, out)
		}
	}
	if len(rep.Delegations) != 1 || rep.Delegations[0].ExpectedGlue["ns1.example.org."][0] != "127.0.0.1" {
		t.Errorf("delegations %+v", rep.Delegations)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		var got []string
		for _, r := range w.hooks.Events("canary") {
			got = append(got, r.Event.Canary+" "+r.Event.Change)
		}
		return slices.Contains(got, w.floor+" ttl") && slices.Contains(got, w.noECS+" ecs") && slices.Contains(got, w.parent+" delegation")
	}, "canary events %v", w.hooks.Events("canary"))
	// A mismatch is told once (for each question: with and without ECS), not at every round:
	// wait for two scheduled rounds after the events came (canary_interval 1s).
	told := time.Now()
	testutil.Eventually(t, 10*time.Second, func() bool {
		last, err := w.client.Canaries(t.Context(), false)
		return err == nil && last.Time.After(told.Add(time.Second))
	}, "no round after %s", told)
	n := 0
	for _, r := range w.hooks.Events("canary") {
		if r.Event.Canary == w.floor && r.Event.Change == "ttl" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("the TTL floor was told %d times, want once for each of its two questions", n)
	}
	if !regexp.MustCompile(regexp.QuoteMeta("canary: "+w.floor+", hash.example.org.: serves TTL ") + `(5[5-9]|60), above`).MatchString(w.Logs()) {
		t.Errorf("the mismatch is not logged:\n%s", w.Logs())
	}
}

// TestDashboardCanaries shows the canaries' rows on the dashboard.
func TestDashboardCanaries(t *testing.T) {
	b := admintest.NewBrowser(t)
	w := startCanaries(t)
	b.Do(chromedp.Navigate(w.url + "/"))
	b.WaitText(fmt.Sprintf(`#canaries tr[data-canary=%q] [data-field="result"]`, w.floor+" hash.example.org."), "ttl", 20*time.Second)
	b.WaitText(fmt.Sprintf(`#canaries tr[data-canary=%q] [data-field="result"]`, w.good+" hash.example.org."), "ok", 5*time.Second)
	b.WaitText(fmt.Sprintf(`#canaries tr[data-delegation=%q] [data-field="result"]`, w.parent+" example.org."), "delegation", 5*time.Second)
}
