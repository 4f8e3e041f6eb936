package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/admin/admintest"
	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// The record of these tests: www.example.org., failover from 127.0.0.1 (dc-a) to 127.0.0.2
// (dc-b), both probed over TCP every 200 ms, rise and fall 1.
const (
	primaryKey   = "www.example.org.|127.0.0.1|0"
	secondaryKey = "www.example.org.|127.0.0.2|0"
)

// site is a backend's TCP listener, which its health check connects to.
type site struct {
	addr string
	l    net.Listener
}

// startSite listens on a free port of host and accepts health checks until the test ends.
func startSite(t *testing.T, host string) *site {
	t.Helper()
	l, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	s := &site{addr: l.Addr().String(), l: l}
	go acceptAndClose(l)
	t.Cleanup(func() { s.l.Close() })
	return s
}

func (s *site) port() int { return s.l.Addr().(*net.TCPAddr).Port }

// fail closes the listener: the health checks are refused.
func (s *site) fail() { s.l.Close() }

func wwwZone(primary, secondary *site) string {
	return fmt.Sprintf(`
records:
  www.example.org.:
    mode: failover
    scrape_interval: 200ms
    scrape_timeout: 100ms
    backends:
      - address: 127.0.0.1
        priority: 1
        location: dc-a
        tags: [prod, blue]
        rise: 1
        fall: 1
        healthchecks: [{type: tcp, params: {port: %d}}]
      - address: 127.0.0.2
        priority: 2
        location: dc-b
        tags: [prod]
        rise: 1
        fall: 1
        healthchecks: [{type: tcp, params: {port: %d}}]
`, primary.port(), secondary.port())
}

// apiServer is a meridian process that serves the admin API.
type apiServer struct {
	*testutil.Server
	url    string // the API's root URL
	client *admin.Client
}

// startWithAPI serves yaml as example.org. with the admin API on a free loopback port, the
// overrides kept in overrides, and the extra api_* lines.
func startWithAPI(t *testing.T, yaml, overrides string, extra ...string) *apiServer {
	t.Helper()
	port := testutil.FreePort(t)
	lines := fmt.Sprintf("  api_enable\n  api_listen_port %d\n  api_overrides_file %s\n", port, overrides)
	for _, l := range extra {
		lines += "  " + l + "\n"
	}
	s := &apiServer{Server: serveZone(t, yaml, lines), url: fmt.Sprintf("http://127.0.0.1:%d", port)}
	s.client = &admin.Client{BaseURL: s.url, HTTP: &http.Client{Timeout: 5 * time.Second}}
	return s
}

// answer returns the A records the server answers for www.example.org.
func (s *apiServer) answer(t *testing.T) []string {
	return addresses(s.Query(t, "udp", "www.example.org", dns.TypeA))
}

// waitAnswer waits until www.example.org answers want alone, or fails after a deadline.
func (s *apiServer) waitAnswer(t *testing.T, want string) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() bool {
		a := s.answer(t)
		return len(a) == 1 && a[0] == want
	}, "www.example.org does not answer %s alone:\n%s", want, s.Logs())
}

// backend returns the backend key of the API's status.
func (s *apiServer) backend(t *testing.T, key string) admin.BackendStatus {
	t.Helper()
	bs, err := s.client.Backends(context.Background(), admin.Selector{Keys: []string{key}}, "")
	if err != nil || len(bs) != 1 {
		t.Fatalf("backend %s: %v, %v\n%s", key, bs, err, s.Logs())
	}
	return bs[0]
}

// waitState waits until the API reports key in state.
func (s *apiServer) waitState(t *testing.T, key string, state admin.State) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() bool { return s.backend(t, key).State == state },
		"%s is %s, want %s\n%s", key, s.backend(t, key).State, state, s.Logs())
}

