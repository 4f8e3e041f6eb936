package probe

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
)

// dnsTestTarget is a loopback backend whose service port (80) is not the DNS port, to show
// that the dns check does not use it.
var dnsTestTarget = Target{Host: "127.0.0.1", IP: netip.MustParseAddr("127.0.0.1"), Port: 80}

// dnsTestHandler answers fixed data: www.example.org has two A records, fail.example.org is
// SERVFAIL, rd.example.org has a TXT record telling whether the question asked for recursion,
// and every other name is NXDOMAIN.
func dnsTestHandler(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	q := r.Question[0]
	switch {
	case q.Name == "www.example.org." && q.Qtype == dns.TypeA:
		for _, ip := range []string{"192.0.2.10", "192.0.2.11"} {
			rr, _ := dns.NewRR("www.example.org. 60 IN A " + ip)
			m.Answer = append(m.Answer, rr)
		}
	case q.Name == "www.example.org.":
		// NODATA for other types
	case q.Name == "fail.example.org.":
		m.Rcode = dns.RcodeServerFailure
	case q.Name == "rd.example.org.":
		txt := "rd=false"
		if r.RecursionDesired {
			txt = "rd=true"
		}
		rr, _ := dns.NewRR(`rd.example.org. 60 IN TXT "` + txt + `"`)
		m.Answer = append(m.Answer, rr)
	default:
		m.Rcode = dns.RcodeNameError
	}
	_ = w.WriteMsg(m)
}

// dnsTestServer serves dnsTestHandler on a free loopback port over proto and returns the port.
func dnsTestServer(t *testing.T, proto string) int {
	t.Helper()
	started := make(chan struct{})
	srv := &dns.Server{Handler: dns.HandlerFunc(dnsTestHandler), NotifyStartedFunc: func() { close(started) }}
	var port int
	if proto == "udp" {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv.PacketConn, port = pc, pc.LocalAddr().(*net.UDPAddr).Port
	} else {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv.Listener, port = l, l.Addr().(*net.TCPAddr).Port
	}
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return port
}

// dnsCompile compiles a dns check the way the loader does.
func dnsCompile(params map[string]any, timeout time.Duration) (Prober, error) {
	c, err := Compile(config.HealthCheck{Type: "dns", Params: config.NewParams(params)}, dnsTestTarget, timeout)
	if err != nil {
		return nil, err
	}
	return c.Prober, nil
}

