package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/admin/admintest"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// These tests run fleets of three meridian processes in quorum mode on one redis-server. Each
// instance n (1 to 3) probes from its own loopback address, probe_source 127.0.0.n. They serve
// app.example.org. (see fleetZone): the primary is a listener that answers the sources the test
// allows and hangs up on the others, so that each instance has its own view of it.

const (
	quorumInterval = time.Second
	quorumTimeout  = 500 * time.Millisecond
	appPrimaryKey  = "app.example.org.|127.0.0.1|0"
)

// selective is the primary backend: it writes "ok" to connections from the allowed sources and
// closes the others at once, which fails the check's expect.
type selective struct {
	l     net.Listener
	allow [4]atomic.Bool // by the last byte of 127.0.0.n
}

func listenSelective(t *testing.T) *selective {
	t.Helper()
	s := &selective{}
	s.l = testutil.ServeTCP(t, "127.0.0.1:0", func(c net.Conn) {
		from := c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap().As4()
		if n := from[3]; from[0] == 127 && int(n) < len(s.allow) && s.allow[n].Load() {
			_, _ = c.Write([]byte("ok\n"))
		}
	})
	return s
}

// reach sets the instances (1 to 3) that reach the primary.
func (s *selective) reach(instances ...int) {
	for n := 1; n < len(s.allow); n++ {
		s.allow[n].Store(slices.Contains(instances, n))
	}
}

func (s *selective) check() string {
	return fmt.Sprintf("{type: tcp, params: {port: %d, expect: ok}}", s.l.Addr().(*net.TCPAddr).Port)
}

// voter is one instance of a quorum fleet.
type voter struct {
	*testutil.Server
	n       int
	metrics string // the Prometheus endpoint
	api     string // the admin API, when enabled
}

// startVoter starts instance n on r, serving zone, with extra gslb lines; withAPI enables the
// admin API.
func startVoter(t *testing.T, r *testutil.Redis, zone string, n int, extra string, withAPI bool) *voter {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "zone.yml"), []byte(zone), 0o644); err != nil {
		t.Fatal(err)
	}
	v := &voter{n: n}
	metricsPort := testutil.FreePort(t)
	v.metrics = fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	if withAPI {
		apiPort := testutil.FreePort(t)
		v.api = fmt.Sprintf("http://127.0.0.1:%d", apiPort)
		extra += fmt.Sprintf("  api_enable\n  api_listen_port %d\n  api_overrides_file %s\n", apiPort, filepath.Join(dir, "overrides.json"))
	}
	v.Server = testutil.Start(t, dir, func(port int) string {
		return fmt.Sprintf(".:%d {\n bind 127.0.0.1\n prometheus 127.0.0.1:%d\n gslb {\n  zone example.org. %s\n"+
			"  redis_enable\n  redis_addr %s\n  redis_sync_mode quorum\n  probe_source 127.0.0.%d\n  redis_site site-%d\n%s }\n}\n",
			port, metricsPort, filepath.Join(dir, "zone.yml"), r.Addr, n, n, extra)
	})
	return v
}

// quorumFleet starts instances 1 to 3 serving the primary sel; extra gives each its gslb lines.
func quorumFleet(t *testing.T, r *testutil.Redis, sel *selective, extra func(n int) string) []*voter {
	t.Helper()
	zone := fleetZone(quorumInterval, quorumTimeout, 1, sel.check(), secondary(t))
	var fleet []*voter
	for n := 1; n <= 3; n++ {
		fleet = append(fleet, startVoter(t, r, zone, n, extra(n), n == 1))
	}
	return fleet
}

func noExtra(int) string { return "" }

func servers(fleet []*voter) []*testutil.Server {
	out := make([]*testutil.Server, len(fleet))
	for i, v := range fleet {
		out[i] = v.Server
	}
	return out
}

// keepAnswering checks that every instance answers want, and only want, for three intervals.
func keepAnswering(t *testing.T, fleet []*voter, want string) {
	t.Helper()
	for end := time.Now().Add(3 * quorumInterval); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		for _, v := range fleet {
			if got := appAnswer(t, v.Server); !slices.Equal(got, []string{want}) {
				t.Fatalf("instance %d answers %v, want %s\n%s", v.n, got, want, v.Logs())
			}
		}
	}
}

func TestQuorumFailoverNeedsAMajority(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t)
	sel := listenSelective(t)
	sel.reach(1, 2, 3)
	fleet := quorumFleet(t, r, sel, noExtra)
	allAnswer(t, servers(fleet), "127.0.0.1")

	// Instance 3 loses its path to the primary: one voter of three, and it stays up everywhere.
	sel.reach(1, 2)
	keepAnswering(t, fleet, "127.0.0.1")
	for _, v := range fleet {
		if scrape(t, v.metrics, `coredns_gslb_quorum_verdicts_total{verdict="down"}`) != 0 {
			t.Fatalf("instance %d took a down verdict:\n%s", v.n, v.Logs())
		}
	}
	// Unreachable from two of three: down everywhere.
	sel.reach(1)
	allAnswer(t, servers(fleet), "127.0.0.2")
	for _, v := range fleet {
		if !strings.Contains(v.Logs(), "is down: 2 of 3 voters down (2 needed)") {
			t.Fatalf("instance %d did not log the verdict:\n%s", v.n, v.Logs())
		}
	}
}

