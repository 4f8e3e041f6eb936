package testutil

import (
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// testTSIGKey is the key the servers of these tests accept.
var testTSIGKey = TSIGKey{Name: "meridian-test.", Algorithm: dns.HmacSHA256, Secret: "bWVyaWRpYW4tdGVzdC1zZWNyZXQtMzItYnl0ZXMhIQ=="}

// updateServers are the servers under test, by kind.
var updateServers = []struct {
	kind  string
	start func(testing.TB, TSIGKey, map[string][]string) *UpdateServer
}{
	{"bind", StartBIND},
	{"knot", StartKnot},
}

// sendUpdate signs the UPDATE m with key and sends it to addr over network, waiting at most
// timeout for the reply. The reply comes back even when its signature does not verify.
func sendUpdate(network, addr string, key TSIGKey, m *dns.Msg, timeout time.Duration) (*dns.Msg, error) {
	m.SetTsig(key.Name, key.Algorithm, 300, time.Now().Unix())
	c := &dns.Client{Net: network, Timeout: timeout, TsigSecret: map[string]string{key.Name: key.Secret}}
	r, _, err := c.Exchange(m, addr)
	return r, err
}

// mustUpdate sends m signed with the test key over TCP and fails the test unless the server
// applied it (NOERROR).
func mustUpdate(t *testing.T, s *UpdateServer, m *dns.Msg) {
	t.Helper()
	r, err := sendUpdate("tcp", s.Addr, testTSIGKey, m, 2*time.Second)
	if err != nil {
		t.Fatalf("%s update: %v\n%s", s.Kind, err, s.Logs())
	}
	if r.Rcode != dns.RcodeSuccess {
		t.Fatalf("%s update: %s\n%s", s.Kind, dns.RcodeToString[r.Rcode], s.Logs())
	}
}

// rr parses one resource record, failing the test when it does not parse.
func rr(t *testing.T, s string) dns.RR {
	t.Helper()
	r, err := dns.NewRR(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// rdata returns the text of each record's data (after name, TTL, class and type), sorted.
func rdata(rrs []dns.RR) []string {
	var out []string
	for _, r := range rrs {
		out = append(out, r.String()[len(r.Header().String()):])
	}
	slices.Sort(out)
	return out
}

// answerOf asks s for name/qtype and returns the data of the answer's records, failing the
// test unless the answer is authoritative and offers no recursion.
func answerOf(t *testing.T, s *UpdateServer, name string, qtype uint16) []string {
	t.Helper()
	r := s.Query(t, name, qtype)
	if r.Rcode != dns.RcodeSuccess || !r.Authoritative || r.RecursionAvailable {
		t.Fatalf("%s answer to %s %s: rcode %s, aa %v, ra %v; want NOERROR, aa, no ra",
			s.Kind, name, dns.TypeToString[qtype], dns.RcodeToString[r.Rcode], r.Authoritative, r.RecursionAvailable)
	}
	return rdata(r.Answer)
}

func TestUpdateServerTXT(t *testing.T) {
	for _, srv := range updateServers {
		t.Run(srv.kind, func(t *testing.T) {
			s := srv.start(t, testTSIGKey, map[string][]string{"heartbeat.test.": nil})
			const name = "site1.heartbeat.test."

			add := new(dns.Msg).SetUpdate("heartbeat.test.")
			add.Insert([]dns.RR{rr(t, name+` 30 IN TXT "beat=1"`)})
			mustUpdate(t, s, add)
			if got := answerOf(t, s, name, dns.TypeTXT); !slices.Equal(got, []string{`"beat=1"`}) {
				t.Fatalf("after the insert: TXT %q, want [\"beat=1\"]", got)
			}

			replace := new(dns.Msg).SetUpdate("heartbeat.test.")
			replace.RemoveRRset([]dns.RR{rr(t, name+" 0 IN TXT")})
			replace.Insert([]dns.RR{rr(t, name+` 30 IN TXT "beat=2"`)})
			mustUpdate(t, s, replace)
			if got := answerOf(t, s, name, dns.TypeTXT); !slices.Equal(got, []string{`"beat=2"`}) {
				t.Fatalf("after the replacement: TXT %q, want [\"beat=2\"]", got)
			}
		})
	}
}

// TestUpdateServerWrongKey sends an update signed with the right key name and a wrong secret.
// Both servers answer NOTAUTH with the TSIG error BADSIG in an unsigned TSIG record (RFC 8945
// section 5.3.2: the server cannot sign with a key it could not verify), and apply nothing; the
// client, unable to verify the reply, reports a signature error alongside it.
func TestUpdateServerWrongKey(t *testing.T) {
	for _, srv := range updateServers {
		t.Run(srv.kind, func(t *testing.T) {
			s := srv.start(t, testTSIGKey, map[string][]string{"heartbeat.test.": {`site1 IN TXT "beat=0"`}})
			wrong := testTSIGKey
			wrong.Secret = "d3Jvbmctc2VjcmV0LXdyb25nLXNlY3JldC13cm9uZyE="
			m := new(dns.Msg).SetUpdate("heartbeat.test.")
			m.RemoveRRset([]dns.RR{rr(t, "site1.heartbeat.test. 0 IN TXT")})
			m.Insert([]dns.RR{rr(t, `site1.heartbeat.test. 30 IN TXT "forged"`)})
			r, err := sendUpdate("tcp", s.Addr, wrong, m, 2*time.Second)
			if r == nil {
				t.Fatalf("no reply to a wrongly signed update: %v\n%s", err, s.Logs())
			}
			tsig := r.IsTsig()
			if r.Rcode != dns.RcodeNotAuth || tsig == nil || tsig.Error != dns.RcodeBadSig {
				t.Fatalf("reply to a wrongly signed update: rcode %s, TSIG %v; want NOTAUTH with TSIG error BADSIG",
					dns.RcodeToString[r.Rcode], tsig)
			}
			if err == nil {
				t.Error("the client verified the reply to a wrongly signed update")
			}
			if got := answerOf(t, s, "site1.heartbeat.test.", dns.TypeTXT); !slices.Equal(got, []string{`"beat=0"`}) {
				t.Fatalf("after the refused update: TXT %q, want [\"beat=0\"]", got)
			}
		})
	}
}

// TestUpdateServerDelegation keeps a parent zone's delegation of a subzone in step by updates:
// its NS records and their glue.
func TestUpdateServerDelegation(t *testing.T) {
	for _, srv := range updateServers {
		t.Run(srv.kind, func(t *testing.T) {
			s := srv.start(t, testTSIGKey, map[string][]string{
				"example.test.":   {"gslb IN NS ns1.gslb", "ns1.gslb IN A 127.0.0.11"},
				"heartbeat.test.": nil,
			})
			add := new(dns.Msg).SetUpdate("example.test.")
			add.Insert([]dns.RR{
				rr(t, "gslb.example.test. 30 IN NS ns2.gslb.example.test."),
				rr(t, "ns2.gslb.example.test. 30 IN A 127.0.0.12"),
			})
			mustUpdate(t, s, add)
			checkDelegation(t, s, []string{"ns1.gslb.example.test.", "ns2.gslb.example.test."}, []string{"127.0.0.11", "127.0.0.12"})

			remove := new(dns.Msg).SetUpdate("example.test.")
			remove.Remove([]dns.RR{rr(t, "gslb.example.test. 0 IN NS ns1.gslb.example.test.")})
			remove.RemoveRRset([]dns.RR{rr(t, "ns1.gslb.example.test. 0 IN A")})
			mustUpdate(t, s, remove)
			checkDelegation(t, s, []string{"ns2.gslb.example.test."}, []string{"127.0.0.12"})
		})
	}
}

// checkDelegation asks s for the subzone gslb.example.test's NS records and fails the test
// unless it refers to exactly the name servers ns with exactly the glue addresses glue.
func checkDelegation(t *testing.T, s *UpdateServer, ns, glue []string) {
	t.Helper()
	r := s.Query(t, "gslb.example.test.", dns.TypeNS)
	var gotNS, gotGlue []string
	for _, rec := range r.Ns {
		if n, ok := rec.(*dns.NS); ok {
			gotNS = append(gotNS, n.Ns)
		}
	}
	for _, rec := range r.Extra {
		if a, ok := rec.(*dns.A); ok {
			gotGlue = append(gotGlue, a.A.String())
		}
	}
	slices.Sort(gotNS)
	slices.Sort(gotGlue)
	if r.Rcode != dns.RcodeSuccess || r.Authoritative || len(r.Answer) != 0 || !slices.Equal(gotNS, ns) || !slices.Equal(gotGlue, glue) {
		t.Fatalf("%s referral to gslb.example.test: rcode %s, aa %v, %d answers, NS %q, glue %q; want a NOERROR referral to NS %q with glue %q\n%s",
			s.Kind, dns.RcodeToString[r.Rcode], r.Authoritative, len(r.Answer), gotNS, gotGlue, ns, glue, r)
	}
}