// TestDNSProbe checks the verdicts over UDP and TCP against a server with fixed data.
func TestDNSProbe(t *testing.T) {
	ports := map[string]int{"udp": dnsTestServer(t, "udp"), "tcp": dnsTestServer(t, "tcp")}
	closedPort := int(closedPort(t).Port)

	tests := []struct {
		name   string
		params map[string]any
		ok     bool
		reason string
	}{
		{"pass", map[string]any{"query_name": "www.example.org"}, true, "dns NOERROR, 2 answer records"},
		{"nodata passes", map[string]any{"query_name": "www.example.org", "query_type": "aaaa"}, true, "dns NOERROR, 0 answer records"},
		{"servfail", map[string]any{"query_name": "fail.example.org"}, false, "dns rcode SERVFAIL"},
		{"nxdomain", map[string]any{"query_name": "nope.example.org."}, false, "dns rcode NXDOMAIN"},
		{"expected nxdomain", map[string]any{"query_name": "nope.example.org", "expected_rcode": "nxdomain"}, true, "dns NXDOMAIN, 0 answer records"},
		{"expected nxdomain got noerror", map[string]any{"query_name": "www.example.org", "expected_rcode": "NXDOMAIN"}, false, "dns rcode NOERROR, expected NXDOMAIN"},
		{"answer matches", map[string]any{"query_name": "www.example.org", "expected_answer": `IN\s+A\s+192\.0\.2\.11$`}, true, "dns NOERROR, answer matches"},
		{"answer mismatch", map[string]any{"query_name": "www.example.org", "expected_answer": `192\.0\.2\.99`}, false, `dns answer does not match "192\\.0\\.2\\.99"`},
		{"answer mismatch no records", map[string]any{"query_name": "www.example.org", "query_type": "MX", "expected_answer": "mail"}, false, `dns answer does not match "mail" (no answer records)`},
		{"recursion off by default", map[string]any{"query_name": "rd.example.org", "query_type": "TXT", "expected_answer": `"rd=false"`}, true, "dns NOERROR, answer matches"},
		{"recursion desired", map[string]any{"query_name": "rd.example.org", "query_type": "TXT", "recursion_desired": true, "expected_answer": `"rd=true"`}, true, "dns NOERROR, answer matches"},
	}
	for _, proto := range []string{"udp", "tcp"} {
		for _, tc := range tests {
			t.Run(proto+"/"+tc.name, func(t *testing.T) {
				params := map[string]any{"port": ports[proto]}
				if proto == "tcp" {
					params["protocol"] = "TCP"
				}
				for k, v := range tc.params {
					params[k] = v
				}
				pr, err := dnsCompile(params, 2*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				res := pr.Probe(ctx)
				if res.OK != tc.ok || res.Reason != tc.reason {
					t.Errorf("got %+v, want OK=%v %q", res, tc.ok, tc.reason)
				}
			})
		}
	}

	t.Run("tcp/connection refused", func(t *testing.T) {
		pr, err := dnsCompile(map[string]any{"query_name": "www.example.org", "protocol": "tcp", "port": closedPort}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		res := pr.Probe(context.Background())
		if res.OK || res.Reason != "dns dial: connection refused" {
			t.Errorf("got %+v, want dns dial: connection refused", res)
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		pr, err := dnsCompile(map[string]any{"query_name": "www.example.org", "port": ports["udp"]}, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				if res := pr.Probe(ctx); !res.OK {
					t.Errorf("concurrent probe: %+v", res)
				}
			})
		}
		wg.Wait()
	})
}

// TestDNSProbeTimeout queries a UDP socket that never answers: the probe must return at the
// context's deadline, well before the check's own 5s timeout.
func TestDNSProbeTimeout(t *testing.T) {
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	pr, err := dnsCompile(map[string]any{"query_name": "www.example.org", "port": silent.LocalAddr().(*net.UDPAddr).Port}, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	res, elapsed := probeWithin(pr, 200*time.Millisecond)
	if elapsed > time.Second {
		t.Errorf("probe took %s, want about 200ms", elapsed)
	}
	if res.OK || res.Reason != "timeout after 200ms" {
		t.Errorf("got %+v, want timeout after 200ms", res)
	}
}

// TestDNSProbeParamErrors checks that bad parameters fail at load with the parameter named.
func TestDNSProbeParamErrors(t *testing.T) {
	tests := []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"missing query_name", map[string]any{}, "params.query_name: is required"},
		{"bad query_name", map[string]any{"query_name": "a..b"}, "params.query_name: \"a..b.\" is not a valid domain name"},
		{"bad type", map[string]any{"query_name": "x.org", "query_type": "AAAAA"}, `params.query_type: unknown record type "AAAAA"`},
		{"bad rcode", map[string]any{"query_name": "x.org", "expected_rcode": "NOPE"}, `params.expected_rcode: unknown rcode "NOPE"`},
		{"bad protocol", map[string]any{"query_name": "x.org", "protocol": "quic"}, `params.protocol: must be udp or tcp, not "quic"`},
		{"bad port", map[string]any{"query_name": "x.org", "port": 0}, "params.port: must be an integer from 1 to 65535"},
		{"bad regexp", map[string]any{"query_name": "x.org", "expected_answer": "("}, "params.expected_answer: invalid regular expression"},
		{"unknown param", map[string]any{"query_name": "x.org", "query_nmae": "y.org"}, "params.query_nmae: unknown parameter"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dnsCompile(tc.params, time.Second)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
