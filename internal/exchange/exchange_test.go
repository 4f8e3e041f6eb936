package exchange

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

const (
	keyName  = "peer-key."
	secret   = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA=="
	secret2  = "b3RoZXItb3RoZXItb3RoZXItb3RoZXItb3RoZXItb3RoZXI="
	question = "app.gslb.example.com."
)

var testKey = &config.TSIGKey{Name: keyName, Algorithm: dns.HmacSHA256, Secret: secret}

// answerA answers every A question with count addresses 192.0.2.1, 192.0.2.2, ...
func answerA(m *dns.Msg, count int) {
	for i := range count {
		rr, _ := dns.NewRR(fmt.Sprintf("%s 30 IN A 192.0.2.%d", m.Question[0].Name, i+1))
		m.Answer = append(m.Answer, rr)
	}
}

// rcodeHandler answers with rcode and, for NOERROR, two A records.
func rcodeHandler(rcode int) dns.HandlerFunc {
	return func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetRcode(r, rcode)
		m.Authoritative = true
		if rcode == dns.RcodeSuccess {
			answerA(m, 2)
		}
		_ = w.WriteMsg(m)
	}
}

// truncatingHandler answers over UDP with the first records and TC set, over TCP with all
// count of them.
func truncatingHandler(count int) dns.HandlerFunc {
	return func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		if _, udp := w.LocalAddr().(*net.UDPAddr); udp {
			answerA(m, 3)
			m.Truncated = true
		} else {
			answerA(m, count)
		}
		_ = w.WriteMsg(m)
	}
}

// signingHandler answers two A records, signing the answer when the query is signed, as the
// server's secrets make it (whether or not they verified the query), with key (the query's
// when empty) and with tsigError reported (with NOTAUTH) when it is not zero.
func signingHandler(key string, tsigError uint16) dns.HandlerFunc {
	return func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		answerA(m, 2)
		if t := r.IsTsig(); t != nil {
			if key == "" {
				key = t.Hdr.Name
			}
			m.SetTsig(key, t.Algorithm, 300, time.Now().Unix())
			if tsigError != 0 {
				m.Rcode = dns.RcodeNotAuth
				m.Answer = nil
				m.Extra[len(m.Extra)-1].(*dns.TSIG).Error = tsigError
			}
		}
		_ = w.WriteMsg(m)
	}
}

// strictHandler answers like Meridian with peer_tsig: REFUSED, unsigned, for a query whose
// signature does not verify; a signed answer otherwise.
func strictHandler(w dns.ResponseWriter, r *dns.Msg) {
	if r.IsTsig() == nil || w.TsigStatus() != nil {
		m := new(dns.Msg)
		m.SetRcode(r, dns.RcodeRefused)
		_ = w.WriteMsg(m)
		return
	}
	signingHandler("", 0)(w, r)
}

