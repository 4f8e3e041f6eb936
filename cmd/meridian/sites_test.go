package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// The timing of the sites tests: every budget below is computed from these.
const (
	sitePeerInterval = 200 * time.Millisecond
	sitePeerTimeout  = 100 * time.Millisecond
	siteThreshold    = 2 * time.Second
	siteScrape       = 200 * time.Millisecond
	siteFall         = 2
	// siteMargin absorbs scheduling jitter on a busy two-core machine.
	siteMargin = 700 * time.Millisecond
)

// siteProc is one site's meridian process in a test, with its backend's listener.
type siteProc struct {
	name    string
	srv     *testutil.Server
	host    string
	port    int
	api     int
	metrics int
	backend net.Listener // nil when the site has no backend of its own
}

// siteSetup describes the sites of a test: their names, each site's zone file (given every
// site's backend port), the extra Corefile lines of each, and the backend address of each
// (empty for none). With hosts, site i listens on hosts[i] and every site on the same port,
// and transport (when set) writes each site's lines that say how it reads the others (peers
// from the NS set, heartbeat zones); by default each site listens on a port of its own on
// 127.0.0.1 and names the others with peers.
type siteSetup struct {
	names     []string
	backends  []string
	yaml      func(i int, ports []int) string
	extra     func(i int) string
	hosts     []string
	transport func(i int, procs []*siteProc) string
}

// startSites starts a tcp listener for each site's backend and one meridian per site on
// loopback, each naming the others as peers.
func startSites(t *testing.T, s siteSetup) []*siteProc {
	t.Helper()
	n := len(s.names)
	procs := make([]*siteProc, n)
	backendPorts := make([]int, n)
	shared := 0
	if s.hosts != nil {
		shared = freePortOn(t, s.hosts)
	}
	ports := testutil.FreePorts(t, 3*n) // DNS, admin API and metrics of each site, all distinct
	for i := range n {
		procs[i] = &siteProc{name: s.names[i], host: "127.0.0.1", port: ports[3*i], api: ports[3*i+1], metrics: ports[3*i+2]}
		if s.hosts != nil {
			procs[i].host, procs[i].port = s.hosts[i], shared
		}
		if s.backends[i] == "" {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(s.backends[i], "0"))
		if err != nil {
			t.Fatal(err)
		}
		go acceptAndClose(l)
		t.Cleanup(func() { l.Close() })
		procs[i].backend, backendPorts[i] = l, l.Addr().(*net.TCPAddr).Port
	}
	for i, p := range procs {
		var peers []string
		for j, q := range procs {
			if j != i {
				peers = append(peers, q.addr())
			}
		}
		peerLines := "  peers " + strings.Join(peers, " ") + "\n"
		if s.transport != nil {
			peerLines = s.transport(i, procs)
		}
		dir := t.TempDir()
		zone := filepath.Join(dir, "zone.yml")
		if err := os.WriteFile(zone, []byte(s.yaml(i, backendPorts)), 0o644); err != nil {
			t.Fatal(err)
		}
		extra := ""
		if s.extra != nil {
			extra = s.extra(i)
		}
		corefile := fmt.Sprintf(`.:%d {
 bind %s
 prometheus 127.0.0.1:%d
 gslb {
  zone gslb.example.com. %s
  site %s
%s  peer_interval %s
  peer_timeout %s
  split_brain_threshold %s
  api_enable
  api_listen_port %d
  api_overrides_file %s
%s }
}
`, p.port, p.host, p.metrics, zone, p.name, peerLines, sitePeerInterval, sitePeerTimeout, siteThreshold, p.api, filepath.Join(dir, "overrides.json"), extra)
		p.srv = testutil.StartAt(t, dir, p.addr(), corefile, 15*time.Second)
	}
	return procs
}

// backendIP returns the address of the site's backend listener.
func (p *siteProc) backendIP() string { return p.backend.Addr().(*net.TCPAddr).IP.String() }

// addr is the site's DNS address.
func (p *siteProc) addr() string { return net.JoinHostPort(p.host, fmt.Sprint(p.port)) }

