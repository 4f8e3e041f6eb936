package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// fastPathZone has records of every kind the fast path answers (failover, ip-hash,
// consistent-hash, a fail-specific record that is down, a host-name backend, a wildcard, SRV
// and HTTPS records, static data, a delegation) and names it leaves to the chain (ANY, DS).
const fastPathZone = `soa: {serial: 2026120101} # not the file's time: the two servers' files differ by seconds
static:
  "@": ["MX 10 mail", "TXT \"v=spf1 -all\""]
  mail: ["A 192.0.2.25"]
  txt: ["TXT \"hello\" \"world\""]
  sub: ["NS ns1.sub"]
  ns1.sub: ["A 192.0.2.53"]
  other: ["CNAME www"]
records:
  www.example.org.: {mode: failover, backends: [{address: 192.0.2.10, priority: 1}, {address: 192.0.2.11, priority: 2}, {address: "2001:db8::10"}]}
  hash.example.org.: {mode: ip-hash, backends: [{address: 192.0.2.20}, {address: 192.0.2.21}, {address: 192.0.2.22}]}
  ring.example.org.: {mode: consistent-hash, backends: [{address: 192.0.2.30}, {address: 192.0.2.31}]}
  down.example.org.:
    fallback_policy: {mode: fail-specific, fallback_ips: [192.0.2.99]}
    backends: [{address: 192.0.2.40, healthchecks: [{type: exec, params: {command: /bin/false}}]}]
  alias.example.org.: {backends: [{address: www.example.net.}]}
  "*.app.example.org.": {backends: [{address: 192.0.2.50}]}
  svc.example.org.: {alpn: [h2], backends: [{address: 192.0.2.60, port: 443}, {address: "2001:db8::60", port: 443}]}
`

