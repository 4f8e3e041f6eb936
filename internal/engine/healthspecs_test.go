package engine

import (
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/health/probe"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// healthSpecs returns the specs the health manager is given for snap's backends, each a copy
// of its own.
func healthSpecs(snap *catalog.Snapshot) ([]health.Spec, error) {
	ps, err := compileProbes(snap)
	if err != nil {
		return nil, err
	}
	var specs []health.Spec
	for s := range ps.specs() {
		specs = append(specs, *s)
	}
	return specs, nil
}

// TestHealthSpecsOfExternalBackends checks what each kind of probed backend is given: its
// checks, unless it is passive or another site's; Spec.External when a source judges it (so an
// External backend of this site, a Kubernetes Service's address, gets both); and its rise and
// fall.
func TestHealthSpecsOfExternalBackends(t *testing.T) {
	tcp := config.Checks{HealthChecks: []config.HealthCheck{{Type: "tcp", Params: config.NewParams(map[string]any{"port": 80})}}, Rise: 3, Fall: 2}
	none := config.Checks{Rise: 3, Fall: 2}
	tests := []struct {
		name     string
		backend  config.Backend
		checks   int
		external bool
		passive  bool
	}{
		{"probed", config.Backend{}.WithChecks(tcp), 1, false, false},
		{"external with checks", config.Backend{External: true}.WithChecks(tcp), 1, true, false},
		{"external without checks", config.Backend{External: true}.WithChecks(none), 0, true, false},
		{"another site's", config.Backend{External: true, Remote: true}.WithOrigin(config.Origin{Site: "eu"}).WithChecks(tcp), 0, true, false},
		{"passive", config.Backend{Passive: true}.WithChecks(tcp), 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.backend
			b.IP = netip.MustParseAddr("192.0.2.1")
			b.Address, b.Enable = b.IP.String(), true
			rec := config.Record{Name: "www.example.org.", Backends: []config.Backend{b}}
			rec.SetSettings(config.Settings{ScrapeInterval: 10 * time.Second, ScrapeTimeout: time.Second})
			zone := &config.Zone{Origin: "example.org.", Records: []config.Record{rec}}
			snap, err := catalog.Build([]*config.Zone{zone}, health.NewManager(health.Options{}))
			if err != nil {
				t.Fatal(err)
			}
			specs, err := healthSpecs(snap)
			if err != nil {
				t.Fatal(err)
			}
			if len(specs) != 1 {
				t.Fatalf("%d specs, want 1", len(specs))
			}
			s := specs[0]
			for _, c := range s.Checks {
				probe.Release(c.Prober)
			}
			if len(s.Checks) != tt.checks || s.External != tt.external || s.Passive != tt.passive {
				t.Errorf("spec has %d checks, external %v, passive %v; want %d, %v, %v", len(s.Checks), s.External, s.Passive, tt.checks, tt.external, tt.passive)
			}
			if s.Rise != 3 || s.Fall != 2 {
				t.Errorf("rise %d, fall %d; want 3 and 2", s.Rise, s.Fall)
			}
		})
	}
}

