package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/admin/admintest"
	"github.com/meridian-gslb/meridian/internal/overlay"
)

// ctlProvider is an admin.Provider with one record of two backends.
type ctlProvider struct {
	mu        sync.Mutex
	reloadErr error
}

func (*ctlProvider) Status() []admin.Zone {
	changed := time.Now().Add(-90 * time.Second)
	return []admin.Zone{{Name: "example.org.", Records: []admin.Record{{
		Name: "www.example.org.", Mode: "failover", Fallback: "fail-open", Healthy: 1,
		Backends: []admin.Backend{
			{Key: "www.example.org.|192.0.2.1|443", Address: "192.0.2.1", Port: 443, Location: "dc-eu", Tags: []string{"prod"},
				Enabled: true, Healthy: true, State: admin.StateUp, LastOK: true, Latency: admin.Millis(2 * time.Millisecond), LastChange: changed},
			{Key: "www.example.org.|2001:db8::1|443", Address: "2001:db8::1", Port: 443, Location: "dc-us",
				Enabled: true, State: admin.StateDown, Reason: "connection refused", LastChange: changed},
		},
	}}}}
}

func (*ctlProvider) Transitions(int) []admin.Transition { return nil }

func (*ctlProvider) Explain(_ context.Context, q admin.Query) (admin.Explanation, error) {
	return admin.Explanation{Zone: "example.org.", Record: q.Name, Rcode: "NOERROR",
		Answer: []string{"www.example.org.\t30\tIN\tA\t192.0.2.1"},
		Steps: []admin.Step{
			{Stage: "health", Text: "1 of 2 backends is up", Backends: []string{"www.example.org.|192.0.2.1|443"}},
			{Stage: "policy", Text: "failover picks the lowest priority", Fields: map[string]string{"priority": "0", "mode": "failover"}},
		}}, nil
}

func (p *ctlProvider) Reload() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reloadErr
}

func (*ctlProvider) Ready() bool { return true }

type discardLog struct{}

func (discardLog) Infof(string, ...any)  {}
func (discardLog) Errorf(string, ...any) {}

// startCtlAPI serves an admin API for ctlProvider on a free loopback port.
func startCtlAPI(t *testing.T, cfg admin.Config) (*ctlProvider, *overlay.Memory, string) {
	t.Helper()
	store := overlay.NewMemory(overlay.SystemClock{})
	s, err := admin.Listen("127.0.0.1:0", cfg, store, discardLog{})
	if err != nil {
		t.Fatal(err)
	}
	s.Serve()
	t.Cleanup(func() { s.Close() })
	p := &ctlProvider{}
	s.Register([]string{"example.org."}, p)
	return p, store, s.Addr().String()
}

