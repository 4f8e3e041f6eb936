package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// floodResult counts the replies to a flood: full answers, truncated ones (slips), BADCOOKIE.
type floodResult struct {
	sent, answered, truncated, badCookie int
}

// flood sends n copies of query (with ids 0..n-1) from a socket bound to the address from,
// as fast as it can, then reads replies until none came for wait. It may run on a goroutine
// of its own: it reports its errors.
func flood(from, to string, query *dns.Msg, n int, wait time.Duration) (floodResult, error) {
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(from)})
	if err != nil {
		return floodResult{}, err
	}
	defer conn.Close()
	dst, err := net.ResolveUDPAddr("udp", to)
	if err != nil {
		return floodResult{}, err
	}
	res := floodResult{sent: n}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			_ = conn.SetReadDeadline(time.Now().Add(wait))
			k, _, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			var m dns.Msg
			if m.Unpack(buf[:k]) != nil {
				continue
			}
			switch {
			case m.Rcode == dns.RcodeBadCookie:
				res.badCookie++
			case m.Truncated:
				res.truncated++
			case len(m.Answer) > 0:
				res.answered++
			}
		}
	}()
	for i := range n {
		query.Id = uint16(i)
		pkt, err := query.Pack()
		if err == nil {
			_, err = conn.WriteTo(pkt, dst)
		}
		if err != nil {
			conn.Close()
			<-done
			return res, err
		}
		if i%50 == 49 {
			time.Sleep(time.Millisecond) // a pace the socket buffers hold
		}
	}
	<-done
	return res, nil
}

// mustFlood is flood on the test's goroutine.
func mustFlood(t *testing.T, from, to string, query *dns.Msg, n int, wait time.Duration) floodResult {
	t.Helper()
	r, err := flood(from, to, query, n, wait)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// askMeanwhile asks query 10 times from the address from, one at a time, in the background:
// a legitimate client of another network while a test floods. Each query waits up to 200 ms
// for its answer and is asked again, up to three times, as a resolver would (a loaded
// machine may delay one): a network limited with the flood's gets no answer in three. The
// channel gets the total.
func askMeanwhile(t *testing.T, from, to string, query *dns.Msg) <-chan floodResult {
	t.Helper()
	other := make(chan floodResult, 1)
	go func() {
		var total floodResult
		for range 10 {
			total.sent++
			for range 3 {
				r, err := flood(from, to, query.Copy(), 1, 200*time.Millisecond)
				if err != nil {
					t.Error(err)
				}
				if r.answered > 0 {
					total.answered++
					break
				}
			}
		}
		other <- total
	}()
	return other
}

// TestRateLimitingHoldsAFlood floods a meridian with rrl from one address: that /24 gets its
// rate and slips (TC, about one in two of the rest), while another network, TCP, and a
// client with a valid server cookie are answered in full; the limiting is logged once and
// counted in the metrics.
func TestRateLimitingHoldsAFlood(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	zone := filepath.Join(dir, "zone.yml")
	if err := os.WriteFile(zone, []byte(staticWWW), 0o644); err != nil {
		t.Fatal(err)
	}
	metricsPort := testutil.FreePort(t)
	s := testutil.Start(t, dir, func(port int) string {
		return fmt.Sprintf(".:%d {\n bind 127.0.0.1\n prometheus 127.0.0.1:%d\n gslb {\n  zone example.org. %s\n  rrl\n  rrl_responses_per_second 10\n  rrl_window 5s\n }\n}\n", port, metricsPort, zone)
	})
	q := new(dns.Msg)
	q.SetQuestion("www.example.org.", dns.TypeA)

	// A legitimate client of another network, meanwhile: 5 queries a second.
	other := askMeanwhile(t, "127.0.1.1", s.Addr, q)
	got := mustFlood(t, "127.0.0.1", s.Addr, q.Copy(), 1000, 500*time.Millisecond)
	t.Logf("flood of %d from 127.0.0.1 at 10/s: %d answered, %d truncated", got.sent, got.answered, got.truncated)
	// The rate for a second and a half of flood at most (the flood may straddle a second),
	// and slips. (The share that slips is checked on the server's counts by
	// TestAbuseFloodFromOneAddress: a loaded machine drops some of the flood at the sockets.)
	if got.answered < 10 || got.answered > 20 || got.truncated == 0 {
		t.Errorf("flood of %d: %d answered, %d truncated", got.sent, got.answered, got.truncated)
	}
	if o := <-other; o.answered != o.sent {
		t.Errorf("another network during the flood: %d of %d answered", o.answered, o.sent)
	}
	// The flooding network over TCP, which cannot be spoofed: answered.
	if r := s.Query(t, "tcp", "www.example.org", dns.TypeA); len(r.Answer) != 1 {
		t.Errorf("TCP from the flooding network: %v", r)
	}
	// With a valid server cookie (learned over TCP), its UDP queries are not limited.
	m := q.Copy()
	m.SetEdns0(1232, false)
	m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: "0102030405060708"})
	learned := s.Exchange(t, "tcp", m)
	m.IsEdns0().Option[0].(*dns.EDNS0_COOKIE).Cookie = replyCookieOf(learned)
	if r := mustFlood(t, "127.0.0.1", s.Addr, m, 100, 500*time.Millisecond); r.answered != 100 {
		t.Errorf("with a valid server cookie: %+v", r)
	}
	// A client cookie alone, limited: BADCOOKIE with a cookie to come back with, not TC.
	m.IsEdns0().Option[0].(*dns.EDNS0_COOKIE).Cookie = "0102030405060708"
	if r := mustFlood(t, "127.0.0.1", s.Addr, m, 100, 500*time.Millisecond); r.badCookie == 0 || r.truncated != 0 || r.answered > 10 {
		t.Errorf("a client cookie alone, limited: %+v", r)
	}

	if !strings.Contains(s.Logs(), "rrl: 127.0.0.0/24 is over 10 positive responses/s for www.example.org. A: limited") {
		t.Errorf("the limiting is not logged:\n%s", s.Logs())
	}
	page, _ := parseSeries(t, metricsPage(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)))
	for _, k := range []string{"decision=allowed", "decision=dropped", "decision=slipped", "decision=cookie"} {
		if v := page["coredns_gslb_rrl_responses_total{"+k+",kind=positive}"]; v < 1 {
			t.Errorf("coredns_gslb_rrl_responses_total{%s,kind=positive} = %v", k, v)
		}
	}
}