// TestHealthSpecsOfBackendsSharingChecks: backends that share their checks (a profile's, or a
// Kubernetes Service's addresses) each get them compiled, and the shared parameters stay.
func TestHealthSpecsOfBackendsSharingChecks(t *testing.T) {
	first := config.Backend{Enable: true}.WithChecks(config.Checks{
		HealthChecks: []config.HealthCheck{{Type: "tcp", Params: config.NewParams(map[string]any{"port": 8443})}}, Rise: 1, Fall: 1})
	var backends []config.Backend
	for _, addr := range []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"} {
		b := first // its copies share its checks, as the parser's backends do
		b.Address, b.IP = addr, netip.MustParseAddr(addr)
		backends = append(backends, b)
	}
	if backends[0].Checks() != backends[2].Checks() {
		t.Fatal("the copies do not share their checks")
	}
	rec := config.Record{Name: "www.example.org.", Backends: backends}
	rec.SetSettings(config.Settings{ScrapeInterval: 10 * time.Second, ScrapeTimeout: time.Second})
	zone := &config.Zone{Origin: "example.org.", Records: []config.Record{rec}}
	snap, err := catalog.Build([]*config.Zone{zone}, health.NewManager(health.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 { // and again, as a reload of the same snapshot's records would
		specs, err := healthSpecs(snap)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if len(specs) != len(backends) {
			t.Fatalf("round %d: %d specs, want %d", round, len(specs), len(backends))
		}
		for _, s := range specs {
			if len(s.Checks) != 1 {
				t.Errorf("round %d: %s has %d checks, want 1", round, s.Backend, len(s.Checks))
			}
			for _, c := range s.Checks {
				probe.Release(c.Prober)
			}
		}
	}
	for _, b := range snap.Records()[0].Backends {
		if p := b.Config.Checks().HealthChecks[0].Params.Map()["port"]; p != 8443 {
			t.Errorf("%s: the check's port is %v after compiling, want 8443", b.Config.Address, p)
		}
	}
}

// TestCompilingInPartsCompilesTheSame compiles the checks of one zone in one part and in
// three at the same time: the same checks (keys, types, timeouts) in the same order, as many
// backends, and the same errors, each once, in the order of the backends, whether they
// are a profile's (one text however many backends use it) or a backend's own.
func TestCompilingInPartsCompilesTheSame(t *testing.T) {
	for _, bad := range []bool{false, true} {
		t.Run(fmt.Sprintf("bad checks %v", bad), func(t *testing.T) {
			snap, err := catalog.Build([]*config.Zone{testutil.ParseBenchZone(t, partsZone(8000, bad))}, health.NewManager(health.Options{}))
			if err != nil {
				t.Fatal(err)
			}
			one, err1 := compileProbesOn(snap, 1)
			three, err3 := compileProbesOn(snap, 3)
			if bad {
				if err1 == nil || err3 == nil || err1.Error() != err3.Error() {
					t.Fatalf("errors differ: in one part\n%v\nin three\n%v", err1, err3)
				}
				if n := strings.Count(err1.Error(), "\n") + 1; n != 1+8000/1009 {
					t.Errorf("%d errors, want %d:\n%v", n, 1+8000/1009, err1)
				}
				return
			}
			if err1 != nil || err3 != nil {
				t.Fatal(err1, err3)
			}
			defer one.release()
			defer three.release()
			if len(one.checks) < 3*minPart || len(one.checks) != len(three.checks) || one.n != three.n {
				t.Fatalf("%d checks of %d backends in one part, %d of %d in three; want the same, at least %d", len(one.checks), one.n, len(three.checks), three.n, 3*minPart)
			}
			for i, c := range one.checks {
				if o := three.checks[i]; o.Key != c.Key || o.Type != c.Type || o.Timeout != c.Timeout {
					t.Fatalf("check %d: %s %v in one part, %s %v in three", i, c.Type, c.Timeout, o.Type, o.Timeout)
				}
			}
		})
	}
}

// partsZone returns a zone of n records whose backends have checks of profiles (tcp and http,
// with regular expressions) and of their own; with bad, a profile with an unknown parameter
// for every 997th record and a check of its own with another for every 1009th.
func partsZone(n int, bad bool) []byte {
	var zone strings.Builder
	zone.WriteString("healthcheck_profiles:\n  tcp9: {type: tcp, params: {port: 9, send: ping, expect: po+ng}}\n")
	zone.WriteString("  web: {type: http, params: {port: 9, uri: /healthz, expected_body: ok}}\n  bad: {type: tcp, params: {port: 9, nosuch: 1}}\nrecords:\n")
	for i := 1; i <= n; i++ {
		checks := "[tcp9, web]"
		switch {
		case bad && i%997 == 0:
			checks = "[tcp9, bad]"
		case bad && i%1009 == 0:
			checks = "[{type: tcp, params: {port: 9, either: 1}}]"
		case i%3 == 0:
			checks = fmt.Sprintf("[{type: tcp, params: {port: %d, timeout: 2s}}]", 9+i%5)
		}
		fmt.Fprintf(&zone, "  n%06d.bench.test.:\n    backends:\n", i)
		fmt.Fprintf(&zone, "      - {address: 127.1.%d.%d, healthchecks: %s}\n", i/250%250, i%250+1, checks)
	}
	return []byte(zone.String())
}

// TestRefreshAllViewsEveryRecord refreshes the records of a snapshot built without views, in
// one part and in several at the same time (more records than minRefreshPart): every record
// has its view, with its own backend healthy.
func TestRefreshAllViewsEveryRecord(t *testing.T) {
	for _, n := range []int{10, 3*minRefreshPart + 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var zone strings.Builder
			zone.WriteString("records:\n")
			for i := range n {
				fmt.Fprintf(&zone, "  n%06d.bench.test.: {mode: failover, backends: [{address: 192.0.%d.%d, priority: 1}]}\n", i, i/250%250, i%250+1)
			}
			snap, err := catalog.BuildUnviewed([]*config.Zone{testutil.ParseBenchZone(t, []byte(zone.String()))}, health.NewManager(health.Options{}))
			if err != nil {
				t.Fatal(err)
			}
			refreshAll(snap.Records())
			if len(snap.Records()) != n {
				t.Fatalf("%d records, want %d", len(snap.Records()), n)
			}
			for _, r := range snap.Records() {
				v := r.View()
				if v == nil {
					t.Fatalf("%s has no view", r.Name())
				}
				if h := v.Healthy[catalog.IPv4]; len(h) != 1 || h[0] != r.Backends[0] {
					t.Fatalf("%s: healthy %v, want its backend", r.Name(), h)
				}
			}
		})
	}
}