// freePortOn returns a port free for UDP and TCP on every one of hosts.
func freePortOn(t *testing.T, hosts []string) int {
	t.Helper()
	for range 50 {
		port, free := testutil.FreePort(t), true
		for _, h := range hosts {
			addr := net.JoinHostPort(h, fmt.Sprint(port))
			l, err := net.Listen("tcp", addr)
			if err != nil {
				free = false
				break
			}
			u, err := net.ListenPacket("udp", addr)
			l.Close()
			if err != nil {
				free = false
				break
			}
			u.Close()
		}
		if free {
			return port
		}
	}
	t.Fatal("no port free on every host")
	return 0
}

// answer returns the sorted addresses name/qtype gets from p, or the error as a string.
func (p *siteProc) answer(name string, qtype uint16) []string {
	c := &dns.Client{Timeout: time.Second}
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	r, _, err := c.Exchange(m, p.srv.Addr)
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	if r.Rcode != dns.RcodeSuccess {
		return []string{dns.RcodeToString[r.Rcode]}
	}
	return addresses(r)
}

// waitAnswer waits until every site in procs answers name/qtype with want.
func waitAnswer(t *testing.T, procs []*siteProc, timeout time.Duration, name string, qtype uint16, want ...string) {
	t.Helper()
	slices.Sort(want)
	for _, p := range procs {
		testutil.Eventually(t, timeout, func() bool { return slices.Equal(p.answer(name, qtype), want) },
			"site %s answers %s %s with %v, want %v\n%s", p.name, name, dns.TypeToString[qtype], p.answer(name, qtype), want, p.srv.Logs())
	}
}

// peerJSON is a peer as GET /api/v1/sites shows it.
type peerJSON struct {
	Address, Site string
	Self          bool
	Errors        map[string]int
}

