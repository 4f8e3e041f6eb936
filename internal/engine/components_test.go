package engine

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/publish"
	"github.com/meridian-gslb/meridian/internal/source"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// sourceHelpers are the packages under internal/source that are no input of their own but a
// part of one: they need no row.
var sourceHelpers = map[string]string{
	"istiosync": "the Istio check of the kubernetes input",
}

// implements reports whether values of t (or pointers to them) implement the interface I.
func implements[I any](t reflect.Type) bool {
	i := reflect.TypeFor[I]()
	return t.Implements(i) || t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(i)
}

// TestEveryInputIsRegistered: every package under internal/source is an input with its row in
// the constructor table (or a part of one), and each row's roles are exactly what its type
// implements.
func TestEveryInputIsRegistered(t *testing.T) {
	rowOf := map[string]*component{}
	for i := range components {
		c := &components[i]
		rowOf[c.typ.Elem().PkgPath()] = c
		roles := map[source.Role]bool{
			source.RoleBackendSets: implements[source.BackendSets](c.typ) || implements[viewer](c.typ),
			source.RoleVerdicts:    implements[source.Verdicts](c.typ),
			source.RolePublisher:   implements[publish.Publisher](c.typ),
		}
		for role, has := range roles {
			if declared := c.roles&role != 0; declared != has {
				t.Errorf("row %q (%v): declares role %d %v, its type implements it %v", c.name, c.typ, role, declared, has)
			}
		}
		if c.restart != nil && !c.survives {
			t.Errorf("row %q: a restart without survives means nothing", c.name)
		}
		if (c.restart != nil) != (c.restartOptions != "") {
			t.Errorf("row %q: restart and restartOptions go together", c.name)
		}
		if c.roles&source.RoleVerdicts != 0 && !c.survives {
			t.Errorf("row %q judges backends but is built per load: its verdicts would be reported twice during a reload", c.name)
		}
	}
	dirs, err := os.ReadDir(filepath.Join("..", "source"))
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/meridian-gslb/meridian/internal/source/"
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		if _, helper := sourceHelpers[d.Name()]; !helper && rowOf[module+d.Name()] == nil {
			t.Errorf("internal/source/%s has no row in the constructor table (components.go)", d.Name())
		}
	}
}

// TestReloadRulesAreDocumented: docs/configuration.md's table of what survives a reload names
// every component with what restarts it, and what makes a new health manager.
func TestReloadRulesAreDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	if i := strings.Index(section, "### What survives a reload"); i >= 0 {
		section = section[i:]
		if j := strings.Index(section[4:], "\n### "); j >= 0 {
			section = section[:j+4]
		}
	} else {
		t.Fatal(`docs/configuration.md has no "### What survives a reload"`)
	}
	if !strings.Contains(section, managerOptions) {
		t.Errorf("the section does not name what makes a new health manager: %q", managerOptions)
	}
	for _, c := range components {
		lives := "each load"
		if c.survives {
			lives = "survives"
		}
		restarts := "—"
		if c.restartOptions != "" {
			restarts = c.restartOptions
		}
		want := "| " + c.name + " | " + lives + " | " + restarts + " |"
		if !strings.Contains(section, want) {
			t.Errorf("the section has no row %q", want)
		}
	}
}