// ctl runs meridian ctl with args and env, and returns its exit code, stdout and stderr.
func ctl(env map[string]string, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := runCtl(args, func(k string) string { return env[k] }, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestCtlStatus(t *testing.T) {
	_, _, addr := startCtlAPI(t, admin.Config{})
	env := map[string]string{"MERIDIAN_API": "http://" + addr}
	code, out, errOut := ctl(env, "status")
	if code != 0 {
		t.Fatalf("status: %d %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "RECORD") {
		t.Fatalf("status table:\n%s", out)
	}
	for _, want := range [][]string{
		{"www.example.org.", "192.0.2.1:443", "up", "yes", "-", "2ms", "1m30s ago", "-"},
		{"www.example.org.", "[2001:db8::1]:443", "down", "no", "-", "-", "1m30s ago", "connection refused"},
	} {
		found := false
		for _, l := range lines[1:] {
			found = found || strings.Join(strings.Fields(l), " ") == strings.Join(want, " ")
		}
		if !found {
			t.Errorf("no row %v in\n%s", want, out)
		}
	}

	// Filters, JSON, and flags after the command; the address without scheme.
	code, out, errOut = ctl(nil, "status", "-state", "down", "-o", "json", "-api", addr)
	var backends []admin.BackendStatus
	if code != 0 || json.Unmarshal([]byte(out), &backends) != nil || len(backends) != 1 || backends[0].Reason != "connection refused" {
		t.Fatalf("status -state down -o json: %d %s %s", code, out, errOut)
	}
}

func TestCtlActions(t *testing.T) {
	_, store, addr := startCtlAPI(t, admin.Config{})
	env := map[string]string{"MERIDIAN_API": "http://" + addr}

	code, out, errOut := ctl(env, "drain", "-location", "dc-eu", "-for", "30m", "-reason", "kernel upgrade")
	if code != 0 || !strings.Contains(out, "drain: 1 backends until") || !strings.Contains(out, "www.example.org.|192.0.2.1|443") {
		t.Fatalf("drain: %d\n%s%s", code, out, errOut)
	}
	if o, ok := store.Get("www.example.org.|192.0.2.1|443"); !ok || o.Action != overlay.Drain || o.Reason != "kernel upgrade" || o.Expires.IsZero() {
		t.Fatalf("override after drain: %+v", o)
	}
	if _, out, _ := ctl(env, "status", "-tags", "prod"); !strings.Contains(out, "drain until") {
		t.Errorf("status does not show the drain:\n%s", out)
	}
	if code, out, _ := ctl(env, "disable", "-key", "www.example.org.|2001:db8::1|443", "-o", "json"); code != 0 || !strings.Contains(out, `"action": "disable"`) {
		t.Errorf("disable -key: %d %s", code, out)
	}
	if code, _, errOut := ctl(env, "clear", "-record", "www.example.org"); code != 0 || len(store.List()) != 0 {
		t.Errorf("clear: %d %s, %d overrides left", code, errOut, len(store.List()))
	}

	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"disable", "-location", "dc-mars"}, 1, "no backend matches location=dc-mars"},
		{[]string{"disable"}, 1, "empty selector"},
		{[]string{"drain", "-zone", "example.org", "-for", "soon"}, 1, "duration"},
		{[]string{"disable", "extra", "-location", "dc-eu"}, 2, `unexpected argument "extra"`},
		{[]string{"clear", "-for", "1h", "-location", "dc-eu"}, 2, "flag provided but not defined: -for"},
	} {
		code, _, errOut := ctl(env, c.args...)
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: %d %q, want %d with %q", c.args, code, errOut, c.code, c.msg)
		}
	}
	if len(store.List()) != 0 {
		t.Fatalf("refused commands left overrides: %+v", store.List())
	}
}

func TestCtlExplainAndReload(t *testing.T) {
	p, _, addr := startCtlAPI(t, admin.Config{})
	env := map[string]string{"MERIDIAN_API": "http://" + addr}
	code, out, errOut := ctl(env, "explain", "www.example.org", "-type", "aaaa", "-client", "192.0.2.9", "-ecs", "198.51.100.0/24")
	for _, want := range []string{
		"www.example.org. AAAA from 192.0.2.9 (ECS 198.51.100.0/24): NOERROR, zone example.org., record www.example.org.",
		"ANSWER www.example.org. 30 IN A 192.0.2.1 STEPS", "2. policy failover picks the lowest priority mode=failover priority=0",
		"backends: www.example.org.|192.0.2.1|443",
	} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("explain output lacks %q:\n%s%s", want, out, errOut)
		}
	}
	if code != 0 {
		t.Fatalf("explain: %d %s", code, errOut)
	}
	for _, args := range [][]string{{"explain"}, {"explain", "a.example.org", "b.example.org"}, {"explain", "x.example.org", "-client", "nobody"}} {
		if code, _, _ := ctl(env, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code, _, errOut := ctl(env, "explain", "www.example.net"); code != 1 || !strings.Contains(errOut, "no zone served here") {
		t.Errorf("explain outside the zones: %d %s", code, errOut)
	}

	if code, out, _ := ctl(env, "reload"); code != 0 || !strings.Contains(out, "example.org.  reloaded") {
		t.Errorf("reload: %d %s", code, out)
	}
	p.mu.Lock()
	p.reloadErr = errors.New("example.org.yml:4:3: mode: unknown mode")
	p.mu.Unlock()
	code, out, errOut = ctl(env, "reload")
	if code != 1 || !strings.Contains(out, "unknown mode") || !strings.Contains(errOut, "previous configuration") {
		t.Errorf("failed reload: %d\n%s%s", code, out, errOut)
	}
}

func TestCtlConnection(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := admintest.Certificate(t, dir)
	_, _, addr := startCtlAPI(t, admin.Config{TLSCert: certFile, TLSKey: keyFile, BasicUser: "ops", BasicPass: "pw", Token: "tok"})
	url := "https://" + addr
	for _, c := range []struct {
		env  map[string]string
		args []string
		code int
		msg  string
	}{
		{map[string]string{"MERIDIAN_API": url, "MERIDIAN_API_TOKEN": "tok", "MERIDIAN_API_CACERT": certFile}, nil, 0, ""},
		{map[string]string{"MERIDIAN_API": url, "MERIDIAN_API_USER": "ops", "MERIDIAN_API_PASSWORD": "pw"}, []string{"-cacert", certFile}, 0, ""},
		{map[string]string{"MERIDIAN_API_TOKEN": "tok"}, []string{"-api", url, "-insecure"}, 0, ""},
		{map[string]string{"MERIDIAN_API": url, "MERIDIAN_API_TOKEN": "bad"}, []string{"-insecure"}, 1, "401 Unauthorized"},
		{map[string]string{"MERIDIAN_API": url}, []string{"-insecure", "-user", "ops", "-password", "wrong"}, 1, "401"},
		{map[string]string{"MERIDIAN_API": url, "MERIDIAN_API_TOKEN": "tok"}, nil, 1, "certificate"},
		{map[string]string{"MERIDIAN_API": url}, []string{"-cacert", keyFile}, 2, "no certificate"},
		{nil, []string{"-o", "yaml"}, 2, "want table or json"},
	} {
		code, _, errOut := ctl(c.env, append([]string{"status"}, c.args...)...)
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v %v: %d %q, want %d with %q", c.env, c.args, code, errOut, c.code, c.msg)
		}
	}
	for _, args := range [][]string{nil, {"frobnicate"}, {"help"}} {
		if code, _, errOut := ctl(nil, args...); code != 2 || !strings.Contains(errOut, "usage: meridian ctl") {
			t.Errorf("%v: %d %s", args, code, errOut)
		}
	}
}