func TestQuorumIsolatedInstance(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t)
	canary, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { canary.Close() })
	go acceptAndClose(canary)
	closed := testutil.FreePort(t)
	sel := listenSelective(t)
	sel.reach(1, 2) // only instance 3 cannot reach the primary
	// One down voter would take the primary down (redis_quorum 1), but instance 3's canaries
	// fail: it is isolated, and its votes do not count.
	fleet := quorumFleet(t, r, sel, func(n int) string {
		target := canary.Addr().String()
		if n == 3 {
			target = fmt.Sprintf("127.0.0.1:%d", closed)
		}
		return fmt.Sprintf("  redis_quorum 1\n  redis_canary %s\n  redis_canary_interval 200ms\n", target)
	})
	isolated := fleet[2]
	if !strings.Contains(isolated.Logs(), "this instance is isolated: 1 of 1 canaries failed") {
		t.Fatalf("instance 3 is not isolated:\n%s", isolated.Logs())
	}
	allAnswer(t, servers(fleet), "127.0.0.1")
	keepAnswering(t, fleet, "127.0.0.1")
	if got := scrape(t, isolated.metrics, "coredns_gslb_quorum_isolated"); got != 1 {
		t.Fatalf("the isolated instance exports coredns_gslb_quorum_isolated %v", got)
	}
	if got := scrape(t, fleet[0].metrics, "coredns_gslb_quorum_isolated"); got != 0 {
		t.Fatalf("instance 1 exports coredns_gslb_quorum_isolated %v", got)
	}

	// The admin API shows every instance's vote, the isolated one marked.
	id := instanceID(t, isolated.Server)
	testutil.Eventually(t, 5*time.Second, func() bool {
		_, body := admintest.Call(t, http.DefaultClient, "GET", fleet[0].api+"/api/v1/backends?key="+appPrimaryKey, "")
		bs := admintest.Decode[[]admin.BackendStatus](t, body)
		if len(bs) != 1 || len(bs[0].Votes) != 3 {
			return false
		}
		for _, v := range bs[0].Votes {
			if v.Instance == id {
				return !v.OK && v.Isolated && v.Site == "site-3" && strings.HasPrefix(v.Reason, "tcp: expect")
			}
		}
		return false
	}, "the API does not show the isolated instance's vote")
}

// transitions returns the primary's states that the log of v enters after offset.
var primaryTransition = regexp.MustCompile(`backend 127\.0\.0\.1 of app\.example\.org\. is (\w+)`)

func transitions(v *voter, offset int) []string {
	var out []string
	for _, m := range primaryTransition.FindAllStringSubmatch(v.Logs()[offset:], -1) {
		out = append(out, m[1])
	}
	return out
}

func TestQuorumInstancesAgree(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t)
	sel := listenSelective(t)
	sel.reach(1, 2, 3)
	fleet := quorumFleet(t, r, sel, noExtra)
	all := servers(fleet)
	allAnswer(t, all, "127.0.0.1")
	offsets := make([]int, len(fleet))
	for i, v := range fleet {
		offsets[i] = len(v.Logs())
	}
	steps := []struct {
		reach []int
		want  string
	}{
		{[]int{1}, "127.0.0.2"},
		{[]int{1, 2}, "127.0.0.1"},
		{[]int{2}, "127.0.0.2"},
		{[]int{1, 2, 3}, "127.0.0.1"},
		{[]int{1}, "127.0.0.2"},
	}
	for _, s := range steps {
		sel.reach(s.reach...)
		allAnswer(t, all, s.want)
	}
	want := []string{"down", "up", "down", "up", "down"}
	for i, v := range fleet {
		if got := transitions(v, offsets[i]); !slices.Equal(got, want) {
			t.Fatalf("instance %d went %v, want %v\n%s", v.n, got, want, v.Logs())
		}
	}

	// Instance 3, one of the two down voters, dies. Once its votes expire, one up and one down
	// vote are no majority: the primary is up again.
	if err := fleet[2].Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	allAnswer(t, all[:2], "127.0.0.1")
	if took := time.Since(killed); took < quorumInterval {
		t.Fatalf("the verdict changed %s after the voter died, before its votes expired", took)
	}
	for _, v := range fleet[:2] {
		if !strings.Contains(v.Logs(), "is up: 1 of 2 voters down (2 needed)") {
			t.Fatalf("instance %d did not log the verdict of two voters:\n%s", v.n, v.Logs())
		}
	}
}

func TestQuorumWithoutRedis(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t)
	sel := listenSelective(t)
	sel.reach(1, 2) // instance 3 cannot reach the primary: up by the fleet's verdict
	fleet := quorumFleet(t, r, sel, noExtra)
	allAnswer(t, servers(fleet), "127.0.0.1")

	// Query every instance all along: not one query may fail.
	defer queryAllAlong(t, servers(fleet), "app.example.org.")()

	r.Kill()
	// Alone, each instance decides from its own results: instance 3 fails over, the others not.
	allAnswer(t, servers(fleet[2:]), "127.0.0.2")
	keepAnswering(t, fleet[:2], "127.0.0.1")
	for _, v := range fleet {
		if !strings.Contains(v.Logs(), "lost Redis") || !strings.Contains(v.Logs(), "decided from this instance's own results") {
			t.Fatalf("instance %d did not log its fallback:\n%s", v.n, v.Logs())
		}
		if got := scrape(t, v.metrics, "coredns_gslb_quorum_degraded_checks"); got != 2 {
			t.Fatalf("instance %d exports coredns_gslb_quorum_degraded_checks %v, want both checks", v.n, got)
		}
	}
}