// TestFastPathEndToEnd serves the same zone from a meridian with the fast path and one
// without, and requires the same bytes (the ID aside) for every query, over UDP and TCP,
// answered by the fast path or passed to the chain: valid queries of every kind, EDNS with DO
// and Client Subnet, names in mixed case, and a few malformed packets; then that the fast
// path answered the queries it handles and passed the rest, as its metrics count them. A
// second server block on the address serves a zone inside the gslb zone, and the fallthrough
// option covers a name of it: the fast path leaves both to CoreDNS's server.
func TestFastPathEndToEnd(t *testing.T) {
	t.Parallel()
	start := func(fast bool) (*testutil.Server, int) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "zone.yml"), []byte(fastPathZone), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, origin := range []string{"inner", "fall"} {
			db := fmt.Sprintf("$ORIGIN %[1]s.example.org.\n@ 60 IN SOA ns.%[1]s.example.org. h.%[1]s.example.org. 1 7200 3600 1209600 60\n@ 60 IN NS ns\nns 60 IN A 192.0.2.77\n", origin)
			if err := os.WriteFile(filepath.Join(dir, "db."+origin), []byte(db), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		metrics := testutil.FreePort(t)
		opt, marker := "", testutil.NoFastPath
		if fast {
			opt, marker = "  fastpath 2\n", ""
		}
		return testutil.Start(t, dir, func(port int) string {
			return fmt.Sprintf("%s\nexample.org:%d {\n bind 127.0.0.1\n prometheus 127.0.0.1:%d\n gslb {\n  zone example.org. %s\n  use_edns_csubnet\n  fallthrough fall.example.org.\n%s }\n file %s fall.example.org\n}\ninner.example.org:%d {\n bind 127.0.0.1\n file %s\n}\n",
				marker, port, metrics, filepath.Join(dir, "zone.yml"), opt, filepath.Join(dir, "db.fall"), port, filepath.Join(dir, "db.inner"))
		}), metrics
	}
	fast, metricsPort := start(true)
	slow, _ := start(false)
	ecs := func(name string, qtype uint16, subnet string, do bool) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		m.SetEdns0(4096, do)
		if subnet != "" {
			a := net.ParseIP(subnet).To4()
			m.IsEdns0().Option = []dns.EDNS0{&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: a}}
		}
		return m
	}
	plain := func(name string, qtype uint16) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		return m
	}
	queries := []*dns.Msg{
		plain("www.example.org.", dns.TypeA), plain("WwW.Example.ORG.", dns.TypeA), plain("www.example.org.", dns.TypeAAAA),
		ecs("www.example.org.", dns.TypeA, "", true), ecs("hash.example.org.", dns.TypeA, "198.51.100.0", false),
		ecs("hash.example.org.", dns.TypeA, "203.0.113.0", true), ecs("ring.example.org.", dns.TypeA, "198.51.100.0", false),
		plain("down.example.org.", dns.TypeA), plain("alias.example.org.", dns.TypeA), plain("www.example.org.", dns.TypeTXT),
		plain("nothing.example.org.", dns.TypeA), plain("example.org.", dns.TypeMX), plain("example.org.", dns.TypeSOA),
		plain("www.example.com.", dns.TypeA), plain("example.org.", dns.TypeNS), ecs("Nothing.Example.org.", dns.TypeAAAA, "198.51.100.0", true),
		plain("hash.example.org.", dns.TypeAAAA), plain("txt.example.org.", dns.TypeTXT), plain("mail.example.org.", dns.TypeA),
		plain("x.sub.example.org.", dns.TypeA), plain("sub.example.org.", dns.TypeDS), plain("other.example.org.", dns.TypeA),
		plain("a.b.app.example.org.", dns.TypeA), plain("app.example.org.", dns.TypeA), plain("svc.example.org.", dns.TypeHTTPS),
		plain("svc.example.org.", dns.TypeSRV), plain("www.example.org.", dns.TypeANY), plain("alias.example.org.", dns.TypeCNAME),
		plain("ns.inner.example.org.", dns.TypeA), plain("gone.inner.example.org.", dns.TypeA), plain("x.fall.example.org.", dns.TypeA),
		plain("fall.example.org.", dns.TypeSOA),
	}
	var packets [][]byte
	for _, q := range queries {
		b, err := q.Pack()
		if err != nil {
			t.Fatal(err)
		}
		packets = append(packets, b)
	}
	packets = append(packets,
		[]byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0},             // a question it does not carry
		[]byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 3, 'w'},     // a name cut short
		append(append([]byte(nil), packets[0]...), 0xde, 0xad), // trailing bytes
	)
	// The down record answers its fallback only once its check failed.
	for _, s := range []*testutil.Server{slow, fast} {
		testutil.Eventually(t, 10*time.Second, func() bool {
			r := exchangeRaw(t, s.Addr, packets[7])
			return r != nil && strings.Contains(fmt.Sprint(r), "192.0.2.99")
		}, "down.example.org. does not answer its fallback:\n%s", s.Logs())
	}
	for i, p := range packets {
		if a, b := rawAnswer(t, fast.Addr, p), rawAnswer(t, slow.Addr, p); string(a) != string(b) {
			t.Errorf("query %d over UDP: the fast path answered\n%x\nthe chain\n%x", i, a, b)
		}
		if i >= len(queries) {
			continue // CoreDNS answers these over TCP as it reads them, which the fast path does not change
		}
		if a, b := tcpAnswer(t, fast.Addr, p), tcpAnswer(t, slow.Addr, p); string(a) != string(b) {
			t.Errorf("query %d over TCP: the fast path answered\n%x\nthe chain\n%x", i, a, b)
		}
	}
	page := string(metricsPage(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)))
	for _, series := range []string{
		fmt.Sprintf(`coredns_gslb_fastpath_packets_total{address=%q,path="fast"}`, fast.Addr),
		fmt.Sprintf(`coredns_gslb_fastpath_packets_total{address=%q,path="slow"}`, fast.Addr),
		fmt.Sprintf(`coredns_gslb_fastpath_tcp_queries_total{address=%q,path="fast"}`, fast.Addr),
		fmt.Sprintf(`coredns_gslb_fastpath_tcp_queries_total{address=%q,path="slow"}`, fast.Addr),
		`coredns_dns_requests_total{family="1",proto="udp",server="dns://` + fast.Addr + `",type="A",view="",zone="example.org."}`,
		`coredns_dns_requests_total{family="1",proto="tcp",server="dns://` + fast.Addr + `",type="MX",view="",zone="example.org."}`,
		`coredns_dns_responses_total{plugin="gslb",rcode="NXDOMAIN",server="dns://` + fast.Addr + `",view="",zone="example.org."}`,
	} {
		if !strings.Contains(page, series) {
			t.Errorf("no %s in the metrics:\n%s", series, grepLines(page, "fastpath|dns_requests_total|dns_responses_total"))
		}
	}
}

// tcpAnswer sends pkt to addr over a TCP connection of its own and returns the reply with its
// ID zeroed (nil for none).
func tcpAnswer(t *testing.T, addr string, pkt []byte) []byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write(append([]byte{byte(len(pkt) >> 8), byte(len(pkt))}, pkt...)); err != nil {
		t.Fatal(err)
	}
	var n [2]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return nil
	}
	out := make([]byte, int(n[0])<<8|int(n[1]))
	if _, err := io.ReadFull(c, out); err != nil {
		return nil
	}
	if len(out) >= 2 {
		out[0], out[1] = 0, 0
	}
	return out
}

// rawAnswer sends pkt to addr over UDP and returns the reply with its ID zeroed (nil for none
// after a few tries: a dropped malformed packet).
func rawAnswer(t *testing.T, addr string, pkt []byte) []byte {
	t.Helper()
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 65535)
	for range 3 {
		if _, err := c.Write(pkt); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if n, err := c.Read(buf); err == nil {
			out := buf[:n]
			if len(out) >= 2 {
				out[0], out[1] = 0, 0
			}
			return append([]byte(nil), out...)
		}
	}
	return nil
}

// exchangeRaw sends pkt and unpacks the reply, nil for none.
func exchangeRaw(t *testing.T, addr string, pkt []byte) *dns.Msg {
	t.Helper()
	b := rawAnswer(t, addr, pkt)
	if b == nil {
		return nil
	}
	m := new(dns.Msg)
	if m.Unpack(b) != nil {
		return nil
	}
	return m
}

// grepLines returns the lines of s that contain one of the |-separated words.
func grepLines(s, words string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		for _, w := range strings.Split(words, "|") {
			if strings.Contains(line, w) {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
