package health

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health/probe"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// compileSourced compiles a check of type typ against 127.0.0.1.
func compileSourced(typ string, params map[string]any) (*probe.Compiled, error) {
	target := probe.Target{Host: "127.0.0.1", IP: netip.MustParseAddr("127.0.0.1")}
	return probe.Compile(config.HealthCheck{Type: typ, Params: config.NewParams(params)}, target, time.Second)
}

func TestInstanceProbeSource(t *testing.T) {
	l := testutil.ListenSources(t)
	own, err := compileSourced("tcp", map[string]any{"port": l.Port(), "probe_source": "127.0.0.2"})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := compileSourced("tcp", map[string]any{"port": l.Port()})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeCoordinator{exclusive: true, sources: []netip.Addr{netip.MustParseAddr("::1"), netip.MustParseAddr("127.0.0.3")}}
	m := NewManager(Options{Log: testLog{}, Coordinator: f})
	for _, tt := range []struct {
		c    *probe.Compiled
		want netip.Addr
	}{
		{plain, netip.MustParseAddr("127.0.0.3")}, // the instance's source of the target's family
		{own, netip.MustParseAddr("127.0.0.2")},   // the check's own source wins
	} {
		s := Spec{Key: "k", Record: "r.", Backend: "b", Checks: []*probe.Compiled{tt.c}, Rise: 1, Fall: 1, Interval: time.Hour}
		m.Sync([]Spec{s}, keys(s))
		j := m.cluster.byID[checkOf(t, f).ID]
		if probe.WithoutInstanceSources(j.prober) != tt.c.Prober {
			t.Fatal("the job's prober is not the compiled one")
		}
		l.Reset()
		j.prober.Probe(context.Background())
		testutil.Eventually(t, 5*time.Second, func() bool { return l.Last() == tt.want }, "probe connected from %s, want %s", l.Last(), tt.want)
		// The same on the poller, which binds its own sockets.
		if p, err := probe.NewPoller(); err == nil {
			l.Reset()
			done := make(chan probe.Result, 1)
			if !p.Run(j.prober, time.Now().Add(time.Second), func(r probe.Result) { done <- r }) {
				t.Fatal("a bound tcp probe to an address does not run on the poller")
			}
			<-done
			p.Close()
			testutil.Eventually(t, 5*time.Second, func() bool { return l.Last() == tt.want }, "poller probe connected from %s, want %s", l.Last(), tt.want)
		}
	}
	m.Stop()
}

// TestInstanceProbeSourceWithoutCluster: the Corefile's probe_source binds the probes of a
// manager without cluster mode too.
func TestInstanceProbeSourceWithoutCluster(t *testing.T) {
	l := testutil.ListenSources(t)
	plain, err := compileSourced("tcp", map[string]any{"port": l.Port()})
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(Options{Log: testLog{}, ProbeSources: []netip.Addr{netip.MustParseAddr("127.0.0.4")}})
	s := Spec{Key: "k", Record: "r.", Backend: "b", Checks: []*probe.Compiled{plain}, Rise: 1, Fall: 1, Interval: time.Hour}
	m.Sync([]Spec{s}, keys(s))
	m.Start()
	defer m.Stop()
	want := netip.MustParseAddr("127.0.0.4")
	testutil.Eventually(t, 5*time.Second, func() bool { return l.Last() == want }, "probe connected from %s, want %s", l.Last(), want)
	if st := m.State("k").Status(); st != Up && st != Unknown {
		t.Fatalf("backend is %s", st)
	}
}
