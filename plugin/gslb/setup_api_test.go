package gslb

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// parseAPILines parses each line of input as an api_* option.
func parseAPILines(t *testing.T, input, root string) (config.APIOptions, error) {
	t.Helper()
	var o config.APIOptions
	c := caddy.NewTestController("dns", input)
	for c.Next() {
		ok, err := parseAPIOption(c, root, &o)
		if err != nil {
			return o, err
		}
		if !ok {
			t.Fatalf("%s is not an api option", c.Val())
		}
	}
	return o, nil
}

func TestParseAPIOptions(t *testing.T) {
	o, err := parseAPILines(t, `api_enable
api_listen_addr [::1]
api_listen_port 9443
api_tls_cert tls/api.crt
api_tls_key /etc/ssl/api.key
api_basic_user admin
api_basic_pass "pass word"
api_token t0ken
api_allow_unauthenticated false
api_overrides_file state/overrides.json`, "/etc/meridian")
	if err != nil {
		t.Fatal(err)
	}
	want := config.APIOptions{
		Enable: true, ListenAddr: "::1", ListenPort: 9443, TLSCert: "/etc/meridian/tls/api.crt", TLSKey: "/etc/ssl/api.key",
		BasicUser: "admin", BasicPass: "pass word", Token: "t0ken", OverridesFile: "/etc/meridian/state/overrides.json",
	}
	if o != want {
		t.Fatalf("options\n%+v, want\n%+v", o, want)
	}
	if o.Addr() != "[::1]:9443" || o.OverridesPath() != want.OverridesFile {
		t.Errorf("Addr %s, OverridesPath %s", o.Addr(), o.OverridesPath())
	}

	defaults, _ := parseAPILines(t, "api_enable true", "")
	if defaults.Addr() != "127.0.0.1:8080" || defaults.OverridesPath() != "/var/lib/meridian/overrides.json" {
		t.Errorf("defaults: %s, %s", defaults.Addr(), defaults.OverridesPath())
	}
	if off, _ := parseAPILines(t, "api_enable\napi_enable false", ""); off.Enable {
		t.Error("api_enable false did not turn the API off")
	}

	for input, msg := range map[string]string{
		"api_enable maybe":              "not true or false",
		"api_listen_port 0":             "not a port",
		"api_listen_port 65536":         "not a port",
		"api_listen_port http":          "not a port",
		"api_listen_addr 127.0.0.1:80":  "api_listen_port",
		"api_listen_addr":               "want one argument",
		"api_basic_user a b":            "want one argument",
		"api_tls_cert":                  "want one argument",
		"api_allow_unauthenticated yes": "not true or false",
	} {
		if _, err := parseAPILines(t, input, ""); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", input, err, msg)
		}
	}

	c := caddy.NewTestController("dns", "redis_address 127.0.0.1:6379")
	c.Next()
	if ok, err := parseAPIOption(c, "", &config.APIOptions{}); ok || err != nil {
		t.Errorf("another option: %v, %v", ok, err)
	}
}

func TestCheckAPIOptions(t *testing.T) {
	for _, c := range []struct {
		o   config.APIOptions
		err string
	}{
		{config.APIOptions{ListenAddr: "0.0.0.0"}, ""}, // off
		{config.APIOptions{Enable: true}, ""},
		{config.APIOptions{Enable: true, ListenAddr: "0.0.0.0"}, "without authentication"},
		{config.APIOptions{Enable: true, ListenAddr: "0.0.0.0", AllowUnauthenticated: true}, ""},
		{config.APIOptions{Enable: true, ListenAddr: "0.0.0.0", Token: "t"}, ""},
		{config.APIOptions{Enable: true, BasicUser: "admin"}, "together"},
		{config.APIOptions{Enable: true, TLSCert: "/nonexistent/api.crt", TLSKey: "/nonexistent/api.key"}, "/nonexistent/api.crt"},
	} {
		err := checkAPIOptions(c.o)
		if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.err)
		}
	}
}

// zoneProvider is an admin.Provider of empty zones.
type zoneProvider []string

func (p zoneProvider) Status() []admin.Zone {
	var out []admin.Zone
	for _, z := range p {
		out = append(out, admin.Zone{Name: z, Records: []admin.Record{}})
	}
	return out
}
func (zoneProvider) Transitions(int) []admin.Transition { return nil }
func (zoneProvider) Explain(context.Context, admin.Query) (admin.Explanation, error) {
	return admin.Explanation{}, nil
}
func (zoneProvider) Reload() error { return nil }
func (zoneProvider) Ready() bool   { return true }