// getJSON decodes the admin API's answer to GET path on p.
func (p *siteProc) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", p.api, path))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// metric returns the value of the series line that starts with prefix in p's metrics, and
// false when there is none.
func (p *siteProc) metric(t *testing.T, prefix string) (string, bool) {
	t.Helper()
	for _, line := range strings.Split(string(metricsPage(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", p.metrics))), "\n") {
		if strings.HasPrefix(line, prefix) {
			return line[strings.LastIndexByte(line, ' ')+1:], true
		}
	}
	return "", false
}

// failoverSites is the same zone file in every site: app is a failover record with one
// backend per site, priorities in site order, each with a tcp check of its listener.
func failoverSites(backends []string) func(int, []int) string {
	return func(_ int, ports []int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "records:\n  app.gslb.example.com.:\n    mode: failover\n    scrape_interval: %s\n    scrape_timeout: 100ms\n    backends:\n", siteScrape)
		for i, addr := range backends {
			fmt.Fprintf(&b, "      - {address: %s, site: s%d, priority: %d, rise: 1, fall: %d, healthchecks: [{type: tcp, params: {port: %d}}]}\n", addr, i+1, i+1, siteFall, ports[i])
		}
		return b.String()
	}
}

// watchChange polls name A at procs until each answers something other than from, and
// returns when each did; any answer that is neither from nor to fails the test.
func watchChange(t *testing.T, procs []*siteProc, timeout time.Duration, from, to string) []time.Time {
	t.Helper()
	at := make([]time.Time, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() {
			deadline := time.Now().Add(timeout)
			for time.Now().Before(deadline) {
				got := p.answer("app.gslb.example.com.", dns.TypeA)
				switch {
				case slices.Equal(got, []string{from}):
				case slices.Equal(got, []string{to}):
					at[i] = time.Now()
					return
				default:
					t.Errorf("site %s answered %v, neither %s nor %s", p.name, got, from, to)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
			t.Errorf("site %s still answers %s after %s", p.name, from, timeout)
		})
	}
	wg.Wait()
	return at
}

// TestSitesShareHealthOverDNS: three sites, the same YAML, a failover record with one backend
// per site. Every site answers site 1's backend; when it dies, every site answers site 2's
// within peer_interval + fall x interval (+ margin); when site 1's process dies while its
// backend lives, the other sites keep its backend until split_brain_threshold has passed since
// they last heard from it, and move to site 2's after it, not before.
func TestSitesShareHealthOverDNS(t *testing.T) {
	t.Parallel()
	backends := []string{"127.0.1.1", "127.0.1.2", "127.0.1.3"}
	procs := startSites(t, siteSetup{names: []string{"s1", "s2", "s3"}, backends: backends, yaml: failoverSites(backends)})
	waitAnswer(t, procs, 10*time.Second, "app.gslb.example.com.", dns.TypeA, backends[0])

	// Site 1's backend dies: site 1 sees it after fall x interval, the others one peer round later.
	addr := procs[0].backend.Addr().String()
	procs[0].backend.Close()
	died := time.Now()
	budget := sitePeerInterval + sitePeerTimeout + siteFall*siteScrape + siteScrape + siteMargin
	at := watchChange(t, procs, 5*time.Second, backends[0], backends[1])
	for i, a := range at {
		if took := a.Sub(died); !a.IsZero() && took > budget {
			t.Errorf("site %s moved to site 2's backend after %s, budget %s", procs[i].name, took, budget)
		}
	}

	// It comes back; then site 1's process dies with its backend alive.
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	go acceptAndClose(l)
	t.Cleanup(func() { l.Close() })
	waitAnswer(t, procs, 5*time.Second, "app.gslb.example.com.", dns.TypeA, backends[0])
	if err := procs[0].srv.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	at = watchChange(t, procs[1:], siteThreshold+5*time.Second, backends[0], backends[1])
	for i, a := range at {
		took := a.Sub(killed)
		t.Logf("site %s moved after %s (threshold %s)", procs[i+1].name, took, siteThreshold)
		if !a.IsZero() && took < siteThreshold {
			t.Errorf("site %s left the silent site's backend after %s, before split_brain_threshold %s", procs[i+1].name, took, siteThreshold)
		}
		if limit := siteThreshold + 2*sitePeerInterval + sitePeerTimeout + siteMargin; !a.IsZero() && took > limit {
			t.Errorf("site %s left the silent site's backend after %s, later than %s", procs[i+1].name, took, limit)
		}
	}
	var view []struct {
		Sites []struct{ Name, State string }
	}
	procs[1].getJSON(t, "/api/v1/sites", &view)
	if len(view) != 1 || !slices.ContainsFunc(view[0].Sites, func(s struct{ Name, State string }) bool { return s.Name == "s1" && s.State == "stale" }) {
		t.Errorf("the API of site 2 does not show s1 stale: %+v", view)
	}
	if v, _ := procs[1].metric(t, `coredns_gslb_site_peer_up{peer="`+procs[0].addr()+`",site="s1"}`); v != "0" {
		t.Errorf("site_peer_up of s1 at site 2 = %q, want 0", v)
	}
	if v, _ := procs[1].metric(t, `coredns_gslb_record_failover{record="app.gslb.example.com."}`); v != "1" {
		t.Errorf("record_failover at site 2 = %q, want 1", v)
	}
}

// TestSitesSurviveAHungSite: SIGSTOP keeps site 1's sockets open with nothing answering; the
// other sites keep its backend until split_brain_threshold, then move on. SIGCONT: it rejoins
// and the others return to its backend and stay there. Then every peer of site 2 goes silent
// while site 2's own backend is down: site 2 keeps the last known answer, degraded, in the
// metrics and the API.
func TestSitesSurviveAHungSite(t *testing.T) {
	t.Parallel()
	backends := []string{"127.0.2.1", "127.0.2.2", "127.0.2.3"}
	procs := startSites(t, siteSetup{names: []string{"s1", "s2", "s3"}, backends: backends, yaml: failoverSites(backends)})
	for _, p := range procs {
		t.Cleanup(func() { _ = p.srv.Signal(syscall.SIGCONT) }) // a stopped process cannot stop
	}
	waitAnswer(t, procs, 10*time.Second, "app.gslb.example.com.", dns.TypeA, backends[0])

	if err := procs[0].srv.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	for i, a := range watchChange(t, procs[1:], siteThreshold+5*time.Second, backends[0], backends[1]) {
		if took := a.Sub(stopped); !a.IsZero() && took < siteThreshold {
			t.Errorf("site %s left the hung site's backend after %s, before split_brain_threshold %s", procs[i+1].name, took, siteThreshold)
		}
	}

	if err := procs[0].srv.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitAnswer(t, procs, 5*time.Second, "app.gslb.example.com.", dns.TypeA, backends[0])
	// Rejoined, it stays: no site flaps back for a few rounds.
	for deadline := time.Now().Add(10 * sitePeerInterval); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, p := range procs {
			if got := p.answer("app.gslb.example.com.", dns.TypeA); !slices.Equal(got, []string{backends[0]}) {
				t.Fatalf("after the rejoin site %s answers %v, want %s", p.name, got, backends[0])
			}
		}
	}

	// Every peer of site 2 goes silent and its own backend dies: the last known answer stays.
	for _, p := range []*siteProc{procs[0], procs[2]} {
		if err := p.srv.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	procs[1].backend.Close()
	const degraded = `coredns_gslb_record_degraded{record="app.gslb.example.com."}`
	testutil.Eventually(t, siteThreshold+5*time.Second, func() bool { v, _ := procs[1].metric(t, degraded); return v == "1" },
		"site 2's record is not degraded with every peer silent")
	for deadline := time.Now().Add(5 * sitePeerInterval); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got := procs[1].answer("app.gslb.example.com.", dns.TypeA); !slices.Equal(got, []string{backends[0]}) {
			t.Fatalf("with every peer stale site 2 answers %v, want the last known %s", got, backends[0])
		}
	}
	var zone struct {
		Records []struct {
			Name     string
			Degraded bool
			Backends []struct{ Address, State string }
		}
	}
	procs[1].getJSON(t, "/api/v1/zones/gslb.example.com.", &zone)
	if len(zone.Records) != 1 || !zone.Records[0].Degraded || zone.Records[0].Backends[0].State != "stale" {
		t.Errorf("site 2's API does not show the record degraded with s1's backend stale: %+v", zone)
	}
}

// shares asks p for name A n times and returns the share of each address.
func shares(t *testing.T, p *siteProc, name string, n int) map[string]float64 {
	t.Helper()
	c := &dns.Client{Timeout: time.Second}
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	out := map[string]float64{}
	for range n {
		r, _, err := c.Exchange(m, p.srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range addresses(r) {
			out[a] += 1 / float64(n)
		}
	}
	return out
}

// checkShares fails unless every address's share is within 0.05 of want (more than five
// standard deviations for 2,000 answers).
func checkShares(t *testing.T, got, want map[string]float64) {
	t.Helper()
	for a, w := range want {
		if g := got[a]; g < w-0.05 || g > w+0.05 {
			t.Errorf("share of %s = %.3f, want %.3f ± 0.05 (all: %v)", a, g, w, got)
		}
	}
	for a := range got {
		if _, ok := want[a]; !ok {
			t.Errorf("%s answered, not expected (all: %v)", a, got)
		}
	}
}

// TestSitesPlaceholders: the k8gb form. Site us writes {site: eu, weight: 3} for whatever eu
// publishes, beside a backend of its own of weight 1: it answers eu's IPv4 and IPv6 targets,
// eu's weight shared among its targets, and follows eu's health.
func TestSitesPlaceholders(t *testing.T) {
	t.Parallel()
	extra := map[string]net.Listener{}
	for _, addr := range []string{"127.0.3.2", "::1"} {
		l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
		if err != nil {
			t.Fatal(err)
		}
		go acceptAndClose(l)
		t.Cleanup(func() { l.Close() })
		extra[addr] = l
	}
	port := func(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }
	yaml := func(i int, ports []int) string {
		if i == 0 { // eu: a plain zone file, no site: fields
			return fmt.Sprintf(`records:
  app.gslb.example.com.:
    scrape_interval: 200ms
    scrape_timeout: 100ms
    backends:
      - {address: 127.0.3.1, fall: 1, healthchecks: [{type: tcp, params: {port: %d}}]}
      - {address: 127.0.3.2, fall: 1, healthchecks: [{type: tcp, params: {port: %d}}]}
      - {address: "::1", fall: 1, healthchecks: [{type: tcp, params: {port: %d}}]}
`, ports[0], port(extra["127.0.3.2"]), port(extra["::1"]))
		}
		return fmt.Sprintf(`records:
  app.gslb.example.com.:
    mode: weighted
    scrape_interval: 200ms
    scrape_timeout: 100ms
    backends:
      - {address: 127.0.3.9, weight: 1, healthchecks: [{type: tcp, params: {port: %d}}]}
      - {site: eu, weight: 3}
`, ports[1])
	}
	procs := startSites(t, siteSetup{names: []string{"eu", "us"}, backends: []string{"127.0.3.1", "127.0.3.9"}, yaml: yaml})
	us := procs[1:]
	waitAnswer(t, us, 10*time.Second, "app.gslb.example.com.", dns.TypeAAAA, "::1")
	testutil.Eventually(t, 5*time.Second, func() bool { return len(shares(t, procs[1], "app.gslb.example.com.", 50)) == 3 },
		"us does not answer eu's two IPv4 targets and its own: %v", shares(t, procs[1], "app.gslb.example.com.", 50))
	checkShares(t, shares(t, procs[1], "app.gslb.example.com.", 2000), map[string]float64{"127.0.3.9": 0.25, "127.0.3.1": 0.375, "127.0.3.2": 0.375})

	// eu's IPv6 target dies: us stops answering it (NODATA: us has no IPv6 backend left).
	extra["::1"].Close()
	testutil.Eventually(t, 5*time.Second, func() bool { return len(procs[1].answer("app.gslb.example.com.", dns.TypeAAAA)) == 0 },
		"us still answers eu's dead IPv6 target: %v", procs[1].answer("app.gslb.example.com.", dns.TypeAAAA))
	var view []struct {
		Sites []struct {
			Name    string
			State   string
			Targets map[string][]string
		}
	}
	procs[1].getJSON(t, "/api/v1/sites", &view)
	if len(view) != 1 || len(view[0].Sites) != 1 || view[0].Sites[0].State != "fresh" ||
		!slices.Equal(view[0].Sites[0].Targets["app.gslb.example.com."], []string{"127.0.3.1", "127.0.3.2"}) {
		t.Errorf("us's API: %+v", view)
	}
}

// TestSitesWeightedPerBackend: the same YAML in two sites, a weighted record with a backend of
// weight 1 in s1 and one of weight 3 in s2: both sites answer in those proportions.
func TestSitesWeightedPerBackend(t *testing.T) {
	t.Parallel()
	backends := []string{"127.0.4.1", "127.0.4.2"}
	yaml := func(_ int, ports []int) string {
		return fmt.Sprintf(`records:
  app.gslb.example.com.:
    mode: weighted
    scrape_interval: 200ms
    backends:
      - {address: 127.0.4.1, site: s1, weight: 1, healthchecks: [{type: tcp, params: {port: %d}}]}
      - {address: 127.0.4.2, site: s2, weight: 3, healthchecks: [{type: tcp, params: {port: %d}}]}
`, ports[0], ports[1])
	}
	procs := startSites(t, siteSetup{names: []string{"s1", "s2"}, backends: backends, yaml: yaml})
	for _, p := range procs {
		testutil.Eventually(t, 10*time.Second, func() bool { return len(shares(t, p, "app.gslb.example.com.", 50)) == 2 },
			"site %s does not answer both backends", p.name)
		checkShares(t, shares(t, p, "app.gslb.example.com.", 2000), map[string]float64{"127.0.4.1": 0.25, "127.0.4.2": 0.75})
	}
}

// TestSitesTSIG: with peer_tsig, s1 and s2 share one key and learn each other's health; s3
// has another secret under the same name: it learns nothing, counts the failures, and is
// refused. dig without a key is refused the published names, and answered with the key.
func TestSitesTSIG(t *testing.T) {
	t.Parallel()
	const name, good, bad = "peers.example.com.", "c2VjcmV0LW9mLXRoZS1zaXRlcy0x", "YW5vdGhlci1zZWNyZXQtMg=="
	backends := []string{"127.0.5.1", "127.0.5.2", "127.0.5.3"}
	procs := startSites(t, siteSetup{names: []string{"s1", "s2", "s3"}, backends: backends, yaml: failoverSites(backends),
		extra: func(i int) string {
			secret := good
			if i == 2 {
				secret = bad
			}
			return fmt.Sprintf("  peer_tsig %s hmac-sha256 %s\n", name, secret)
		}})
	waitAnswer(t, procs[:2], 10*time.Second, "app.gslb.example.com.", dns.TypeA, backends[0])
	var view []struct{ Peers []peerJSON }
	testutil.Eventually(t, 5*time.Second, func() bool {
		procs[2].getJSON(t, "/api/v1/sites", &view)
		return len(view) == 1 && len(view[0].Peers) == 2 && view[0].Peers[0].Errors["tsig"] > 0 && view[0].Peers[1].Errors["tsig"] > 0
	}, "s3 does not count TSIG failures with both peers: %+v", view)
	if got := procs[2].answer("app.gslb.example.com.", dns.TypeA); !slices.Equal(got, []string{backends[2]}) {
		t.Errorf("s3, with the wrong key, answers %v: it learned from its peers", got)
	}
	if v, _ := procs[2].metric(t, `coredns_gslb_site_peer_exchange_errors_total{kind="tsig",peer="`+procs[0].addr()+`"`); v == "" || v == "0" {
		t.Errorf("s3's tsig error count for s1 = %q", v)
	}

	dig, err := exec.LookPath("dig")
	if err != nil {
		t.Skip("dig is not installed: make deps installs dnsutils") // the checks above ran
	}
	host, port, _ := net.SplitHostPort(procs[0].srv.Addr)
	for _, tt := range []struct {
		args   []string
		status string
	}{
		{nil, "REFUSED"},
		{[]string{"-y", "hmac-sha256:" + name + ":" + good}, "NOERROR"},
		{[]string{"-y", "hmac-sha256:" + name + ":" + bad}, ""}, // dig rejects the unsigned REFUSED itself
	} {
		args := append([]string{"@" + host, "-p", port, "+norec", "+tries=1", "+time=2", "localtargets-app.gslb.example.com.", "A"}, tt.args...)
		out, _ := exec.Command(dig, args...).CombinedOutput()
		if tt.status != "" && !strings.Contains(string(out), "status: "+tt.status) {
			t.Errorf("dig %v: want status %s:\n%s", tt.args, tt.status, out)
		}
		if tt.status == "NOERROR" && !strings.Contains(string(out), backends[0]) {
			t.Errorf("dig with the key does not get s1's target:\n%s", out)
		}
		if tt.status == "" && strings.Contains(string(out), "status: NOERROR") {
			t.Errorf("dig with the wrong key was answered:\n%s", out)
		}
	}
}

// TestSitesPeersFromNS: no site names its peers; each finds them in the delegation of its zone
// as the parent (a real authoritative server) serves it, with glue, and recognises itself by
// its own heartbeat. They share health as with explicit peers.
func TestSitesPeersFromNS(t *testing.T) {
	t.Parallel()
	hosts := []string{"127.0.7.1", "127.0.7.2", "127.0.7.3"}
	parent := testutil.StartAuthoritative(t, "example.com.",
		"gslb IN NS ns1.gslb", "gslb IN NS ns2.gslb", "gslb IN NS ns3.gslb",
		"ns1.gslb IN A "+hosts[0], "ns2.gslb IN A "+hosts[1], "ns3.gslb IN A "+hosts[2])
	backends := []string{"127.0.7.11", "127.0.7.12", "127.0.7.13"}
	procs := startSites(t, siteSetup{names: []string{"s1", "s2", "s3"}, backends: backends, yaml: failoverSites(backends), hosts: hosts,
		transport: func(int, []*siteProc) string { return "  peers_from_ns " + parent.Addr + "\n" }})
	waitAnswer(t, procs, 10*time.Second, "app.gslb.example.com.", dns.TypeA, backends[0])
	var view []struct{ Peers []peerJSON }
	testutil.Eventually(t, 5*time.Second, func() bool {
		procs[1].getJSON(t, "/api/v1/sites", &view)
		return len(view) == 1 && len(view[0].Peers) == 3 && !slices.ContainsFunc(view[0].Peers, func(p peerJSON) bool { return p.Site == "" })
	}, "s2 does not know the three name servers' sites: %+v", view)
	for i, pe := range view[0].Peers {
		if pe.Address != procs[i].addr() || pe.Site != procs[i].name || pe.Self != (i == 1) {
			t.Errorf("peer %d: %+v, want %s at %s, self %v", i, pe, procs[i].name, procs[i].addr(), i == 1)
		}
	}
	procs[0].backend.Close()
	waitAnswer(t, procs, 5*time.Second, "app.gslb.example.com.", dns.TypeA, backends[1])
}