func TestAdminAPIEndToEnd(t *testing.T) {
	t.Parallel()
	primary, secondary := startSite(t, "127.0.0.1"), startSite(t, "127.0.0.2")
	s := startWithAPI(t, wwwZone(primary, secondary), filepath.Join(t.TempDir(), "overrides.json"))
	ctx := context.Background()
	hc := http.DefaultClient
	s.waitState(t, primaryKey, admin.StateUp)
	s.waitState(t, secondaryKey, admin.StateUp)
	if got := s.answer(t); !slices.Equal(got, []string{"127.0.0.1"}) {
		t.Fatalf("answer %v, want the primary", got)
	}

	// The endpoints of CoreDNS-GSLB.
	if code, body := admintest.Call(t, hc, "GET", s.url+"/api/overview", ""); code != 200 || !strings.Contains(body, `"www.example.org."`) || !strings.Contains(body, `"alive": "healthy"`) {
		t.Fatalf("GET /api/overview: %d %s", code, body)
	}
	if code, body := admintest.Call(t, hc, "GET", s.url+"/api/overview/example.net.", ""); code != 404 || !strings.Contains(body, "Zone not found") {
		t.Errorf("unknown zone: %d %s", code, body)
	}
	code, body := admintest.Call(t, hc, "POST", s.url+"/api/backends/disable", `{"location":"dc-a"}`)
	if code != 200 || !strings.Contains(body, `"disabled": 1`) {
		t.Fatalf("disable dc-a: %d %s", code, body)
	}
	// When the API has answered, so do the DNS answers.
	if got := s.answer(t); !slices.Equal(got, []string{"127.0.0.2"}) {
		t.Fatalf("answer after disabling dc-a: %v", got)
	}
	if b := s.backend(t, primaryKey); b.Override == nil || b.Override.Action != overlay.Disable || b.Healthy || b.State != admin.StateUp {
		t.Fatalf("disabled primary: %+v", b)
	}

	// Bad requests change nothing.
	for _, c := range []struct {
		path, body string
		code       int
	}{
		{"/api/backends/enable", `{"location":"dc-mars"}`, http.StatusUnprocessableEntity},
		{"/api/backends/enable", `{"location":`, http.StatusBadRequest},
		{"/api/backends/enable", `{}`, http.StatusBadRequest},
		{"/api/v1/backends/drain", `{"keys":["` + secondaryKey + `","www.example.org.|192.0.2.99|0"]}`, http.StatusUnprocessableEntity},
		{"/api/v1/backends/drain", `{"zone":"example.net.","tags":["prod"]}`, http.StatusUnprocessableEntity},
	} {
		if code, body := admintest.Call(t, hc, "POST", s.url+c.path, c.body); code != c.code {
			t.Errorf("POST %s %s: %d %s, want %d", c.path, c.body, code, body, c.code)
		}
	}
	_, body = admintest.Call(t, hc, "GET", s.url+"/api/v1/overrides", "")
	if o := admintest.Decode[[]overlay.Override](t, body); len(o) != 1 || o[0].Key != primaryKey {
		t.Fatalf("overrides after refused requests: %s", body)
	}
	code, _ = admintest.Call(t, hc, "POST", s.url+"/api/backends/enable", `{"tags":["blue"]}`)
	if code != 200 || !slices.Equal(s.answer(t), []string{"127.0.0.1"}) {
		t.Fatalf("enable by tag: %d, answer %v", code, s.answer(t))
	}

	// Drain with an expiry; it ends by itself.
	res, err := s.client.Act(ctx, overlay.Drain, admin.ActionRequest{Selector: admin.Selector{Keys: []string{primaryKey}}, Duration: "2s", Reason: "e2e"})
	if err != nil || len(res.Backends) != 1 || !slices.Equal(s.answer(t), []string{"127.0.0.2"}) {
		t.Fatalf("drain: %+v, %v, answer %v", res, err, s.answer(t))
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return slices.Equal(s.answer(t), []string{"127.0.0.1"}) },
		"the drain did not expire: answer %v", s.answer(t))

	// Health: the primary goes down, with a reason, a transition and a failover.
	primary.fail()
	s.waitState(t, primaryKey, admin.StateDown)
	if b := s.backend(t, primaryKey); b.Reason == "" || b.LastCheck.IsZero() || b.LastChange.IsZero() || b.LastOK {
		t.Errorf("down primary: %+v", b)
	}
	_, body = admintest.Call(t, hc, "GET", s.url+"/api/v1/transitions?limit=10", "")
	if trans := admintest.Decode[[]admin.Transition](t, body); len(trans) == 0 || trans[0].Backend != primaryKey || trans[0].To != admin.StateDown {
		t.Errorf("transitions = %s", body)
	}

	// Explain: the answer and its steps.
	exp, err := s.client.Explain(ctx, admin.Query{Name: "www.example.org", Type: "A"})
	if err != nil || exp.Rcode != "NOERROR" || len(exp.Answer) != 1 || !strings.Contains(exp.Answer[0], "127.0.0.2") || len(exp.Steps) == 0 || exp.Record != "www.example.org." {
		t.Errorf("explain: %+v, %v", exp, err)
	}

	// Reload: a good file, then a bad one that keeps the previous configuration serving.
	if r, err := s.client.Reload(ctx); err != nil || !r.OK {
		t.Errorf("reload: %+v, %v", r, err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "zone.yml"), []byte("records: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := s.client.Reload(ctx); err == nil || r.OK {
		t.Errorf("reload of a bad file: %+v, %v", r, err)
	}
	if got := s.answer(t); !slices.Equal(got, []string{"127.0.0.2"}) {
		t.Errorf("after a failed reload the answer is %v", got)
	}
	for _, probe := range []string{"/livez", "/readyz"} {
		if code, body := admintest.Call(t, hc, "GET", s.url+probe, ""); code != 200 {
			t.Errorf("%s: %d %s", probe, code, body)
		}
	}
}

