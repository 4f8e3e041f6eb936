package testutil

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// heartbeat returns an UPDATE of heartbeat.test that sets name's TXT record to beat.
func heartbeat(t *testing.T, name, beat string) *dns.Msg {
	t.Helper()
	m := new(dns.Msg).SetUpdate("heartbeat.test.")
	m.RemoveRRset([]dns.RR{rr(t, name+" 0 IN TXT")})
	m.Insert([]dns.RR{rr(t, fmt.Sprintf("%s 30 IN TXT %q", name, beat))})
	return m
}

// proxyTXT asks the proxy for name's TXT records, over UDP and over TCP, and fails the test
// unless both answers are the same NOERROR: queries pass whatever the faults.
func proxyTXT(t *testing.T, p *FaultProxy, name string) []string {
	t.Helper()
	var got [][]string
	for _, network := range []string{"udp", "tcp"} {
		m := new(dns.Msg).SetQuestion(name, dns.TypeTXT)
		r, _, err := (&dns.Client{Net: network, Timeout: 2 * time.Second}).Exchange(m, p.Addr)
		if err != nil || r.Rcode != dns.RcodeSuccess {
			t.Fatalf("%s query of %s through the proxy: %v %v", network, name, err, r)
		}
		got = append(got, rdata(r.Answer))
	}
	if !slices.Equal(got[0], got[1]) {
		t.Fatalf("TXT of %s through the proxy: %q over UDP, %q over TCP", name, got[0], got[1])
	}
	return got[0]
}

func TestFaultProxy(t *testing.T) {
	upstream := StartKnot(t, testTSIGKey, map[string][]string{"heartbeat.test.": {`site1 IN TXT "beat=0"`}})
	p := StartFaultProxy(t, upstream.Addr)
	const name = "site1.heartbeat.test."
	var passed, refused, dropped int

	for i, network := range []string{"udp", "tcp"} {
		p.SetUpdateFaults(1, 0)
		r, err := sendUpdate(network, p.Addr, testTSIGKey, heartbeat(t, name, "refused"), 2*time.Second)
		refused++
		if err != nil || r.Rcode != dns.RcodeRefused || r.IsTsig() != nil {
			t.Fatalf("%s update with refuse=1: %v %v; want an unsigned REFUSED", network, err, r)
		}
		if got := proxyTXT(t, p, name); !slices.Equal(got, []string{fmt.Sprintf(`"beat=%d"`, i)}) {
			t.Fatalf("after a refused %s update: TXT %q, want the previous beat", network, got)
		}

		p.SetUpdateFaults(0, 1)
		_, err = sendUpdate(network, p.Addr, testTSIGKey, heartbeat(t, name, "dropped"), 300*time.Millisecond)
		dropped++
		var netErr net.Error
		if !errors.As(err, &netErr) || !netErr.Timeout() {
			t.Fatalf("%s update with drop=1: %v, want a timeout", network, err)
		}

		p.SetUpdateFaults(0, 0)
		beat := fmt.Sprintf("beat=%d", i+1)
		r, err = sendUpdate(network, p.Addr, testTSIGKey, heartbeat(t, name, beat), 2*time.Second)
		passed++
		if err != nil || r.Rcode != dns.RcodeSuccess {
			t.Fatalf("%s update without faults: %v %v\n%s", network, err, r, upstream.Logs())
		}
		if got := proxyTXT(t, p, name); !slices.Equal(got, []string{`"` + beat + `"`}) {
			t.Fatalf("after a passed %s update: TXT %q, want [%q]", network, got, beat)
		}
	}

	if gotPassed, gotRefused, gotDropped := p.Counts(); gotPassed != passed || gotRefused != refused || gotDropped != dropped {
		t.Fatalf("counts (passed, refused, dropped) = %d, %d, %d; want %d, %d, %d",
			gotPassed, gotRefused, gotDropped, passed, refused, dropped)
	}

	// Half refused: each update is one or the other, and both happen.
	p.SetUpdateFaults(0.5, 0)
	const n = 40
	for i := range n {
		r, err := sendUpdate("tcp", p.Addr, testTSIGKey, heartbeat(t, name, fmt.Sprintf("half=%d", i)), 2*time.Second)
		if err != nil || (r.Rcode != dns.RcodeSuccess && r.Rcode != dns.RcodeRefused) {
			t.Fatalf("update with refuse=0.5: %v %v", err, r)
		}
	}
	gotPassed, gotRefused, gotDropped := p.Counts()
	if gotPassed+gotRefused != passed+refused+n || gotDropped != dropped || gotPassed == passed || gotRefused == refused {
		t.Fatalf("counts (passed, refused, dropped) = %d, %d, %d; want %d + %d updates passed or refused, some of each, and %d dropped",
			gotPassed, gotRefused, gotDropped, passed+refused, n, dropped)
	}
}
