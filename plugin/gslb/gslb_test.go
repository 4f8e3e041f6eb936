package gslb

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/fall"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/answer"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
)

const testZone = `
records:
  www.example.org.:
    mode: failover
    backends:
      - {address: 10.0.0.1, priority: 1}
      - {address: 10.0.0.2, priority: 2}
  sticky.example.org.:
    mode: ip-hash
    backends:
      - {address: 10.0.1.1}
      - {address: 10.0.1.2}
`

// newTestGSLB returns a handler serving testZone for example.org., passing other queries to next.
func newTestGSLB(t testing.TB, next plugin.Handler, fallthroughZones ...string) *GSLB {
	t.Helper()
	return newTestGSLBWith(t, next, func(*config.Options) {}, fallthroughZones...)
}

// newTestGSLBWith is newTestGSLB with the engine's options changed by set.
func newTestGSLBWith(t testing.TB, next plugin.Handler, set func(*config.Options), fallthroughZones ...string) *GSLB {
	t.Helper()
	file := filepath.Join(t.TempDir(), "example.org.yml")
	if err := os.WriteFile(file, []byte(testZone), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := config.DefaultOptions()
	opts.Zones = []config.ZoneSource{{Origin: "example.org.", File: file}}
	opts.UseEDNSClientSubnet = true
	set(&opts)
	eng, err := engine.New(opts, clog.NewWithPlugin("gslb"))
	if err != nil {
		t.Fatal(err)
	}
	// PlainDNS as setup sets it for a block of plain DNS addresses (the encrypted transports'
	// answers are cmd/meridian's TestEncryptedTransports).
	g := &GSLB{Next: next, Engine: eng, Answer: answer.Options{UseECS: true}, PlainDNS: true}
	if fallthroughZones != nil {
		g.Fall.SetZonesFromArgs(fallthroughZones)
	}
	return g
}

// recorder is a ResponseWriter with a fixed client address that keeps the last message.
type recorder struct {
	remote net.Addr
	msg    *dns.Msg
}

func newRecorder(tcp bool) *recorder {
	if tcp {
		return &recorder{remote: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 5353}}
	}
	return &recorder{remote: &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 5353}}
}

func (r *recorder) LocalAddr() net.Addr       { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53} }
func (r *recorder) RemoteAddr() net.Addr      { return r.remote }
func (r *recorder) WriteMsg(m *dns.Msg) error { r.msg = m; return nil }
func (r *recorder) Write(b []byte) (int, error) {
	return len(b), nil
}
func (r *recorder) Close() error        { return nil }
func (r *recorder) TsigStatus() error   { return nil }
func (r *recorder) TsigTimersOnly(bool) {}
func (r *recorder) Hijack()             {}

// nextMarker answers every query it gets with REFUSED and counts them.
type nextMarker struct{ calls int }

func (n *nextMarker) Name() string { return "next" }
func (n *nextMarker) ServeDNS(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	n.calls++
	m := new(dns.Msg)
	m.SetRcode(r, dns.RcodeRefused)
	return dns.RcodeRefused, w.WriteMsg(m)
}

func TestServeDNSRouting(t *testing.T) {
	tests := []struct {
		name      string
		fall      []string // nil: no fallthrough
		qname     string
		wantNext  bool
		wantRcode int
	}{
		{"served name", nil, "www.example.org.", false, dns.RcodeSuccess},
		{"other zone goes to next", nil, "www.example.net.", true, dns.RcodeRefused},
		{"unknown name without fallthrough is NXDOMAIN", nil, "nope.example.org.", false, dns.RcodeNameError},
		{"unknown name with fallthrough goes to next", []string{}, "nope.example.org.", true, dns.RcodeRefused},
		{"fallthrough limited to other zones", []string{"example.net."}, "nope.example.org.", false, dns.RcodeNameError},
		{"fallthrough never takes served names", []string{}, "www.example.org.", false, dns.RcodeSuccess},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := &nextMarker{}
			g := newTestGSLB(t, next, tt.fall...)
			if tt.fall == nil {
				g.Fall = fall.F{}
			}
			w := newRecorder(false)
			q := new(dns.Msg)
			q.SetQuestion(tt.qname, dns.TypeA)
			if _, err := g.ServeDNS(context.Background(), w, q); err != nil {
				t.Fatal(err)
			}
			if (next.calls > 0) != tt.wantNext {
				t.Fatalf("next plugin called %d times, want called: %v", next.calls, tt.wantNext)
			}
			if w.msg == nil || w.msg.Rcode != tt.wantRcode {
				t.Fatalf("reply %v, want rcode %s", w.msg, dns.RcodeToString[tt.wantRcode])
			}
		})
	}
}

func TestReady(t *testing.T) {
	if g := newTestGSLB(t, nil); !g.Ready() {
		t.Fatal("not ready with its zones loaded")
	}
}

// BenchmarkServeDNS measures the plugin's whole query path as CoreDNS calls it. Its
// allocations are the response's only (message, question, answer, records, OPT with ECS).
func BenchmarkServeDNS(b *testing.B) {
	g := newTestGSLB(b, nil)
	for _, c := range []struct {
		name  string
		qname string
		ecs   bool
	}{
		{"failover", "www.example.org.", false},
		{"ip-hash+ECS", "sticky.example.org.", true},
		{"NXDOMAIN", "nope.example.org.", false},
	} {
		q := new(dns.Msg)
		q.SetQuestion(c.qname, dns.TypeA)
		if c.ecs {
			q.SetEdns0(1232, false)
			q.IsEdns0().Option = []dns.EDNS0{&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: net.IPv4(198, 51, 100, 0)}}
		}
		w := newRecorder(false)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.ServeDNS(context.Background(), w, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzServeDNS sends arbitrary wire-format queries through the plugin: nothing may panic, and
// every reply it writes must pack.
func FuzzServeDNS(f *testing.F) {
	g := newTestGSLB(f, &nextMarker{})
	for _, name := range []string{"www.example.org.", "sticky.example.org.", "x.example.org.", "example.org."} {
		q := new(dns.Msg)
		q.SetQuestion(name, dns.TypeA)
		q.SetEdns0(1232, true)
		wire, err := q.Pack()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(wire, false)
	}
	f.Fuzz(func(t *testing.T, wire []byte, tcp bool) {
		q := new(dns.Msg)
		if q.Unpack(wire) != nil {
			return
		}
		w := newRecorder(tcp)
		_, _ = g.ServeDNS(context.Background(), w, q)
		if w.msg != nil {
			if _, err := w.msg.Pack(); err != nil {
				t.Fatalf("reply does not pack: %v", err)
			}
		}
	})
}
