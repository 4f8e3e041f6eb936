package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// blockOptions returns the options of a gslb block serving origin from a zone file with one
// record, written in dir.
func blockOptions(t *testing.T, dir, origin string) config.Options {
	t.Helper()
	file := filepath.Join(dir, strings.TrimSuffix(origin, ".")+".yml")
	yaml := fmt.Sprintf("records:\n  www.%s:\n    backends: [{address: 192.0.2.1}]\n", origin)
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := config.DefaultOptions()
	opts.Zones = []config.ZoneSource{{Origin: origin, File: file}}
	return opts
}

// withAPI returns opts with the admin API enabled on a free loopback port, with its overrides
// in dir.
func withAPI(t *testing.T, opts config.Options, dir string) config.Options {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	opts.API = config.APIOptions{Enable: true, ListenPort: port, OverridesFile: filepath.Join(dir, "overrides.json")}
	return opts
}

// open opens an engine of load in r and fails the test on error.
func open(t *testing.T, r *Registry, load any, opts config.Options) *Engine {
	t.Helper()
	e, err := r.Open(load, opts, &testutil.Log{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// start starts e, failing the test on error, and stops it when the test ends.
func start(t *testing.T, e *Engine) {
	t.Helper()
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
}

// newLoad returns the identity of a new Corefile load.
func newLoad() any { return new(int) }

// zonesVia lists the zones the API on o serves with token, or the HTTP status when it refuses,
// 0 when it does not answer within a second.
func zonesVia(t *testing.T, o config.APIOptions, token string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	zones, err := (&admin.Client{BaseURL: "http://" + o.Addr(), Token: token}).Zones(ctx)
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

// empty reports what r still holds.
func empty(r *Registry) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.health)+len(r.servers)+len(r.stores)+len(r.engines) != 0 {
		return fmt.Errorf("registry not empty: %d health managers, %d servers, %d stores, %d engines", len(r.health), len(r.servers), len(r.stores), len(r.engines))
	}
	return nil
}

func TestReloadOverlapKeepsHealthAndAPI(t *testing.T) {
	r := NewRegistry()
	dir := t.TempDir()
	o1 := withAPI(t, blockOptions(t, dir, "example.org."), dir)
	o1.API.Token = "old"
	first := open(t, r, newLoad(), o1)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}

	// The next load opens and starts before the first stops: the same health manager, the
	// same listener and store, with its settings and its zones once it started.
	o2 := withAPI(t, blockOptions(t, dir, "example.org."), dir)
	o2.API, o2.API.Token = o1.API, "new"
	second := open(t, r, newLoad(), o2)
	if second.health != first.health || second.api.server != first.api.server || second.api.store != first.api.store {
		t.Fatal("the second load got its own health manager, listener or store")
	}
	if _, code := zonesVia(t, o1.API, "old"); code != http.StatusUnauthorized {
		t.Errorf("old token during the reload: %d", code)
	}
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	if zones, code := zonesVia(t, o2.API, "new"); code != http.StatusOK || zones != "example.org." {
		t.Errorf("after the first load stopped: %q, %d", zones, code)
	}
	r.mu.Lock()
	kept := r.health[second.shared.key] == second.shared && second.shared.refs == 1
	r.mu.Unlock()
	if !kept {
		t.Error("the first load's stop released the health manager the second holds")
	}
	if a, b := first.Snapshot().Records()[0].Backends[0].State, second.Snapshot().Records()[0].Backends[0].State; a != b {
		t.Error("the loads' backends read different health words")
	}
	if err := second.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, code := zonesVia(t, o2.API, "new"); code != 0 {
		t.Errorf("the listener is still open after the last stop: %d", code)
	}
	if err := empty(r); err != nil {
		t.Error(err)
	}
}

func TestOpenStartsNothingUntilStart(t *testing.T) {
	var probes atomic.Int32
	backend := testutil.ServeTCP(t, "127.0.0.1:0", func(c net.Conn) { probes.Add(1); c.Close() })
	host, port, _ := net.SplitHostPort(backend.Addr().String())
	dir := t.TempDir()
	file := filepath.Join(dir, "zone.yml")
	yaml := fmt.Sprintf("records:\n  www.example.org.:\n    scrape_interval: 100ms\n    backends:\n      - {address: %s, healthchecks: [{type: tcp, params: {port: %s}}]}\n", host, port)
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := config.DefaultOptions()
	opts.MaxStaggerStart = 0
	opts.Zones = []config.ZoneSource{{Origin: "example.org.", File: file}}
	opts = withAPI(t, opts, dir)
	r := NewRegistry()
	e := open(t, r, newLoad(), opts)

	// Bound but not serving: a connection is accepted by the kernel and never answered.
	if _, code := zonesVia(t, opts.API, ""); code != 0 {
		t.Errorf("the admin API answered %d before Start", code)
	}
	if n := probes.Load(); n != 0 {
		t.Errorf("%d probes before Start", n)
	}
	start(t, e)
	testutil.Eventually(t, 5*time.Second, func() bool { return probes.Load() > 0 }, "no probe after Start")
	if zones, code := zonesVia(t, opts.API, ""); code != http.StatusOK || zones != "example.org." {
		t.Errorf("after Start: %q, %d", zones, code)
	}
}

func TestFailedReloadKeepsOnlyTheRunningLoad(t *testing.T) {
	r := NewRegistry()
	dir := t.TempDir()
	o := withAPI(t, blockOptions(t, dir, "example.org."), dir)
	o.API.Token = "running"
	running := open(t, r, newLoad(), o)
	start(t, running)

	// The failed load opened an engine of another block (another health manager) on the same
	// listener, and then a later plugin failed: it never starts nor stops.
	other := blockOptions(t, dir, "example.com.")
	other.API, other.API.Token = o.API, "failed"
	failed := open(t, r, newLoad(), other)
	if failed.health == running.health {
		t.Fatal("another block shares the running block's health manager")
	}
	if err := running.Resync(); err != nil { // OnRestartFailed
		t.Fatal(err)
	}
	if zones, code := zonesVia(t, o.API, "running"); code != http.StatusOK || zones != "example.org." {
		t.Errorf("after the failed reload: %q, %d", zones, code)
	}
	if _, code := zonesVia(t, o.API, "failed"); code != http.StatusUnauthorized {
		t.Errorf("the failed load's token: %d", code)
	}
	r.mu.Lock()
	engines, managers := len(r.engines), len(r.health)
	r.mu.Unlock()
	if engines != 1 || managers != 1 {
		t.Errorf("%d engines and %d health managers after the failed reload, want 1 and 1", engines, managers)
	}
}

func TestOpenErrorsLeaveNothingBehind(t *testing.T) {
	r := NewRegistry()
	dir := t.TempDir()
	o := withAPI(t, blockOptions(t, dir, "example.org."), dir)
	load := newLoad()
	first := open(t, r, load, o)
	defer first.Stop()

	// Two blocks of one load on one listener must agree.
	other := withAPI(t, blockOptions(t, dir, "example.net."), dir)
	other.API, other.API.Token = o.API, "x"
	_, err := r.Open(load, other, &testutil.Log{})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || !strings.Contains(err.Error(), "different api_* options") {
		t.Errorf("conflicting blocks: %v", err)
	}
	same := withAPI(t, blockOptions(t, dir, "example.net."), dir)
	same.API = o.API
	if e, err := r.Open(load, same, &testutil.Log{}); err != nil {
		t.Errorf("a second block with the same options: %v", err)
	} else {
		e.Stop()
	}

	// A port taken by something else.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := withAPI(t, blockOptions(t, dir, "busy.test."), t.TempDir())
	busy.API.ListenPort = ln.Addr().(*net.TCPAddr).Port
	if _, err := r.Open(newLoad(), busy, &testutil.Log{}); !errors.As(err, &apiErr) || !strings.Contains(err.Error(), strconv.Itoa(busy.API.ListenPort)) {
		t.Errorf("busy port: %v", err)
	}

	// A corrupt overrides file is an error that names it, and is left as it was.
	corrupt := withAPI(t, blockOptions(t, dir, "corrupt.test."), t.TempDir())
	if err := os.WriteFile(corrupt.API.OverridesFile, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Open(newLoad(), corrupt, &testutil.Log{}); err == nil || !strings.Contains(err.Error(), corrupt.API.OverridesFile) {
		t.Errorf("corrupt overrides file: %v", err)
	}

	// An invalid zone file gives back the API's share it took.
	bad := withAPI(t, blockOptions(t, dir, "bad.test."), t.TempDir())
	if err := os.WriteFile(bad.Zones[0].File, []byte("records: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Open(newLoad(), bad, &testutil.Log{}); err == nil || errors.As(err, &apiErr) {
		t.Errorf("invalid zone file: %v", err)
	}
	r.mu.Lock()
	engines, servers, stores, managers := len(r.engines), len(r.servers), len(r.stores), len(r.health)
	r.mu.Unlock()
	if engines != 1 || servers != 1 || stores != 1 || managers != 1 {
		t.Errorf("failed opens left %d engines, %d servers, %d stores, %d health managers", engines, servers, stores, managers)
	}
}

func TestOverridesKeptAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	o := withAPI(t, blockOptions(t, dir, "example.org."), dir)
	key := "www.example.org.|192.0.2.1|0"
	e := open(t, NewRegistry(), newLoad(), o)
	if err := e.api.store.Apply(context.Background(), []overlay.Change{{Key: key, Action: overlay.Disable}}); err != nil {
		t.Fatal(err)
	}
	e.Stop() // the process stops

	again := open(t, NewRegistry(), newLoad(), o)
	defer again.Stop()
	if ov, ok := again.api.store.Get(key); !ok || ov.Action != overlay.Disable {
		t.Fatalf("after a restart: %+v, %v", ov, ok)
	}
	if b := again.Snapshot().Records()[0].Backends[0]; b.Enabled() {
		t.Error("the first snapshot after a restart does not apply the stored override")
	}
}

func TestAPIOff(t *testing.T) {
	opts := blockOptions(t, t.TempDir(), "example.org.")
	opts.API.ListenPort = 1
	e := open(t, NewRegistry(), newLoad(), opts)
	defer e.Stop()
	if e.api != nil {
		t.Fatal("the API is off but the engine holds a share of it")
	}
}

func TestOverridesInRedisInClusterMode(t *testing.T) {
	rs := testutil.StartRedis(t)
	ctx := context.Background()
	r := NewRegistry()
	dir := t.TempDir()
	cl := config.ClusterOptions{Enable: true, Addrs: []string{rs.Addr}, KeyPrefix: "api-test:"}
	o := withAPI(t, blockOptions(t, dir, "example.org."), dir)
	o.Cluster = cl
	load := newLoad()
	first := open(t, r, load, o)
	defer first.Stop()
	if _, ok := first.api.store.(*overlay.Redis); !ok {
		t.Fatalf("cluster mode got a %T", first.api.store)
	}
	key := "www.example.org.|192.0.2.1|0"
	if err := first.api.store.Apply(ctx, []overlay.Change{{Key: key, Action: overlay.Disable}}); err != nil {
		t.Fatal(err)
	}
	if ok, err := rs.Client(t).HExists(ctx, "api-test:overrides", key).Result(); !ok || err != nil {
		t.Fatalf("the override is not in Redis: %v, %v", ok, err)
	}
	if _, err := os.Stat(o.API.OverridesFile); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("cluster mode touched the overrides file: %v", err)
	}

	// Another block of the load on the same listener must use the same store.
	fileStore := withAPI(t, blockOptions(t, dir, "example.net."), dir)
	fileStore.API = o.API
	if _, err := r.Open(load, fileStore, &testutil.Log{}); err == nil || !strings.Contains(err.Error(), "different overrides stores") {
		t.Errorf("a block with the file store beside one with Redis: %v", err)
	}
	// A reload with the same Redis options shares the store; with others, it opens a store of
	// the same overrides.
	second := open(t, r, newLoad(), o)
	defer second.Stop()
	if second.api.store != first.api.store {
		t.Fatal("a reload opened a second store for the same Redis options")
	}
	none := o
	none.Cluster.SyncMode = config.SyncNone
	third := open(t, r, newLoad(), none)
	defer third.Stop()
	if third.api.store == first.api.store {
		t.Fatal("other Redis options share the store")
	}
	if ov, ok := third.api.store.Get(key); !ok || ov.Action != overlay.Disable {
		t.Fatalf("the new store reads %+v, %v", ov, ok)
	}
	start(t, first)
	if err := third.api.store.Apply(ctx, []overlay.Change{{Key: key, Action: overlay.Clear}}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 2*time.Second, func() bool { _, ok := first.api.store.Get(key); return !ok },
		"a change through the new store did not reach the started one")
	testutil.Eventually(t, 2*time.Second, func() bool { return first.Snapshot().Records()[0].Backends[0].Enabled() },
		"the started engine did not apply the change")
	for _, e := range []*Engine{first, second, third} {
		e.Stop()
	}
	if err := empty(r); err != nil {
		t.Error(err)
	}
}

func TestHealthKeyFollowsTheClusterOptions(t *testing.T) {
	base := config.DefaultOptions()
	base.Zones = []config.ZoneSource{{Origin: "example.org.", File: "a.yml"}}
	with := func(f func(*config.ClusterOptions)) config.Options {
		o := base
		f(&o.Cluster)
		return o
	}
	on := func(c *config.ClusterOptions) { c.Enable = true }
	tests := []struct {
		name string
		a, b config.Options
		same bool
	}{
		{"cluster mode off: redis options do not matter", base, with(func(c *config.ClusterOptions) { c.Addrs = []string{"10.0.0.1:6379"} }), true},
		{"cluster mode on", base, with(on), false},
		{"defaults spelled out", with(on), with(func(c *config.ClusterOptions) {
			on(c)
			c.Addrs, c.KeyPrefix, c.SyncMode = []string{config.DefaultRedisAddr}, config.DefaultRedisKeyPrefix, config.SyncLock
		}), true},
		{"another Redis", with(on), with(func(c *config.ClusterOptions) { on(c); c.Addrs = []string{"10.0.0.1:6379"} }), false},
		{"another password", with(on), with(func(c *config.ClusterOptions) { on(c); c.Password = "x" }), false},
	}
	for _, tt := range tests {
		if same := managerKey(tt.a) == managerKey(tt.b); same != tt.same {
			t.Errorf("%s: same manager %v, want %v", tt.name, same, tt.same)
		}
	}
}

func TestSharedHealthOwnsTheClusterClient(t *testing.T) {
	rs := testutil.StartRedis(t)
	r := NewRegistry()
	o := blockOptions(t, t.TempDir(), "cluster.test.")
	o.Cluster = config.ClusterOptions{Enable: true, Addrs: []string{rs.Addr}}
	first := open(t, r, newLoad(), o)
	second := open(t, r, newLoad(), o)
	if second.shared != first.shared {
		t.Fatal("a reload with the same options got another health manager")
	}
	c := first.shared.cluster
	if c == nil {
		t.Fatal("cluster mode without a cluster client")
	}
	rc := rs.Client(t)
	clients := func() int {
		list, err := rc.ClientList(t.Context()).Result()
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(list, "name=meridian-"+c.ID())
	}
	if clients() == 0 {
		t.Fatal("the cluster client is not connected")
	}
	first.Stop()
	if clients() == 0 {
		t.Fatal("the cluster client was closed while the manager still has a user")
	}
	second.Stop()
	testutil.Eventually(t, 2*time.Second, func() bool { return clients() == 0 }, "the last stop left the cluster client connected")
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
		err := CheckAPIOptions(c.o)
		if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.err)
		}
	}
}