func TestExchange(t *testing.T) {
	tests := []struct {
		name    string
		handler dns.Handler
		secrets map[string]string // the server's TSIG secrets
		key     *config.TSIGKey   // the client's
		kind    ErrorKind         // "" for success
		says    string            // what the error's text must contain
		rcode   int               // of a successful reply
		answers int               // in a successful reply
	}{
		{name: "noerror", handler: rcodeHandler(dns.RcodeSuccess), answers: 2},
		{name: "nxdomain is an answer", handler: rcodeHandler(dns.RcodeNameError), rcode: dns.RcodeNameError},
		{name: "refused", handler: rcodeHandler(dns.RcodeRefused), kind: KindRefused},
		{name: "servfail", handler: rcodeHandler(dns.RcodeServerFailure), kind: KindServfail},
		{name: "another rcode", handler: rcodeHandler(dns.RcodeNotImplemented), kind: KindRcode},
		{name: "truncated over udp, retried over tcp", handler: truncatingHandler(40), answers: 40},
		{name: "signed, answered signed", handler: dns.HandlerFunc(strictHandler),
			secrets: map[string]string{keyName: secret}, key: testKey, answers: 2},
		{name: "signed with hmac-sha512", handler: dns.HandlerFunc(strictHandler),
			secrets: map[string]string{keyName: secret}, answers: 2,
			key: &config.TSIGKey{Name: keyName, Algorithm: dns.HmacSHA512, Secret: secret}},
		{name: "signed, truncated, retried over tcp signed", handler: signedTruncating(40),
			secrets: map[string]string{keyName: secret}, key: testKey, answers: 40},
		{name: "server refuses our signature", handler: dns.HandlerFunc(strictHandler),
			secrets: map[string]string{keyName: secret2}, key: testKey, kind: KindTSIG},
		{name: "server signs with another secret", handler: signingHandler("", 0),
			secrets: map[string]string{keyName: secret2}, key: testKey, kind: KindTSIG},
		{name: "server signs with another key", handler: signingHandler("other-key.", 0),
			secrets: map[string]string{keyName: secret, "other-key.": secret}, key: testKey, kind: KindTSIG},
		{name: "server reports BADTIME", handler: signingHandler("", dns.RcodeBadTime),
			secrets: map[string]string{keyName: secret}, key: testKey, kind: KindTSIG, says: "TSIG error BADTIME"},
		{name: "unsigned answer to a signed query", handler: rcodeHandler(dns.RcodeSuccess),
			key: testKey, kind: KindTSIG},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := testutil.StartDNS(t, tt.handler, tt.secrets)
			c := &Client{Timeout: 2 * time.Second, Key: tt.key}
			r, err := c.Exchange(context.Background(), addr, question, dns.TypeA)
			if got := KindOf(err); got != tt.kind {
				t.Fatalf("kind %q, want %q (err %v)", got, tt.kind, err)
			}
			if tt.kind != "" {
				var e *Error
				if !errors.As(err, &e) || e.Server != addr || e.Name != question || e.Qtype != dns.TypeA {
					t.Fatalf("error %#v does not name the exchange", err)
				}
				if !strings.Contains(err.Error(), tt.says) {
					t.Fatalf("error %q does not say %q", err, tt.says)
				}
				return
			}
			if r.Rcode != tt.rcode || len(r.Answer) != tt.answers {
				t.Fatalf("rcode %s with %d answers, want %s with %d:\n%v",
					dns.RcodeToString[r.Rcode], len(r.Answer), dns.RcodeToString[tt.rcode], tt.answers, r)
			}
		})
	}
}

// signedTruncating is truncatingHandler that signs the TCP answer.
func signedTruncating(count int) dns.HandlerFunc {
	return func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		if _, udp := w.LocalAddr().(*net.UDPAddr); udp {
			m.Truncated = true
		} else {
			answerA(m, count)
		}
		t := r.IsTsig()
		m.SetTsig(t.Hdr.Name, t.Algorithm, 300, time.Now().Unix())
		_ = w.WriteMsg(m)
	}
}

// TestExchangeQuery checks what is asked: RD clear, EDNS0 with a 1232-byte UDP size, the
// name fully qualified.
func TestExchangeQuery(t *testing.T) {
	got := make(chan *dns.Msg, 1)
	addr := testutil.StartDNS(t, dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		got <- r
		rcodeHandler(dns.RcodeSuccess)(w, r)
	}), nil)
	c := &Client{Timeout: 2 * time.Second}
	if _, err := c.Exchange(context.Background(), addr, "app.gslb.example.com", dns.TypeAAAA); err != nil {
		t.Fatal(err)
	}
	q := <-got
	opt := q.IsEdns0()
	switch {
	case q.RecursionDesired:
		t.Error("RD set")
	case opt == nil || opt.UDPSize() != 1232:
		t.Errorf("EDNS0 %v, want UDP size 1232", opt)
	case q.Question[0].Name != question || q.Question[0].Qtype != dns.TypeAAAA:
		t.Errorf("question %v", q.Question[0])
	}
}