// apiOptions returns enabled API options on a free loopback port, with overrides in dir.
func apiOptions(t *testing.T, dir string) config.APIOptions {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return config.APIOptions{Enable: true, ListenPort: port, OverridesFile: filepath.Join(dir, "overrides.json")}
}

// newLoad returns the identity of a new Corefile load.
func newLoad() caddy.Context { return caddy.NewTestController("dns", "").Context() }

// zonesVia lists the zones the API on o serves with token, or the HTTP status when it refuses.
func zonesVia(t *testing.T, o config.APIOptions, token string) (string, int) {
	t.Helper()
	zones, err := (&admin.Client{BaseURL: "http://" + o.Addr(), Token: token}).Zones(context.Background())
	if se, ok := err.(*admin.StatusError); ok {
		return "", se.Code
	}
	if err != nil {
		return "", 0
	}
	var names []string
	for _, z := range zones {
		names = append(names, z.Name)
	}
	return strings.Join(names, " "), http.StatusOK
}

func TestAPISurvivesReload(t *testing.T) {
	o := apiOptions(t, t.TempDir())
	o.Token = "old"
	first := newLoad()
	u1, err := apis.acquire(first, o, config.ClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u1.Register([]string{"example.org."}, zoneProvider{"example.org."})

	// The next load starts before the first stops: same listener, its settings, its zones.
	o2 := o
	o2.Token = "new"
	second := newLoad()
	u2, err := apis.acquire(second, o2, config.ClusterOptions{})
	if err != nil {
		t.Fatalf("second load: %v", err)
	}
	if u2.server != u1.server || u2.Store() != u1.Store() {
		t.Fatal("the second load got its own listener or store")
	}
	u2.Register([]string{"example.net."}, zoneProvider{"example.net."}) // example.org. moved out
	if _, code := zonesVia(t, o, "old"); code != http.StatusUnauthorized {
		t.Errorf("old token during the reload: %d", code)
	}
	apis.release(u1) // the first load shuts down
	if zones, code := zonesVia(t, o2, "new"); code != http.StatusOK || zones != "example.net." {
		t.Errorf("after the first load stopped: %q, %d", zones, code)
	}
	apis.release(u2)
	if _, code := zonesVia(t, o2, "new"); code != 0 {
		t.Errorf("the listener is still open after the last release: %d", code)
	}
	if len(apis.servers) != 0 || len(apis.stores) != 0 || len(apis.uses) != 0 {
		t.Errorf("registry not empty: %d servers, %d stores, %d uses", len(apis.servers), len(apis.stores), len(apis.uses))
	}
}

func TestAPIFailedReloadRestoresTheRunningLoad(t *testing.T) {
	o := apiOptions(t, t.TempDir())
	o.Token = "running"
	running := newLoad()
	u1, err := apis.acquire(running, o, config.ClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer apis.release(u1)
	u1.Register([]string{"example.org."}, zoneProvider{"example.org."})

	failed := newLoad()
	o2 := o
	o2.Token = "failed"
	u2, err := apis.acquire(failed, o2, config.ClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u2.Register([]string{"example.com."}, zoneProvider{"example.com."})
	apis.keepOnly(running) // the reload failed after the gslb block was set up
	if zones, code := zonesVia(t, o, "running"); code != http.StatusOK || zones != "example.org." {
		t.Errorf("after the failed reload: %q, %d", zones, code)
	}
	if _, code := zonesVia(t, o, "failed"); code != http.StatusUnauthorized {
		t.Errorf("the failed load's token: %d", code)
	}
	if len(apis.uses) != 1 {
		t.Errorf("%d uses after the failed reload", len(apis.uses))
	}
}

func TestAPIAcquireErrors(t *testing.T) {
	dir := t.TempDir()
	o := apiOptions(t, dir)
	load := newLoad()
	u, err := apis.acquire(load, o, config.ClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer apis.release(u)

	// Two blocks of one load on one listener must agree.
	other := o
	other.Token = "x"
	if _, err := apis.acquire(load, other, config.ClusterOptions{}); err == nil || !strings.Contains(err.Error(), "different api_* options") {
		t.Errorf("conflicting blocks: %v", err)
	}
	same, err := apis.acquire(load, o, config.ClusterOptions{})
	if err != nil {
		t.Fatalf("a second block with the same options: %v", err)
	}
	apis.release(same)

	// A port taken by something else.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := apiOptions(t, t.TempDir())
	busy.ListenPort = ln.Addr().(*net.TCPAddr).Port
	if _, err := apis.acquire(newLoad(), busy, config.ClusterOptions{}); err == nil || !strings.Contains(err.Error(), strconv.Itoa(busy.ListenPort)) {
		t.Errorf("busy port: %v", err)
	}

	// A corrupt overrides file is an error that names it, and is left as it was.
	corrupt := apiOptions(t, t.TempDir())
	if err := os.WriteFile(corrupt.OverridesFile, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := apis.acquire(newLoad(), corrupt, config.ClusterOptions{}); err == nil || !strings.Contains(err.Error(), corrupt.OverridesFile) {
		t.Errorf("corrupt overrides file: %v", err)
	}
	if len(apis.uses) != 1 || len(apis.servers) != 1 || len(apis.stores) != 1 {
		t.Errorf("failed acquisitions left %d uses, %d servers, %d stores", len(apis.uses), len(apis.servers), len(apis.stores))
	}
}

func TestAPIOverridesKeptAcrossRestart(t *testing.T) {
	o := apiOptions(t, t.TempDir())
	u, err := apis.acquire(newLoad(), o, config.ClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Store().Apply(context.Background(), []overlay.Change{{Key: "www.example.org.|192.0.2.1|0", Action: overlay.Disable}}); err != nil {
		t.Fatal(err)
	}
	apis.release(u) // the process stops

	again, err := apis.acquire(newLoad(), o, config.ClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer apis.release(again)
	if ov, ok := again.Store().Get("www.example.org.|192.0.2.1|0"); !ok || ov.Action != overlay.Disable {
		t.Fatalf("after a restart: %+v, %v", ov, ok)
	}
}

func TestSetupAPIOff(t *testing.T) {
	u, err := setupAPI(caddy.NewTestController("dns", ""), config.APIOptions{ListenPort: 1}, config.ClusterOptions{})
	if u != nil || err != nil {
		t.Fatalf("API off: %v, %v", u, err)
	}
	o := apiOptions(t, t.TempDir())
	u, err = setupAPI(caddy.NewTestController("dns", ""), o, config.ClusterOptions{})
	if err != nil || u == nil {
		t.Fatalf("API on: %v", err)
	}
	apis.release(u)
}

func TestAPIOverridesInRedisInClusterMode(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	cl := config.ClusterOptions{Enable: true, Addrs: []string{r.Addr}, KeyPrefix: "api-test:"}
	o := apiOptions(t, t.TempDir())
	first := newLoad()
	u1, err := apis.acquire(first, o, cl)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := u1.Store().(*overlay.Redis); !ok {
		t.Fatalf("cluster mode got a %T", u1.Store())
	}
	key := "www.example.org.|192.0.2.1|0"
	if err := u1.Store().Apply(ctx, []overlay.Change{{Key: key, Action: overlay.Disable}}); err != nil {
		t.Fatal(err)
	}
	if ok, err := r.Client(t).HExists(ctx, "api-test:overrides", key).Result(); !ok || err != nil {
		t.Fatalf("the override is not in Redis: %v, %v", ok, err)
	}
	if _, err := os.Stat(o.OverridesFile); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("cluster mode touched the overrides file: %v", err)
	}

	// Another block of the load on the same listener must use the same store.
	if _, err := apis.acquire(first, o, config.ClusterOptions{}); err == nil || !strings.Contains(err.Error(), "different overrides stores") {
		t.Errorf("a block with the file store beside one with Redis: %v", err)
	}
	// A reload with the same Redis options shares the store; with others, it opens a store of
	// the same overrides.
	u2, err := apis.acquire(newLoad(), o, cl)
	if err != nil {
		t.Fatal(err)
	}
	if u2.Store() != u1.Store() {
		t.Fatal("a reload opened a second store for the same Redis options")
	}
	none := cl
	none.SyncMode = config.SyncNone
	u3, err := apis.acquire(newLoad(), o, none)
	if err != nil {
		t.Fatal(err)
	}
	if u3.Store() == u1.Store() {
		t.Fatal("other Redis options share the store")
	}
	if ov, ok := u3.Store().Get(key); !ok || ov.Action != overlay.Disable {
		t.Fatalf("the new store reads %+v, %v", ov, ok)
	}
	if err := u3.Store().Apply(ctx, []overlay.Change{{Key: key, Action: overlay.Clear}}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 2*time.Second, func() bool { _, ok := u1.Store().Get(key); return !ok },
		"a change through the new store did not reach the old one")
	apis.release(u1)
	apis.release(u2)
	apis.release(u3)
	if len(apis.servers) != 0 || len(apis.stores) != 0 || len(apis.uses) != 0 {
		t.Errorf("registry not empty: %d servers, %d stores, %d uses", len(apis.servers), len(apis.stores), len(apis.uses))
	}
}