func TestAdminAPIAuthenticationAndTLS(t *testing.T) {
	t.Parallel()
	primary, secondary := startSite(t, "127.0.0.1"), startSite(t, "127.0.0.2")
	certFile, keyFile, tlsClient := admintest.Certificate(t, t.TempDir())
	s := startWithAPI(t, wwwZone(primary, secondary), filepath.Join(t.TempDir(), "overrides.json"),
		"api_tls_cert "+certFile, "api_tls_key "+keyFile, "api_basic_user ops", "api_basic_pass hunter2", "api_token s3cret")
	url := strings.Replace(s.url, "http:", "https:", 1)
	for _, c := range []struct {
		header []string
		code   int
	}{
		{nil, http.StatusUnauthorized},
		{[]string{"Authorization", "Bearer wrong"}, http.StatusUnauthorized},
		{[]string{"Authorization", "Bearer s3cret"}, http.StatusOK},
	} {
		if code, body := admintest.Call(t, tlsClient, "GET", url+"/api/v1/zones", "", c.header...); code != c.code {
			t.Errorf("%v: %d %s, want %d", c.header, code, body, c.code)
		}
	}
	req, _ := http.NewRequest("GET", url+"/api/overview", nil)
	req.SetBasicAuth("ops", "hunter2")
	if resp, err := tlsClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("basic auth over TLS: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// meridian ctl, with the CA and the token from the environment.
	out, err := ctlBinary(t, []string{"MERIDIAN_API=" + url, "MERIDIAN_API_TOKEN=s3cret", "MERIDIAN_API_CACERT=" + certFile}, "status", "-location", "dc-a")
	if err != nil || !strings.Contains(out, "127.0.0.1") || strings.Contains(out, "127.0.0.2") {
		t.Errorf("ctl status over TLS: %v\n%s", err, out)
	}
	if out, err := ctlBinary(t, []string{"MERIDIAN_API=" + url, "MERIDIAN_API_CACERT=" + certFile}, "status"); err == nil || !strings.Contains(out, "401") {
		t.Errorf("ctl without credentials: %v\n%s", err, out)
	}
}

func TestAdminAPIRefusesAnOpenAddressWithoutAuthentication(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	zone := filepath.Join(dir, "zone.yml")
	if err := os.WriteFile(zone, []byte("records: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	corefile := filepath.Join(dir, "Corefile")
	if err := os.WriteFile(corefile, []byte(fmt.Sprintf(".:%d {\n gslb {\n  zone example.org. %s\n  api_enable\n  api_listen_addr 0.0.0.0\n  api_overrides_file %s\n }\n}\n",
		testutil.FreePort(t), zone, filepath.Join(dir, "overrides.json"))), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := testutil.Command(t, "check", "-conf", corefile)
	if err == nil || !strings.Contains(out, "without authentication") {
		t.Errorf("check: %v\n%s", err, out)
	}
	cmd := exec.Command(testutil.Binary(t), "-conf", corefile)
	done := make(chan error, 1)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(logs.String(), "without authentication") {
			t.Errorf("meridian exited with %v:\n%s", err, logs.String())
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("meridian started on 0.0.0.0 without authentication:\n%s", logs.String())
	}
}

func TestOverridesSurviveReloadAndRestart(t *testing.T) {
	t.Parallel()
	primary, secondary := startSite(t, "127.0.0.1"), startSite(t, "127.0.0.2")
	overrides := filepath.Join(t.TempDir(), "overrides.json")
	s := startWithAPI(t, wwwZone(primary, secondary), overrides)
	s.waitState(t, primaryKey, admin.StateUp)
	if _, err := s.client.Act(context.Background(), overlay.Disable, admin.ActionRequest{Selector: admin.Selector{Keys: []string{primaryKey}}}); err != nil {
		t.Fatal(err)
	}
	if got := s.answer(t); !slices.Equal(got, []string{"127.0.0.2"}) {
		t.Fatalf("after disable: %v", got)
	}

	// A Corefile reload: the listener is neither lost nor bound twice, the override stays.
	if err := s.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return strings.Contains(s.Logs(), "Reloading complete") },
		"no reload:\n%s", s.Logs())
	for range 20 {
		if got := s.answer(t); !slices.Equal(got, []string{"127.0.0.2"}) {
			t.Fatalf("after a Corefile reload the answer is %v", got)
		}
	}
	if b := s.backend(t, primaryKey); b.Override == nil || b.Override.Action != overlay.Disable {
		t.Fatalf("after a Corefile reload: %+v", b)
	}
	// The listener has SO_REUSEPORT (for binary upgrades): a second bind would not fail, but
	// it would be logged.
	if n := strings.Count(s.Logs(), "admin API at "); n != 1 {
		t.Fatalf("the API was bound %d times:\n%s", n, s.Logs())
	}

	// A restart reads the overrides back: the backend is out of the answers from the start.
	s.Stop()
	again := startWithAPI(t, wwwZone(primary, secondary), overrides)
	again.waitState(t, primaryKey, admin.StateUp)
	if got := again.answer(t); !slices.Equal(got, []string{"127.0.0.2"}) {
		t.Fatalf("after a restart: %v", got)
	}
	if data, err := os.ReadFile(overrides); err != nil || !strings.Contains(string(data), primaryKey) {
		t.Fatalf("overrides file: %v\n%s", err, data)
	}
}

// ctlBinary runs meridian ctl in the built binary with env added to the test's environment.
func ctlBinary(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(testutil.Binary(t), append([]string{"ctl"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestCtlAgainstTheBinary(t *testing.T) {
	t.Parallel()
	primary, secondary := startSite(t, "127.0.0.1"), startSite(t, "127.0.0.2")
	s := startWithAPI(t, wwwZone(primary, secondary), filepath.Join(t.TempDir(), "overrides.json"))
	s.waitState(t, primaryKey, admin.StateUp)
	env := []string{"MERIDIAN_API=" + s.url}
	run := func(args ...string) string {
		t.Helper()
		out, err := ctlBinary(t, env, args...)
		if err != nil {
			t.Fatalf("ctl %v: %v\n%s", args, err, out)
		}
		return out
	}
	if out := run("status"); !strings.Contains(out, "127.0.0.1") || !strings.Contains(out, "up") {
		t.Errorf("status:\n%s", out)
	}
	if out := run("drain", "-location", "dc-a", "-for", "1h", "-reason", "ctl e2e"); !strings.Contains(out, "drain: 1 backends until") {
		t.Errorf("drain:\n%s", out)
	}
	if got := s.answer(t); !slices.Equal(got, []string{"127.0.0.2"}) {
		t.Errorf("answer after ctl drain: %v", got)
	}
	if out := run("status", "-o", "json", "-tags", "blue"); !strings.Contains(out, `"action": "drain"`) {
		t.Errorf("status -o json:\n%s", out)
	}
	if out := run("explain", "www.example.org", "-client", "192.0.2.1"); !strings.Contains(out, "127.0.0.2") || !strings.Contains(out, "STEPS") {
		t.Errorf("explain:\n%s", out)
	}
	run("clear", "-key", primaryKey)
	if got := s.answer(t); !slices.Equal(got, []string{"127.0.0.1"}) {
		t.Errorf("answer after ctl clear: %v", got)
	}
	if out := run("reload"); !strings.Contains(out, "reloaded") {
		t.Errorf("reload:\n%s", out)
	}
	if out, err := ctlBinary(t, env, "disable", "-location", "dc-mars"); err == nil || !strings.Contains(out, "no backend matches") {
		t.Errorf("disable matching nothing: %v\n%s", err, out)
	}
}

func TestOverridesApplyAcrossTheCluster(t *testing.T) {
	t.Parallel()
	primary, secondary := startSite(t, "127.0.0.1"), startSite(t, "127.0.0.2")
	r := testutil.StartRedis(t)
	ctx := context.Background()
	zone := wwwZone(primary, secondary)
	files := []string{filepath.Join(t.TempDir(), "overrides.json"), filepath.Join(t.TempDir(), "overrides.json")}
	start := func(i int) *apiServer {
		return startWithAPI(t, zone, files[i], "redis_enable", "redis_addr "+r.Addr)
	}
	fleet := []*apiServer{start(0), start(1)}
	for _, s := range fleet {
		s.waitState(t, primaryKey, admin.StateUp)
	}
	if _, err := fleet[0].client.Act(ctx, overlay.Disable, admin.ActionRequest{Selector: admin.Selector{Location: "dc-a"}}); err != nil {
		t.Fatal(err)
	}
	// On the instance that made the change as soon as the API answered, on the others at once.
	if got := fleet[0].answer(t); !slices.Equal(got, []string{"127.0.0.2"}) {
		t.Fatalf("instance 0 answers %v when its API answered", got)
	}
	for i, s := range fleet {
		testutil.Eventually(t, 5*time.Second, func() bool { return slices.Equal(s.answer(t), []string{"127.0.0.2"}) },
			"instance %d answers %v after a disable on instance 0", i, s.answer(t))
		if b := s.backend(t, primaryKey); b.Override == nil || b.Override.Action != overlay.Disable {
			t.Errorf("instance %d: override %+v", i, b.Override)
		}
	}
	if v, err := r.Client(t).HGet(ctx, "gslb:overrides", primaryKey).Result(); err != nil || !strings.Contains(v, `"disable"`) {
		t.Fatalf("the override in Redis: %q, %v", v, err)
	}

	// A restarted instance reads the override back from Redis: out of its answers from the start.
	fleet[1].Stop()
	fleet[1] = start(1)
	fleet[1].waitState(t, primaryKey, admin.StateUp)
	if got := fleet[1].answer(t); !slices.Equal(got, []string{"127.0.0.2"}) {
		t.Fatalf("the restarted instance answers %v", got)
	}
	// A clear through it reaches the other.
	if _, err := fleet[1].client.Act(ctx, overlay.Clear, admin.ActionRequest{Selector: admin.Selector{Keys: []string{primaryKey}}}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return slices.Equal(fleet[0].answer(t), []string{"127.0.0.1"}) },
		"instance 0 answers %v after a clear on instance 1", fleet[0].answer(t))
	// The overrides are in Redis only: the overrides files are never written.
	for _, f := range files {
		if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("overrides file %s in cluster mode: %v", f, err)
		}
	}
}
