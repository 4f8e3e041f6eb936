package probe

import (
	"bufio"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// tcpServer serves each connection with handle on a loopback port until the test ends.
func tcpServer(t testing.TB, handle func(net.Conn)) Target {
	t.Helper()
	ln := testutil.ServeTCP(t, "127.0.0.1:0", func(c net.Conn) {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		handle(c)
	})
	return probeTarget(t, ln.Addr())
}

func TestTCPProbe(t *testing.T) {
	open := tcpServer(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	banner := tcpServer(t, func(c net.Conn) {
		io.WriteString(c, "SSH-2.0-test\r\n")
		io.Copy(io.Discard, c)
	})
	echo := tcpServer(t, func(c net.Conn) {
		line, err := bufio.NewReader(c).ReadString('\n')
		if err == nil {
			io.WriteString(c, "+"+strings.ToUpper(line))
		}
	})
	closing := tcpServer(t, func(c net.Conn) {})
	silent := probeTarget(t, silentListener(t).Addr())

	tests := []struct {
		name   string
		tg     Target
		params map[string]any
		ok     bool
		reason string
	}{
		{"open port", open, nil, true, "connected"},
		{"send only", open, map[string]any{"send": "hello\n"}, true, "connected, sent"},
		{"closed port", closedPort(t), nil, false, "connect: connection refused"},
		{"banner", banner, map[string]any{"expect": `^SSH-2\.0-`}, true, "tcp: expect matched"},
		{"echo", echo, map[string]any{"send": "ping\n", "expect": `^\+PING`}, true, "tcp: expect matched"},
		{"expect mismatch", banner, map[string]any{"expect": "^220 "}, false, `tcp: expect "^220 " not matched`},
		{"closed before answer", closing, map[string]any{"expect": "x"}, false, `tcp: expect "x" not matched (connection closed)`},
		{"silent", silent, map[string]any{"expect": "x"}, false, "timeout after 200ms"},
		{"silent after send", silent, map[string]any{"send": "hi", "expect": "x"}, false, "timeout after 200ms"},
		{"port param", Target{Host: "127.0.0.1"}, map[string]any{"port": int(open.Port)}, true, "connected"},
	}
	// The check's timeout and the context's deadline are the same, as the scheduler sets them:
	// the reason names the timeout even when the machine is slow to start the probe.
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, via := range probeWays {
				pr := compileProbeTimeout(t, "tcp", tc.params, tc.tg, 200*time.Millisecond)
				res, took := probeVia(t, via, pr, 200*time.Millisecond)
				if res.OK != tc.ok || res.Reason != tc.reason {
					t.Fatalf("%s: got %+v, want ok=%v reason %q", via, res, tc.ok, tc.reason)
				}
				if took > time.Second {
					t.Fatalf("%s: took %v", via, took)
				}
			}
		})
	}
}

func TestTCPParamErrors(t *testing.T) {
	noPort := Target{Host: "127.0.0.1"}
	tests := []struct {
		tg     Target
		params map[string]any
		want   string
	}{
		{noPort, nil, "params.port: required"},
		{noPort, map[string]any{"port": 0}, "params.port"},
		{Target{Host: "127.0.0.1", Port: 22}, map[string]any{"expect": "("}, "params.expect: invalid regular expression"},
		{Target{Host: "127.0.0.1", Port: 22}, map[string]any{"sned": "x"}, "params.sned: unknown parameter"},
	}
	for _, tc := range tests {
		_, err := Compile(config.HealthCheck{Type: "tcp", Params: config.NewParams(tc.params)}, tc.tg, time.Second)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got error %v, want %q", tc.params, err, tc.want)
		}
	}
}