// TestCtlGslbctlForms runs the command lines of CoreDNS-GSLB's gslbctl (docs/cli.md) against
// the admin API: each must select and change the same backends as our form.
func TestCtlGslbctlForms(t *testing.T) {
	_, store, addr := startCtlAPI(t, admin.Config{})
	env := map[string]string{"MERIDIAN_API": "http://" + addr}
	for _, c := range []struct {
		args   []string
		key    string
		action overlay.Action
	}{
		{[]string{"backends", "disable", "--tags", "prod"}, "www.example.org.|192.0.2.1|443", overlay.Disable},
		{[]string{"backends", "enable", "--location", "dc-us"}, "www.example.org.|2001:db8::1|443", overlay.Enable},
		{[]string{"backends", "disable", "--address", "2001:db8:"}, "www.example.org.|2001:db8::1|443", overlay.Disable},
		{[]string{"backends", "enable", "--tags", "test,prod", "--address", "192.0.2."}, "www.example.org.|192.0.2.1|443", overlay.Enable},
	} {
		code, out, errOut := ctl(env, c.args...)
		if code != 0 || !strings.Contains(out, c.key) || !strings.Contains(out, string(c.action)+": 1 backends") {
			t.Errorf("%v: %d\n%s%s", c.args, code, out, errOut)
			continue
		}
		if o, ok := store.Get(c.key); !ok || o.Action != c.action {
			t.Errorf("%v: override of %s = %+v, %v", c.args, c.key, o, ok)
		}
	}
	if code, out, errOut := ctl(env, "status"); code != 0 || !strings.Contains(out, "192.0.2.1:443") {
		t.Errorf("status: %d %s%s", code, out, errOut)
	}
	// "backends" without enable or disable is no command.
	for _, args := range [][]string{{"backends"}, {"backends", "drain", "--tags", "prod"}} {
		if code, _, errOut := ctl(env, args...); code != 2 || !strings.Contains(errOut, `unknown command "backends"`) {
			t.Errorf("%v: %d %s", args, code, errOut)
		}
	}
}