// TestSpecsCarryTheCatalogsWords builds a zone with a health manager and makes the specs of its
// checked backends: each spec carries the word the catalog's backend has, the manager's for the
// spec's key (so that Sync need not look it up).
func TestSpecsCarryTheCatalogsWords(t *testing.T) {
	m, ps := compiledZone(t, 50)
	specs := 0
	for spec := range ps.specs() {
		specs++
		if spec.State == nil || spec.State != m.State(spec.Key) {
			t.Fatalf("spec of %s: word %p, the manager's %p", spec.Key, spec.State, m.State(spec.Key))
		}
	}
	if specs != ps.n {
		t.Errorf("%d specs, want %d", specs, ps.n)
	}
}

// TestSyncKeepsTheWordsOfEveryProbedBackend syncs a zone whose probed backends are checked,
// disabled or passive (which a manager without a fleet ignores) with a health manager: the
// manager still holds every one's word, the one the catalog's backend reads, while only the
// disabled and passive ones are named in the keys kept.
func TestSyncKeepsTheWordsOfEveryProbedBackend(t *testing.T) {
	zone := `records:
  www.bench.test.:
    backends:
      - {address: 127.0.0.1, healthchecks: [{type: tcp, params: {port: 9}}]}
      - {address: 127.0.0.2, enable: false, healthchecks: [{type: tcp, params: {port: 9}}]}
      - {address: 127.0.0.3, passive: true}
      - {address: 127.0.0.4}
`
	m := health.NewManager(health.Options{Log: &testutil.Log{}})
	snap, err := catalog.BuildUnviewed([]*config.Zone{testutil.ParseBenchZone(t, []byte(zone))}, m)
	if err != nil {
		t.Fatal(err)
	}
	keep := keptKeys(snap)
	ps, err := compileProbes(snap)
	if err != nil {
		t.Fatal(err)
	}
	ps.sync(m)
	probed, wantKept := 0, map[string]bool{}
	for _, b := range snap.Records()[0].Backends {
		if !b.Config.Probed() {
			continue
		}
		probed++
		if m.State(b.Key()) != b.State {
			t.Errorf("%s: the manager's word is not the catalog's after Sync", b.Config.Address)
		}
		if a := b.Config.Address; a == "127.0.0.2" || a == "127.0.0.3" {
			wantKept[b.Key()] = true
		}
	}
	if probed != 3 {
		t.Fatalf("%d backends probed, want 3", probed)
	}
	if !maps.Equal(keep, wantKept) {
		t.Errorf("keys kept %v, want %v", keep, wantKept)
	}
}