// TestExchangeMismatched: raw replies that do not answer the query are malformed.
func TestExchangeMismatched(t *testing.T) {
	tests := []struct {
		name   string
		change func(m *dns.Msg)
	}{
		{"wrong name", func(m *dns.Msg) { m.Question[0].Name = "other.example.com." }},
		{"wrong type", func(m *dns.Msg) { m.Question[0].Qtype = dns.TypeAAAA }},
		{"wrong class", func(m *dns.Msg) { m.Question[0].Qclass = dns.ClassCHAOS }},
		{"no question", func(m *dns.Msg) { m.Question = nil }},
		{"not a response", func(m *dns.Msg) { m.Response = false }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pc := testutil.ServeUDP(t, "127.0.0.1:0", func(p []byte) []byte {
				q := new(dns.Msg)
				if q.Unpack(p) != nil {
					return nil
				}
				m := new(dns.Msg)
				m.SetReply(q)
				answerA(m, 1)
				tt.change(m)
				out, _ := m.Pack()
				return out
			})
			c := &Client{Timeout: 2 * time.Second}
			_, err := c.Exchange(context.Background(), pc.LocalAddr().String(), question, dns.TypeA)
			if KindOf(err) != KindMalformed {
				t.Fatalf("kind %q, want malformed (err %v)", KindOf(err), err)
			}
		})
	}
	t.Run("garbage", func(t *testing.T) {
		pc := testutil.ServeUDP(t, "127.0.0.1:0", func(p []byte) []byte { return append(p[:2:2], 0x80, 0, 0, 1, 0xff) })
		c := &Client{Timeout: 2 * time.Second}
		_, err := c.Exchange(context.Background(), pc.LocalAddr().String(), question, dns.TypeA)
		if KindOf(err) != KindMalformed {
			t.Fatalf("kind %q, want malformed (err %v)", KindOf(err), err)
		}
	})
}

// blackhole is a UDP socket that reads queries and never answers; it signals every query it
// reads on the returned channel.
func blackhole(t *testing.T, addr string) (string, <-chan struct{}) {
	read := make(chan struct{}, 10)
	pc := testutil.ServeUDP(t, addr, func([]byte) []byte {
		read <- struct{}{}
		return nil
	})
	return pc.LocalAddr().String(), read
}

// TestExchangeTimeout: no answer is a timeout within Timeout, over UDP and over the TCP
// retry after a truncated answer (one bound for both).
func TestExchangeTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	silentUDP, _ := blackhole(t, "127.0.0.1:0")

	// A truncated UDP answer, then a TCP connection that is accepted and never answered.
	port := testutil.FreePort(t)
	silentTCP := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	testutil.ServeUDP(t, silentTCP, func(p []byte) []byte {
		q := new(dns.Msg)
		if q.Unpack(p) != nil {
			return nil
		}
		m := new(dns.Msg)
		m.SetReply(q)
		m.Truncated = true
		out, _ := m.Pack()
		return out
	})
	testutil.ServeTCP(t, silentTCP, func(c net.Conn) { _, _ = c.Read(make([]byte, 512)); <-t.Context().Done() })

	for name, addr := range map[string]string{"udp": silentUDP, "tcp retry": silentTCP} {
		t.Run(name, func(t *testing.T) {
			c := &Client{Timeout: timeout}
			start := time.Now()
			_, err := c.Exchange(context.Background(), addr, question, dns.TypeA)
			took := time.Since(start)
			if KindOf(err) != KindTimeout {
				t.Fatalf("kind %q, want timeout (err %v)", KindOf(err), err)
			}
			if took < timeout || took > timeout+time.Second {
				t.Fatalf("took %s, want about %s", took, timeout)
			}
		})
	}
}

// TestExchangeCancel: cancelling the context ends a pending exchange at once.
func TestExchangeCancel(t *testing.T) {
	addr, read := blackhole(t, "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := (&Client{Timeout: time.Minute}).Exchange(ctx, addr, question, dns.TypeA)
		done <- err
	}()
	<-read
	cancel()
	select {
	case err := <-done:
		if KindOf(err) != KindTimeout || !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v (kind %q), want a timeout wrapping context.Canceled", err, KindOf(err))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the exchange did not end when its context was cancelled")
	}
}