// TestReloadRules: a reload that changes an option keeps the block's health manager (and so
// every backend's health) unless the option is one the manager is made with, and restarts the
// components whose restart options it changes, and those alone.
func TestReloadRules(t *testing.T) {
	base := func(t *testing.T) config.Options {
		o := blockOptions(t, t.TempDir(), "example.org.")
		o.Sites.Site = "eu"
		return o
	}
	tests := []struct {
		name        string
		change      func(*config.Options)
		sameManager bool
		restarted   []string
	}{
		{"nothing", func(*config.Options) {}, true, nil},
		{"the admin API turned on", func(o *config.Options) { o.API = config.APIOptions{Enable: true} }, true, nil},
		{"webhooks", func(o *config.Options) { o.Webhooks.URLs = []string{"http://127.0.0.1:1/hook"} }, true, nil},
		{"another peer", func(o *config.Options) { o.Sites.Peers = []string{"127.0.0.1:1"} }, true, nil},
		{"another site", func(o *config.Options) { o.Sites.Site = "us" }, true, []string{"sites"}},
		{"a kubeconfig", func(o *config.Options) { o.Kubernetes.Kubeconfig = kubeconfig(t) }, true, []string{"kubernetes"}},
		{"max_stagger_start", func(o *config.Options) { o.MaxStaggerStart /= 2 }, false, []string{"discovery", "kubernetes", "sites", "webhooks", "failover timelines", "shifts"}},
		{"coredns_gslb_metrics", func(o *config.Options) { o.CoreDNSGSLBMetrics = true }, false, []string{"discovery", "kubernetes", "sites", "webhooks", "failover timelines", "shifts"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRegistry()
			o := base(t)
			first := open(t, r, newLoad(), o)
			defer first.Stop()
			tt.change(&o)
			if o.API.Enable {
				o = withAPI(t, o, t.TempDir())
			}
			second := open(t, r, newLoad(), o)
			defer second.Stop()
			if same := first.health == second.health; same != tt.sameManager {
				t.Errorf("same health manager %v, want %v", same, tt.sameManager)
			}
			var restarted []string
			for _, u := range second.uses {
				if u.shared == nil {
					continue
				}
				kept := false
				for _, v := range first.uses {
					kept = kept || v.shared == u.shared
				}
				if !kept {
					restarted = append(restarted, u.kind.name)
				}
			}
			if strings.Join(restarted, " ") != strings.Join(tt.restarted, " ") {
				t.Errorf("restarted %v, want %v", restarted, tt.restarted)
			}
		})
	}
}

// kubeconfig writes a kubeconfig of an API server on a closed loopback port: opening a block
// reads it and connects to nothing.
func kubeconfig(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "kubeconfig")
	const cfg = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// goroutineIDs returns the ids of the goroutines that run now, each with its stack.
func goroutineIDs() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		head, _, _ := strings.Cut(g, " [")
		out[head] = g
	}
	return out
}

// TestOpeningABlockStartsNoGoroutine: opening a block (what a Corefile's setup does) with
// webhooks, drills, canaries, sites, heartbeats, a delegation, Kubernetes with its delegation
// through ExternalDNS, the answer log and the admin API configured starts
// nothing that runs on: Start does.
func TestOpeningABlockStartsNoGoroutine(t *testing.T) {
	dir := t.TempDir()
	o := withAPI(t, blockOptions(t, dir, "example.org."), dir)
	o.Webhooks = config.WebhookOptions{URLs: []string{"http://127.0.0.1:1/hook"}, Transitions: true, Overrides: true}
	o.Safety.Drills = []config.Drill{{Name: "eu", Every: time.Hour, Down: []string{"site:eu"}}}
	o.Safety.Canary = config.CanaryOptions{Resolvers: []string{"127.0.0.1:1"}, Names: []string{"www.example.org."}, Parents: []string{"127.0.0.1:1"}}
	o.Sites = config.SitesOptions{Site: "eu", Peers: []string{"127.0.0.1:1"}}
	zone := &config.HeartbeatZone{Zone: "hb.example.net.", Servers: []string{"127.0.0.1:1"}}
	o.Heartbeats = config.HeartbeatOptions{Local: zone, Global: zone, Delegation: &config.Delegation{
		Parent: "example.", Servers: []string{"127.0.0.1:1"}, NS: "ns-eu.example.org."}}
	o.Kubernetes = config.KubernetesOptions{On: true, Kubeconfig: kubeconfig(t), K8gb: true,
		ExternalDNS: config.ExternalDNSOptions{Parent: "org."}}
	o.State = config.StateOptions{Enable: true, Path: filepath.Join(dir, "state.json")}
	o.CoreDNSGSLBMetrics = true
	o.FastPath.Enable, o.AnswerLog.Enable, o.TrafficShares = true, true, true
	o.Traces = config.TracesOptions{Endpoint: "127.0.0.1:1", Insecure: true}
	d := config.DefaultDNSSECOptions()
	d.Keys = []string{testutil.WriteKey(t, dir, testutil.KeySpec{Zone: "example.org"}).Base}
	o.DNSSEC = []config.DNSSECOptions{d}

	before := goroutineIDs()
	r := NewRegistry()
	e := open(t, r, newLoad(), o)
	defer e.Stop()
	for id, stack := range goroutineIDs() {
		if _, ok := before[id]; !ok {
			t.Errorf("opening the block started a goroutine:\n%s", stack)
		}
	}
	for _, u := range e.uses { // every component the table has was opened
		t.Logf("opened %s", u.kind.name)
	}
	if len(e.uses) != len(components) {
		t.Errorf("%d components opened, want all %d", len(e.uses), len(components))
	}
}
