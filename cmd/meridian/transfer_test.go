package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestZoneTransferToKnot makes a real Knot DNS a secondary of a gslb zone through CoreDNS's
// tsig and transfer plugins: Knot transfers it (TSIG-signed) at start and serves its static
// records and the record's healthy backends; when a backend goes down, Meridian raises the
// serial and sends a NOTIFY, and Knot transfers the zone again and stops answering the dead
// backend. An unsigned AXFR is refused.
func TestZoneTransferToKnot(t *testing.T) {
	t.Parallel()
	// The backends answer an http check, 503 once healthy[i] is cleared: a closed listener's
	// port could be taken by another test's server meanwhile.
	var ports []int
	var healthy [2]atomic.Bool
	for i, addr := range []string{"127.0.9.1:0", "127.0.9.2:0"} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		healthy[i].Store(true)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if !healthy[i].Load() {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		})}
		go func() { _ = srv.Serve(l) }()
		t.Cleanup(func() { srv.Close() })
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	key := testutil.TSIGKey{Name: "xfr.example.org.", Algorithm: dns.HmacSHA256, Secret: "c2VjcmV0LW9mLXRoZS10cmFuc2Zlci1rZXktMzJieXRlcyE="}
	zone := fmt.Sprintf(`soa: {mname: ns1.example.org., rname: hostmaster.example.org.}
ns: [ns1.example.org.]
static:
  "@": ["MX 10 mail"]
  ns1: ["A 127.0.0.1"]
  mail: ["A 192.0.2.25"]
records:
  www.example.org.:
    fallback_policy: {mode: fail-closed} # two addresses answered: both are up
    scrape_interval: 200ms
    scrape_timeout: 100ms
    backends:
      - {address: 127.0.9.1, rise: 1, fall: 1, healthchecks: [{type: http, params: {port: %d, uri: /, expected_code: 200, enable_tls: false}}]}
      - {address: 127.0.9.2, rise: 1, fall: 1, healthchecks: [{type: http, params: {port: %d, uri: /, expected_code: 200, enable_tls: false}}]}
`, ports[0], ports[1])
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "zone.yml"), []byte(zone), 0o644); err != nil {
		t.Fatal(err)
	}
	secondaryPort := testutil.FreePort(t)
	srv := testutil.Start(t, dir, func(port int) string {
		return fmt.Sprintf(`.:%d {
 bind 127.0.0.1
 tsig example.org {
  secret %s %s
  require AXFR IXFR
 }
 transfer example.org {
  to 127.0.0.1:%d
 }
 gslb {
  zone example.org. %s
 }
}
`, port, key.Name, key.Secret, secondaryPort, filepath.Join(dir, "zone.yml"))
	})
	primaryUp := func() bool { return len(addresses(exchange(t, srv.Addr, "www.example.org.", dns.TypeA))) == 2 }
	testutil.Eventually(t, 10*time.Second, primaryUp, "meridian does not answer both backends:\n%s", srv.Logs)
	knot := testutil.StartKnotSecondary(t, secondaryPort, srv.Addr, &key, "example.org.")
	ask := func(name string, qtype uint16) []string { return addresses(knot.Query(t, name, qtype)) }
	knotServes := func() string { return fmt.Sprint(ask("www.example.org.", dns.TypeA)) }
	testutil.Eventually(t, 10*time.Second, func() bool {
		return slices.Equal(ask("www.example.org.", dns.TypeA), []string{"127.0.9.1", "127.0.9.2"}) &&
			slices.Equal(ask("mail.example.org.", dns.TypeA), []string{"192.0.2.25"})
	}, "Knot serves www %s, mail %v; want both backends and the static address\nknot:\n%s\nmeridian:\n%s",
		knotServes, ask("mail.example.org.", dns.TypeA), knot.Logs, srv.Logs)
	if mx := knot.Query(t, "example.org.", dns.TypeMX); len(mx.Answer) != 1 {
		t.Errorf("Knot's MX: %v", mx.Answer)
	}

	healthy[1].Store(false)
	testutil.Eventually(t, 15*time.Second, func() bool { return slices.Equal(ask("www.example.org.", dns.TypeA), []string{"127.0.9.1"}) },
		"after a backend died, Knot serves %s, want 127.0.9.1 alone; meridian serves %s at serial %s\nknot:\n%s\nmeridian:\n%s",
		knotServes, func() string { return fmt.Sprint(addresses(exchange(t, srv.Addr, "www.example.org.", dns.TypeA))) },
		func() string { return fmt.Sprint(serialOf(t, exchange(t, srv.Addr, "example.org.", dns.TypeSOA))) },
		knot.Logs, srv.LogsWithStacks)
	if soaP, soaS := serialOf(t, exchange(t, srv.Addr, "example.org.", dns.TypeSOA)), serialOf(t, knot.Query(t, "example.org.", dns.TypeSOA)); soaP != soaS {
		t.Errorf("serials: meridian %d, Knot %d", soaP, soaS)
	}

	m := new(dns.Msg)
	m.SetAxfr("example.org.")
	c := &dns.Client{Net: "tcp", Timeout: 2 * time.Second}
	r, _, err := c.Exchange(m, srv.Addr)
	if err != nil || r.Rcode != dns.RcodeRefused {
		t.Errorf("an unsigned AXFR: %v, %v; want REFUSED", r, err)
	}
}

// exchange asks addr name/qtype over UDP and fails the test without an answer.
func exchange(t *testing.T, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	r, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, addr)
	if err != nil {
		t.Fatalf("ask %s %s: %v", name, dns.TypeToString[qtype], err)
	}
	return r
}

// serialOf returns the serial of the SOA answer r.
func serialOf(t *testing.T, r *dns.Msg) uint32 {
	t.Helper()
	if len(r.Answer) != 1 {
		t.Fatalf("SOA answer %v", r.Answer)
	}
	return r.Answer[0].(*dns.SOA).Serial
}
