package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// proxyTestKey is the TSIG key Knot is started with; the proxy sends no updates.
var proxyTestKey = testutil.TSIGKey{Name: "meridian-test.", Algorithm: dns.HmacSHA256, Secret: "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0IQ=="}

// TestProxyInFrontOfKnot runs gslb_proxy before forward to a Knot DNS that is authoritative for
// example.org.: app's three A records are three TCP listeners, one of them closed, and the
// proxy answers the two healthy ones; names it does not list pass as Knot answers them, over
// UDP (truncated when they do not fit) and TCP; when every backend is down, app's fallback
// policy answers.
func TestProxyInFrontOfKnot(t *testing.T) {
	t.Parallel()
	var listeners []net.Listener
	var ports []int
	for i := 1; i <= 3; i++ {
		l := testutil.ServeTCP(t, fmt.Sprintf("127.0.10.%d:0", i), func(net.Conn) {})
		listeners, ports = append(listeners, l), append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	listeners[2].Close() // the third backend is down from the start

	big := make([]string, 60)
	for i := range big {
		big[i] = fmt.Sprintf("big IN A 198.51.100.%d", i+1)
	}
	knot := testutil.StartKnot(t, proxyTestKey, map[string][]string{"example.org.": append([]string{
		"app IN A 127.0.10.1", "app IN A 127.0.10.2", "app IN A 127.0.10.3",
		"alias IN CNAME app",
		"plain IN A 192.0.2.10", "plain IN A 192.0.2.11", "plain IN TXT \"not monitored\"",
	}, big...)})

	dir := t.TempDir()
	yaml := fmt.Sprintf(`
records:
  app.example.org.:
    record_ttl: 20
    degraded_ttl: 5
    scrape_interval: 200ms
    scrape_timeout: 100ms
    fallback_policy: {mode: fail-specific, fallback_ips: [192.0.2.99]}
    backends:
      - {address: 127.0.10.1, rise: 1, fall: 1, healthchecks: [{type: tcp, params: {port: %d}}]}
      - {address: 127.0.10.2, rise: 1, fall: 1, healthchecks: [{type: tcp, params: {port: %d}}]}
      - {address: 127.0.10.3, rise: 1, fall: 1, healthchecks: [{type: tcp, params: {port: %d}}]}
`, ports[0], ports[1], ports[2])
	if err := os.WriteFile(filepath.Join(dir, "proxy.yml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	s := testutil.Start(t, dir, func(port int) string {
		return fmt.Sprintf(".:%d {\n bind 127.0.0.1\n gslb_proxy {\n  zone example.org. proxy.yml\n }\n forward . %s\n}\n", port, knot.Addr)
	})

	query := func(network, name string) *dns.Msg { return s.Query(t, network, name, dns.TypeA) }
	healthy := []string{"127.0.10.1", "127.0.10.2"}
	testutil.Eventually(t, 10*time.Second, func() bool { return slices.Equal(inOrder(query("udp", "app.example.org")), healthy) },
		"app does not answer its two healthy backends: %v\n%s", query("udp", "app.example.org"), s.Logs())

	t.Run("healthy backends over UDP and TCP", func(t *testing.T) {
		for _, network := range []string{"udp", "tcp"} {
			m := query(network, "app.example.org")
			if got := inOrder(m); !slices.Equal(got, healthy) {
				t.Errorf("%s: answer %v, want %v", network, got, healthy)
			}
			if !m.Authoritative || m.Rcode != dns.RcodeSuccess {
				t.Errorf("%s: AA %v, rcode %s; want Knot's authoritative NOERROR", network, m.Authoritative, dns.RcodeToString[m.Rcode])
			}
			for _, rr := range m.Answer {
				if rr.Header().Ttl != 5 {
					t.Errorf("%s: TTL %d, want the degraded_ttl 5 under Knot's 30", network, rr.Header().Ttl)
				}
			}
		}
	})
	t.Run("CNAME chain", func(t *testing.T) {
		want := append([]string{"CNAME app.example.org."}, healthy...)
		if got := inOrder(query("udp", "alias.example.org")); !slices.Equal(got, want) {
			t.Errorf("answer %v, want %v", got, want)
		}
	})
	t.Run("an unlisted name passes as Knot answers it", func(t *testing.T) {
		for _, qtype := range []uint16{dns.TypeA, dns.TypeTXT} {
			theirs := knot.Query(t, "plain.example.org", qtype)
			ours := s.Query(t, "udp", "plain.example.org", qtype)
			if a, b := canonical(t, theirs), canonical(t, ours); !bytes.Equal(a, b) {
				t.Errorf("%s: the proxy's answer\n%s\ndiffers from Knot's\n%s", dns.TypeToString[qtype], ours, theirs)
			}
		}
	})
	t.Run("a big answer is truncated over UDP, whole over TCP", func(t *testing.T) {
		m := query("udp", "big.example.org")
		if !m.Truncated {
			t.Errorf("UDP answer of %d records without TC, want it truncated to 512 bytes", len(m.Answer))
		}
		if wire, err := m.Pack(); err != nil || len(wire) > dns.MinMsgSize {
			t.Errorf("UDP answer of %d bytes (%v), want a valid message of at most 512", len(wire), err)
		}
		m = query("tcp", "big.example.org")
		if m.Truncated || len(m.Answer) != 60 {
			t.Errorf("TCP answer: TC %v, %d records; want all 60", m.Truncated, len(m.Answer))
		}
	})

	listeners[0].Close()
	listeners[1].Close()
	fallback := []string{"192.0.2.99"}
	testutil.Eventually(t, 10*time.Second, func() bool { return slices.Equal(inOrder(query("udp", "app.example.org")), fallback) },
		"with every backend down app does not answer its fallback IP: %v", query("udp", "app.example.org"))
}

// canonical returns m packed without compression and with ID 0: what two servers that
// answer alike send, whatever their name compression and IDs.
func canonical(t *testing.T, m *dns.Msg) []byte {
	t.Helper()
	c := m.Copy()
	c.Id, c.Compress = 0, false
	wire, err := c.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return wire
}

// inOrder returns the A/AAAA/CNAME data of an answer section, in its order.
func inOrder(m *dns.Msg) []string {
	var out []string
	for _, rr := range m.Answer {
		switch x := rr.(type) {
		case *dns.A:
			out = append(out, x.A.String())
		case *dns.AAAA:
			out = append(out, x.AAAA.String())
		case *dns.CNAME:
			out = append(out, "CNAME "+x.Target)
		}
	}
	return out
}
