package health

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// sourceListener accepts connections on 127.0.0.1 and notes the address each came from.
type sourceListener struct {
	l    net.Listener
	mu   sync.Mutex
	from []netip.Addr
}

func listenSources(t *testing.T) *sourceListener {
	t.Helper()
	s := &sourceListener{}
	s.l = testutil.ServeTCP(t, "127.0.0.1:0", func(c net.Conn) {
		s.mu.Lock()
		s.from = append(s.from, c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap())
		s.mu.Unlock()
	})
	return s
}

func (s *sourceListener) port() int { return s.l.Addr().(*net.TCPAddr).Port }

// reset forgets the connections so far.
func (s *sourceListener) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.from = nil
}

// last returns the source of the newest connection.
func (s *sourceListener) last() netip.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.from) == 0 {
		return netip.Addr{}
	}
	return s.from[len(s.from)-1]
}

func compileSourced(t *testing.T, typ string, params map[string]any) (*Compiled, error) {
	t.Helper()
	target := Target{Host: "127.0.0.1", IP: netip.MustParseAddr("127.0.0.1")}
	return Compile(config.HealthCheck{Type: typ, Params: params}, target, time.Second)
}

func TestCheckProbeSource(t *testing.T) {
	l := listenSources(t)
	for _, tt := range []struct {
		source string
		want   netip.Addr
	}{
		{"", netip.MustParseAddr("127.0.0.1")},
		{"127.0.0.2", netip.MustParseAddr("127.0.0.2")},
		{"::ffff:127.0.0.3", netip.MustParseAddr("127.0.0.3")},
	} {
		params := map[string]any{"port": l.port()}
		if tt.source != "" {
			params["probe_source"] = tt.source
		}
		for _, typ := range []string{"tcp", "http"} {
			c, err := compileSourced(t, typ, params)
			if err != nil {
				t.Fatal(err)
			}
			l.reset()
			c.Prober.Probe(context.Background()) // the http probe fails on a closed connection; the source is what counts
			Release(c.Prober)
			testWait(t, func() bool { return l.last() == tt.want }, "%s check with probe_source %q connected from %s, want %s", typ, tt.source, l.last(), tt.want)
		}
	}
	// The source is part of the check's identity: two sources, two probes.
	a, _ := compileSourced(t, "tcp", map[string]any{"port": 80, "probe_source": "127.0.0.2"})
	b, _ := compileSourced(t, "tcp", map[string]any{"port": 80, "probe_source": "127.0.0.3"})
	if a.Key == b.Key {
		t.Fatal("checks from different sources share a key")
	}
}

func TestCheckProbeSourceErrors(t *testing.T) {
	for _, tt := range []struct {
		typ    string
		params map[string]any
		want   string
	}{
		{"tcp", map[string]any{"port": 80, "probe_source": "loopback"}, `params.probe_source: "loopback" is not an IP address`},
		{"tcp", map[string]any{"port": 80, "probe_source": "::1"}, "params.probe_source: ::1 is not of the address family of the target 127.0.0.1"},
		{"dns", map[string]any{"query_name": "example.org", "probe_source": "127.0.0.2"}, "params.probe_source: only tcp and http checks can choose their source address"},
	} {
		if _, err := compileSourced(t, tt.typ, tt.params); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s check with %v: error %v, want %q", tt.typ, tt.params, err, tt.want)
		}
	}
}

func TestInstanceProbeSource(t *testing.T) {
	l := listenSources(t)
	own, err := compileSourced(t, "tcp", map[string]any{"port": l.port(), "probe_source": "127.0.0.2"})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := compileSourced(t, "tcp", map[string]any{"port": l.port()})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeCoordinator{exclusive: true, sources: []netip.Addr{netip.MustParseAddr("::1"), netip.MustParseAddr("127.0.0.3")}}
	m := NewManager(Options{Log: testLog{}, Coordinator: f})
	for _, tt := range []struct {
		c    *Compiled
		want netip.Addr
	}{
		{plain, netip.MustParseAddr("127.0.0.3")}, // the instance's source of the target's family
		{own, netip.MustParseAddr("127.0.0.2")},   // the check's own source wins
	} {
		s := Spec{Key: "k", Record: "r.", Backend: "b", Checks: []*Compiled{tt.c}, Rise: 1, Fall: 1, Interval: time.Hour}
		m.Sync([]Spec{s}, keys(s))
		j := m.cluster.byID[checkOf(t, f).ID]
		if compiledProber(j.prober) != tt.c.Prober {
			t.Fatal("the job's prober is not the compiled one")
		}
		l.reset()
		j.prober.Probe(context.Background())
		testWait(t, func() bool { return l.last() == tt.want }, "probe connected from %s, want %s", l.last(), tt.want)
		// The same on the poller, which binds its own sockets.
		if p, err := newPoller(); err == nil {
			l.reset()
			done := make(chan Result, 1)
			if !j.prober.(asyncStarter).startAsync(p, nil, time.Now().Add(time.Second), func(r Result) { done <- r }) {
				t.Fatal("a bound tcp probe to an address does not run on the poller")
			}
			<-done
			p.close()
			testWait(t, func() bool { return l.last() == tt.want }, "poller probe connected from %s, want %s", l.last(), tt.want)
		}
	}
	m.Stop()
}

func TestSourceDialer(t *testing.T) {
	l := listenSources(t)
	addr := l.l.Addr().String()
	for _, tt := range []struct {
		sources []netip.Addr
		want    netip.Addr
	}{
		{[]netip.Addr{netip.MustParseAddr("127.0.0.4")}, netip.MustParseAddr("127.0.0.4")},
		{[]netip.Addr{netip.MustParseAddr("::1")}, netip.MustParseAddr("127.0.0.1")}, // no IPv4 source: the system's choice
	} {
		l.reset()
		c, err := SourceDialer(tt.sources, time.Second).Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		testWait(t, func() bool { return l.last() == tt.want }, "connection from %v", tt.sources)
	}
	// A source that is not an address of this host fails the connection with a reason.
	_, err := SourceDialer([]netip.Addr{netip.MustParseAddr("192.0.2.1")}, time.Second).Dial("tcp", addr)
	if err == nil || !strings.Contains(err.Error(), "bind: cannot assign requested address") {
		t.Fatalf("dial from a foreign address: %v", err)
	}
}

// testWait polls cond for up to five seconds.
func testWait(t *testing.T, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: "+format, args...)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestInstanceProbeSourceWithoutCluster: the Corefile's probe_source binds the probes of a
// manager without cluster mode too.
func TestInstanceProbeSourceWithoutCluster(t *testing.T) {
	l := listenSources(t)
	plain, err := compileSourced(t, "tcp", map[string]any{"port": l.port()})
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(Options{Log: testLog{}, ProbeSources: []netip.Addr{netip.MustParseAddr("127.0.0.4")}})
	s := Spec{Key: "k", Record: "r.", Backend: "b", Checks: []*Compiled{plain}, Rise: 1, Fall: 1, Interval: time.Hour}
	m.Sync([]Spec{s}, keys(s))
	m.Start()
	defer m.Stop()
	want := netip.MustParseAddr("127.0.0.4")
	testWait(t, func() bool { return l.last() == want }, "probe connected from %s, want %s", l.last(), want)
	if st := m.State("k").Status(); st != Up && st != Unknown {
		t.Fatalf("backend is %s", st)
	}
}
