package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
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
	port    int
	api     int
	metrics int
	backend net.Listener // nil when the site has no backend of its own
}

// siteSetup describes the sites of a test: their names, each site's zone file (given every
// site's backend port), the extra Corefile lines of each, and the backend address of each
// (empty for none).
type siteSetup struct {
	names    []string
	backends []string
	yaml     func(i int, ports []int) string
	extra    func(i int) string
}

// startSites starts a tcp listener for each site's backend and one meridian per site on
// loopback, each naming the others as peers.
func startSites(t *testing.T, s siteSetup) []*siteProc {
	t.Helper()
	n := len(s.names)
	procs := make([]*siteProc, n)
	backendPorts := make([]int, n)
	for i := range n {
		procs[i] = &siteProc{name: s.names[i], port: testutil.FreePort(t), api: testutil.FreePort(t), metrics: testutil.FreePort(t)}
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
				peers = append(peers, fmt.Sprintf("127.0.0.1:%d", q.port))
			}
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
 bind 127.0.0.1
 prometheus 127.0.0.1:%d
 gslb {
  zone gslb.example.com. %s
  site %s
  peers %s
  peer_interval %s
  peer_timeout %s
  split_brain_threshold %s
  api_enable
  api_listen_port %d
%s }
}
`, p.port, p.metrics, zone, p.name, strings.Join(peers, " "), sitePeerInterval, sitePeerTimeout, siteThreshold, p.api, extra)
		p.srv = testutil.StartOnPort(t, dir, p.port, corefile, 15*time.Second)
	}
	return procs
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
	if v, _ := procs[1].metric(t, `coredns_gslb_site_peer_up{peer="127.0.0.1:`+fmt.Sprint(procs[0].port)+`",site="s1"}`); v != "0" {
		t.Errorf("site_peer_up of s1 at site 2 = %q, want 0", v)
	}
	if v, _ := procs[1].metric(t, `coredns_gslb_record_failover{record="app.gslb.example.com."}`); v != "1" {
		t.Errorf("record_failover at site 2 = %q, want 1", v)
	}
}