// TestExchangeNetwork: a port nobody listens on is a network error (ICMP port unreachable).
func TestExchangeNetwork(t *testing.T) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(testutil.FreePort(t)))
	_, err := (&Client{Timeout: 2 * time.Second}).Exchange(context.Background(), addr, question, dns.TypeA)
	if KindOf(err) != KindNetwork {
		t.Fatalf("kind %q, want network (err %v)", KindOf(err), err)
	}
}

func TestKindOf(t *testing.T) {
	for err, want := range map[error]ErrorKind{
		nil:                 "",
		errors.New("plain"): KindNetwork,
		fmt.Errorf("wrapped: %w", &Error{Kind: KindTSIG, Err: errors.New("x")}): KindTSIG,
	} {
		if got := KindOf(err); got != want {
			t.Errorf("KindOf(%v) = %q, want %q", err, got, want)
		}
	}
}

// TestExchangeSkipsOtherIDs: a datagram with another ID (a late answer to an earlier query on
// a kept socket, or a spoof) is not the answer: the exchange waits for its own, and times out
// when only others come.
func TestExchangeSkipsOtherIDs(t *testing.T) {
	for _, tt := range []struct {
		name   string
		own    bool // the server sends the right answer after the wrong one
		wantOK bool
	}{{"then its own", true, true}, {"only others", false, false}} {
		t.Run(tt.name, func(t *testing.T) {
			pc := testutil.ServeUDPFrom(t, "127.0.0.1:0", func(p []byte, _ net.Addr) [][]byte {
				q := new(dns.Msg)
				if q.Unpack(p) != nil {
					return nil
				}
				m := new(dns.Msg)
				m.SetReply(q)
				answerA(m, 1)
				m.Id++
				other, _ := m.Pack()
				if !tt.own {
					return [][]byte{other}
				}
				m.Id--
				own, _ := m.Pack()
				return [][]byte{other, own}
			})
			c := &Client{Timeout: 300 * time.Millisecond}
			defer c.Close()
			r, err := c.Exchange(context.Background(), pc.LocalAddr().String(), question, dns.TypeA)
			switch {
			case tt.wantOK && (err != nil || len(r.Answer) != 1):
				t.Fatalf("got %v, %v; want the answer with the query's ID", r, err)
			case !tt.wantOK && KindOf(err) != KindTimeout:
				t.Fatalf("kind %q, want timeout (err %v)", KindOf(err), err)
			}
		})
	}
}

// TestExchangeKeepsSockets: sequential exchanges with one server reuse one UDP socket (the
// server sees one source port); after Close, a client dials a new one.
func TestExchangeKeepsSockets(t *testing.T) {
	var mu sync.Mutex
	sources := map[string]int{}
	pc := testutil.ServeUDPFrom(t, "127.0.0.1:0", func(p []byte, from net.Addr) [][]byte {
		q := new(dns.Msg)
		if q.Unpack(p) != nil {
			return nil
		}
		mu.Lock()
		sources[from.String()]++
		mu.Unlock()
		m := new(dns.Msg)
		m.SetReply(q)
		out, _ := m.Pack()
		return [][]byte{out}
	})
	ask := func(c *Client) {
		if _, err := c.Exchange(context.Background(), pc.LocalAddr().String(), question, dns.TypeA); err != nil {
			t.Fatal(err)
		}
	}
	c := &Client{Timeout: time.Second}
	for range 5 {
		ask(c)
	}
	c.Close()
	ask(c) // a closed client still works, keeping nothing
	mu.Lock()
	defer mu.Unlock()
	if counts := slices.Sorted(maps.Values(sources)); !slices.Equal(counts, []int{1, 5}) {
		t.Errorf("queries by source port: %v, want 5 from one kept socket, then 1 from a new one", sources)
	}
}
