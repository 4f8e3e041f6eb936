package main

import (
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// completeZone is a gslb zone with static data beside its records: the apex a GSLB record
// next to its MX, TXT and CAA, and a delegation with glue.
const completeZone = `soa: {mname: ns1.example.org., rname: hostmaster.example.org., ttl: 3600}
ns: [ns1.example.org.]
static:
  "@": ["MX 10 mail", "TXT \"v=spf1 -all\"", "CAA 0 issue \"letsencrypt.org\""]
  ns1: ["A 192.0.2.2"]
  mail: ["300 A 192.0.2.25"]
  sub: ["NS ns1.sub", "NS ns2.sub"]
  ns1.sub: ["A 192.0.2.53"]
  ns2.sub: ["AAAA 2001:db8::53"]
records:
  example.org.: {backends: [{address: 192.0.2.10}]}
  www.example.org.: {backends: [{address: 192.0.2.11}]}
`

// TestCompleteZoneWithDig asks a running meridian with dig +norec, as an operator checks a
// zone: the apex's A (a GSLB record), MX, TXT and CAA, and a static address, with AA; a name
// below the delegation gets a referral without AA, the NS set in authority and the glue of
// both families in additional.
func TestCompleteZoneWithDig(t *testing.T) {
	t.Parallel()
	srv := serveZone(t, completeZone, "")
	host, port, err := net.SplitHostPort(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	dig := func(name, qtype string) string {
		out, err := exec.Command("dig", "+norec", "+nocookie", "@"+host, "-p", port, name, qtype).CombinedOutput()
		if err != nil {
			t.Fatalf("dig %s %s: %v\n%s", name, qtype, err, out)
		}
		return string(out)
	}
	tests := []struct {
		name, qtype string
		want        []string
		not         []string
	}{
		{"example.org", "A", []string{"flags: qr aa;", "ANSWER: 1,", "example.org.\t\t30\tIN\tA\t192.0.2.10"}, nil},
		{"example.org", "MX", []string{"flags: qr aa;", "example.org.\t\t3600\tIN\tMX\t10 mail.example.org."}, nil},
		{"example.org", "TXT", []string{"flags: qr aa;", `"v=spf1 -all"`}, nil},
		{"example.org", "CAA", []string{"flags: qr aa;", `0 issue "letsencrypt.org"`}, nil},
		{"mail.example.org", "A", []string{"flags: qr aa;", "mail.example.org.\t300\tIN\tA\t192.0.2.25"}, nil},
		{"www.example.org", "MX", []string{"status: NOERROR", "flags: qr aa;", "ANSWER: 0, AUTHORITY: 1,", "SOA"}, nil},
		{"host.sub.example.org", "A", []string{"status: NOERROR", "flags: qr;", "ANSWER: 0, AUTHORITY: 2, ADDITIONAL: 3",
			";; AUTHORITY SECTION:\nsub.example.org.\t3600\tIN\tNS\tns1.sub.example.org.\nsub.example.org.\t3600\tIN\tNS\tns2.sub.example.org.",
			"ns1.sub.example.org.\t3600\tIN\tA\t192.0.2.53", "ns2.sub.example.org.\t3600\tIN\tAAAA\t2001:db8::53"}, []string{" aa"}},
	}
	for _, tt := range tests {
		out := dig(tt.name, tt.qtype)
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("dig %s %s does not show %q:\n%s", tt.name, tt.qtype, w, out)
			}
		}
		for _, n := range tt.not {
			if strings.Contains(strings.SplitN(out, "\n;; QUESTION", 2)[0], n) {
				t.Errorf("dig %s %s shows %q:\n%s", tt.name, tt.qtype, n, out)
			}
		}
	}
}

// TestNotifyIsNotImplemented: NOTIFY for a gslb zone gets NOTIMP, and a burst of them writes
// no error to the log (it used to be SERVFAIL and an ERROR line per packet).
func TestNotifyIsNotImplemented(t *testing.T) {
	t.Parallel()
	srv := serveZone(t, completeZone, "")
	c := &dns.Client{Timeout: time.Second}
	for i := range 200 {
		m := new(dns.Msg)
		m.SetNotify("example.org.")
		r, _, err := c.Exchange(m, srv.Addr)
		if err != nil || r.Rcode != dns.RcodeNotImplemented {
			t.Fatalf("NOTIFY %d: %v, %v; want NOTIMP", i, r, err)
		}
	}
	if logs := srv.Logs(); strings.Contains(logs, "[ERROR]") {
		t.Errorf("NOTIFYs logged errors:\n%s", logs)
	}
}