func TestCtlValidate(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string { return writeFile(t, dir, name, body) }
	good := write("db.example.org.yml", "records:\n  www.example.org.:\n    backends:\n      - address: 192.0.2.1\n")
	bad := write("db.example.net.yml", "records:\n  www.example.net.:\n    mode: sideways\n    backends:\n      - address: 192.0.2.1\n")
	other := write("zone.yml", "records:\n  www.example.org.:\n    backends:\n      - address: 192.0.2.1\n")
	profiled := write("db.example.info.yml", "records:\n  www.example.info.:\n    backends:\n      - {address: 192.0.2.1, healthchecks: [web]}\n")
	profiles := write("profiles.yml", "healthcheck_profiles:\n  web: {type: tcp, params: {port: 80}}\n")
	deprecated := write("db.example.com.yml", "records:\n  www.example.com.:\n    failover_policy: {mode: fail-open}\n    backends:\n      - address: 192.0.2.1\n")
	for _, c := range []struct {
		args      []string
		code      int
		out, errs string
	}{
		{[]string{"validate", good}, 0, "OK, zone example.org., 1 records", ""},
		{[]string{"validate", good, "--strict"}, 0, "OK", ""},
		{[]string{"validate", profiled}, 1, "", `unknown health-check profile`},
		{[]string{"validate", profiled, "-profiles", profiles}, 0, "OK, zone example.info.", ""},
		{[]string{"validate", profiled, "-profiles", dir + "/none.yml"}, 1, "", "none.yml"},
		{[]string{"validate", deprecated}, 0, "OK, zone example.com.", "warning: " + deprecated + ":3:"},
		{[]string{"validate", deprecated, "--strict"}, 1, "", "1 warning(s), failing with -strict"},
		{[]string{"validate", other, "-zone", "example.org"}, 0, "OK, zone example.org.", ""},
		{[]string{"validate", bad}, 1, "", `db.example.net.yml:3:11: records["www.example.net."].mode: unknown mode "sideways"`},
		{[]string{"validate", other}, 1, "", "zone.yml"}, // the zone "zone." does not hold www.example.org.
		{[]string{"validate", dir + "/missing.yml"}, 1, "", "no such file"},
		{[]string{"validate"}, 2, "", "usage: meridian ctl validate"},
	} {
		code, out, errOut := ctl(nil, c.args...)
		if code != c.code || !strings.Contains(out, c.out) || !strings.Contains(errOut, c.errs) {
			t.Errorf("%v: %d %q %q, want %d with %q and %q", c.args, code, out, errOut, c.code, c.out, c.errs)
		}
	}
}

// TestCtlCorefileConnection finds the API as gslbctl does, from the Corefile that
// CORE_DNS_COREFILE names: its address, TLS and credentials.
func TestCtlCorefileConnection(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := admintest.Certificate(t, dir)
	_, _, addr := startCtlAPI(t, admin.Config{TLSCert: certFile, TLSKey: keyFile, BasicUser: "ops", BasicPass: "pw"})
	_, port, _ := strings.Cut(addr, ":")
	corefile := func(name, api string) string {
		return writeFile(t, dir, name, fmt.Sprintf(".:1053 {\n gslb {\n  zone example.org. %s\n%s }\n}\n", filepath.Join(dir, "zone.yml"), api))
	}
	good := corefile("Corefile", fmt.Sprintf("  api_enable\n  api_listen_addr 0.0.0.0\n  api_listen_port %s\n  api_tls_cert %s\n  api_tls_key %s\n  api_basic_user ops\n  api_basic_pass pw\n", port, certFile, keyFile))
	wrong := corefile("Corefile.wrong", fmt.Sprintf("  api_enable\n  api_listen_port %s\n  api_tls_cert %s\n  api_tls_key %s\n  api_basic_user ops\n  api_basic_pass nope\n", port, certFile, keyFile))
	off := corefile("Corefile.off", "")
	for _, c := range []struct {
		env  map[string]string
		code int
		msg  string
	}{
		{map[string]string{"CORE_DNS_COREFILE": good, "MERIDIAN_API_CACERT": certFile}, 0, ""},
		// The environment's credentials come first.
		{map[string]string{"CORE_DNS_COREFILE": good, "MERIDIAN_API_CACERT": certFile, "MERIDIAN_API_PASSWORD": "bad"}, 1, "401"},
		{map[string]string{"CORE_DNS_COREFILE": wrong, "MERIDIAN_API_CACERT": certFile}, 1, "401"},
		{map[string]string{"CORE_DNS_COREFILE": off}, 2, "no gslb block has api_enable"},
		{map[string]string{"CORE_DNS_COREFILE": filepath.Join(dir, "missing")}, 2, "no such file"},
	} {
		code, out, errOut := ctl(c.env, "status")
		if code != c.code || !strings.Contains(errOut, c.msg) || (code == 0 && !strings.Contains(out, "192.0.2.1:443")) {
			t.Errorf("%v: %d %q %q, want %d with %q", c.env, code, out, errOut, c.code, c.msg)
		}
	}
}
