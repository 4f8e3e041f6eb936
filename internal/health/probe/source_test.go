package probe

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

func compileSourced(t *testing.T, typ string, params map[string]any) (*Compiled, error) {
	t.Helper()
	target := Target{Host: "127.0.0.1", IP: netip.MustParseAddr("127.0.0.1")}
	return Compile(config.HealthCheck{Type: typ, Params: config.NewParams(params)}, target, time.Second)
}

func TestCheckProbeSource(t *testing.T) {
	l := testutil.ListenSources(t)
	for _, tt := range []struct {
		source string
		want   netip.Addr
	}{
		{"", netip.MustParseAddr("127.0.0.1")},
		{"127.0.0.2", netip.MustParseAddr("127.0.0.2")},
		{"::ffff:127.0.0.3", netip.MustParseAddr("127.0.0.3")},
	} {
		params := map[string]any{"port": l.Port()}
		if tt.source != "" {
			params["probe_source"] = tt.source
		}
		for _, typ := range []string{"tcp", "http"} {
			c, err := compileSourced(t, typ, params)
			if err != nil {
				t.Fatal(err)
			}
			l.Reset()
			c.Prober.Probe(context.Background()) // the http probe fails on a closed connection; the source is what counts
			Release(c.Prober)
			testutil.Eventually(t, 5*time.Second, func() bool { return l.Last() == tt.want }, "%s check with probe_source %q connected from %s, want %s", typ, tt.source, l.Last(), tt.want)
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

func TestSourceDialer(t *testing.T) {
	l := testutil.ListenSources(t)
	addr := l.Addr().String()
	for _, tt := range []struct {
		sources []netip.Addr
		want    netip.Addr
	}{
		{[]netip.Addr{netip.MustParseAddr("127.0.0.4")}, netip.MustParseAddr("127.0.0.4")},
		{[]netip.Addr{netip.MustParseAddr("::1")}, netip.MustParseAddr("127.0.0.1")}, // no IPv4 source: the system's choice
	} {
		l.Reset()
		c, err := SourceDialer(tt.sources, time.Second).Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		testutil.Eventually(t, 5*time.Second, func() bool { return l.Last() == tt.want }, "connection from %v", tt.sources)
	}
	// A source that is not an address of this host fails the connection with a reason.
	_, err := SourceDialer([]netip.Addr{netip.MustParseAddr("192.0.2.1")}, time.Second).Dial("tcp", addr)
	if err == nil || !strings.Contains(err.Error(), "bind: cannot assign requested address") {
		t.Fatalf("dial from a foreign address: %v", err)
	}
}
