package gslbproxy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

const testZone = `
records:
  www.example.org.:
    mode: failover
    backends:
      - {address: 10.0.0.1, priority: 1}
      - {address: 10.0.0.2, priority: 2}
`

// zoneFile writes testZone into the test's directory and returns its path.
func zoneFile(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "example.org.yml")
	if err := os.WriteFile(file, []byte(testZone), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// newTestProxy returns a handler for testZone in front of next.
func newTestProxy(t *testing.T, next plugin.Handler) *Proxy {
	t.Helper()
	opts := config.DefaultOptions()
	opts.Zones = []config.ZoneSource{{Origin: "example.org.", File: zoneFile(t)}}
	eng, err := engine.New(opts, clog.NewWithPlugin(pluginName))
	if err != nil {
		t.Fatal(err)
	}
	return &Proxy{Next: next, Engine: eng, Answer: eng.AnswerOptions()}
}

// upstream is a next plugin that answers every query with the A records of addrs.
func upstream(addrs ...string) plugin.Handler {
	return plugin.HandlerFunc(func(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.Authoritative = true
		for _, a := range addrs {
			rr, err := dns.NewRR(r.Question[0].Name + " 300 IN A " + a)
			if err != nil {
				return dns.RcodeServerFailure, err
			}
			m.Answer = append(m.Answer, rr)
		}
		return dns.RcodeSuccess, w.WriteMsg(m)
	})
}

func TestServeDNS(t *testing.T) {
	many := make([]string, 60)
	for i := range many {
		many[i] = fmt.Sprintf("198.51.100.%d", i+1)
	}
	tests := []struct {
		name      string
		qname     string
		next      []string
		tcp, edns bool
		wantN     int
		wantFirst string
		wantTC    bool
	}{
		{name: "the best priority only", qname: "www.example.org.", next: []string{"10.0.0.2", "10.0.0.1"}, wantN: 1, wantFirst: "10.0.0.1"},
		{name: "unmonitored addresses pass", qname: "other.example.org.", next: []string{"10.0.0.2", "10.0.0.1"}, wantN: 2, wantFirst: "10.0.0.2"},
		{name: "UDP without EDNS is truncated to 512 bytes", qname: "other.example.org.", next: many, wantTC: true},
		{name: "UDP with a large EDNS buffer is whole", qname: "other.example.org.", next: many, edns: true, wantN: 60, wantFirst: "198.51.100.1"},
		{name: "TCP is whole", qname: "other.example.org.", next: many, tcp: true, wantN: 60, wantFirst: "198.51.100.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestProxy(t, upstream(tt.next...))
			r := new(dns.Msg)
			r.SetQuestion(tt.qname, dns.TypeA)
			if tt.edns {
				r.SetEdns0(4096, false)
			}
			w := &test.ResponseWriter{TCP: tt.tcp}
			rec := &recorder{ResponseWriter: w}
			rcode, err := p.ServeDNS(context.Background(), rec, r)
			if err != nil || rcode != dns.RcodeSuccess {
				t.Fatalf("ServeDNS = %d, %v", rcode, err)
			}
			m := rec.msg
			if m == nil {
				t.Fatal("nothing written")
			}
			if m.Truncated != tt.wantTC {
				t.Fatalf("TC = %v, want %v", m.Truncated, tt.wantTC)
			}
			wire, err := m.Pack()
			if err != nil {
				t.Fatal(err)
			}
			if !tt.tcp && !tt.edns && len(wire) > dns.MinMsgSize {
				t.Fatalf("UDP answer of %d bytes, more than the 512 the client can take", len(wire))
			}
			if tt.wantTC {
				return
			}
			if len(m.Answer) != tt.wantN || m.Answer[0].(*dns.A).A.String() != tt.wantFirst {
				t.Fatalf("answer %v, want %d records from %s", m.Answer, tt.wantN, tt.wantFirst)
			}
			if !m.Authoritative {
				t.Fatal("the upstream's AA flag was lost")
			}
		})
	}
}

// recorder keeps the message written through it.
type recorder struct {
	dns.ResponseWriter
	msg *dns.Msg
}

func (r *recorder) WriteMsg(m *dns.Msg) error { r.msg = m; return nil }

// TestServeDNSNothingWritten checks that a next plugin's failure, with nothing written, is
// returned for the server to answer.
func TestServeDNSNothingWritten(t *testing.T) {
	boom := errors.New("no upstream")
	p := newTestProxy(t, plugin.HandlerFunc(func(context.Context, dns.ResponseWriter, *dns.Msg) (int, error) {
		return dns.RcodeServerFailure, boom
	}))
	r := new(dns.Msg)
	r.SetQuestion("www.example.org.", dns.TypeA)
	rec := &recorder{ResponseWriter: &test.ResponseWriter{}}
	rcode, err := p.ServeDNS(context.Background(), rec, r)
	if rcode != dns.RcodeServerFailure || !errors.Is(err, boom) || rec.msg != nil {
		t.Fatalf("ServeDNS = %d, %v, wrote %v; want SERVFAIL, the error, nothing", rcode, err, rec.msg)
	}
}

func TestSetup(t *testing.T) {
	file := zoneFile(t)
	tests := []struct {
		name, input, wantErr string
	}{
		{"zone lines", "gslb_proxy {\n zone example.org. " + file + "\n}", ""},
		{"short form", "gslb_proxy " + file + " example.org.", ""},
		{"fallthrough is refused", "gslb_proxy {\n zone example.org. " + file + "\n fallthrough\n}", "takes no fallthrough"},
		{"dnssec is refused", "gslb_proxy {\n zone example.org. " + file + "\n dnssec {\n  key file " + testutil.WriteKey(t, t.TempDir(), testutil.KeySpec{Zone: "example.org"}).Base + "\n }\n}", "takes no dnssec block"},
		{"an unknown option", "gslb_proxy {\n zone example.org. " + file + "\n frobnicate\n}", `unknown option "frobnicate"`},
		{"no zones", "gslb_proxy", "no zones"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := caddy.NewTestController("dns", tt.input)
			err := setup(c)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), pluginName) {
				t.Fatalf("error %v, want one of %s with %q", err, pluginName, tt.wantErr)
			}
		})
	}
}