// TestTCPChecksShareWhatTheirTargetsDoNot checks that the tcp checks of one Compiler (or of
// two Compilers of one load, NewCompilers) that differ only in their target keep one tcpCheck,
// and that any other difference (send, expect, the timeout) keeps them apart, each with its
// own target.
func TestTCPChecksShareWhatTheirTargetsDoNot(t *testing.T) {
	base := map[string]any{"port": 9, "send": "ping", "expect": "pong"}
	a := Target{Host: "127.0.0.1", IP: netip.MustParseAddr("127.0.0.1")}
	b := Target{Host: "127.0.0.2", IP: netip.MustParseAddr("127.0.0.2")}
	tests := []struct {
		name    string
		params  map[string]any
		target  Target
		timeout time.Duration
		shared  bool
	}{
		{"another target", base, b, time.Second, true},
		{"another map, the same parameters", map[string]any{"port": 9, "send": "ping", "expect": "pong"}, b, time.Second, true},
		{"another port", map[string]any{"port": 10, "send": "ping", "expect": "pong"}, a, time.Second, true},
		{"another send", map[string]any{"port": 9, "send": "pong", "expect": "pong"}, a, time.Second, false},
		{"send and expect swapped", map[string]any{"port": 9, "send": "pong", "expect": "ping"}, a, time.Second, false},
		{"no expect", map[string]any{"port": 9, "send": "ping"}, a, time.Second, false},
		{"another timeout", base, a, 2 * time.Second, false},
	}
	compilers := map[string]func() (*Compiler, *Compiler){
		"one Compiler":  func() (*Compiler, *Compiler) { c := NewCompiler(); return c, c },
		"two of a load": func() (*Compiler, *Compiler) { cs := NewCompilers(2); return cs[0], cs[1] },
	}
	for _, tt := range tests {
		for name, newCompilers := range compilers {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				c1, c2 := newCompilers()
				first, err := c1.Compile(config.HealthCheck{Type: "tcp", Params: config.NewParams(base)}, a, time.Second)
				if err != nil {
					t.Fatal(err)
				}
				second, err := c2.Compile(config.HealthCheck{Type: "tcp", Params: config.NewParams(tt.params)}, tt.target, tt.timeout)
				if err != nil {
					t.Fatal(err)
				}
				p1, p2 := first.Prober.(*tcpProbe), second.Prober.(*tcpProbe)
				if got := p1.tcpCheck == p2.tcpCheck; got != tt.shared {
					t.Errorf("shared = %v, want %v", got, tt.shared)
				}
				if p1.ap.Addr() != a.IP || p2.ap.Addr() != tt.target.IP {
					t.Errorf("targets %s and %s, want %s and %s", p1.ap, p2.ap, a.IP, tt.target.IP)
				}
				if p1.expect != nil && p2.expect != nil && p1.expect.String() == p2.expect.String() && p1.expect != p2.expect {
					t.Errorf("the expect %q is compiled twice", p1.expect)
				}
			})
		}
	}
}

// TestCompilersOfALoadShareAtTheSameTime compiles the same checks on two Compilers of one load
// at the same time: every check gets the one tcpCheck (and regular expression) of the load,
// which the race detector watches being made.
func TestCompilersOfALoadShareAtTheSameTime(t *testing.T) {
	params := config.NewParams(map[string]any{"port": 9, "send": "ping", "expect": "po+ng"})
	cs := NewCompilers(2)
	probes := make([][]*tcpProbe, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() {
			for j := range 200 {
				ip := netip.AddrFrom4([4]byte{127, 0, byte(i), byte(j)})
				compiled, err := c.Compile(config.HealthCheck{Type: "tcp", Params: params}, Target{Host: ip.String(), IP: ip}, time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				probes[i] = append(probes[i], compiled.Prober.(*tcpProbe))
			}
		})
	}
	wg.Wait()
	first := probes[0][0].tcpCheck
	for i, ps := range probes {
		for j, p := range ps {
			if p.tcpCheck != first || p.expect != first.expect {
				t.Fatalf("check %d of Compiler %d has a tcpCheck of its own", j, i)
			}
			Release(p)
		}
	}
}
