package answer

import (
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/cookie"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/rrl"
)

// guardNames are a name of each kind of response that rate limiting keeps apart: an answer,
// NODATA, NXDOMAIN, a referral, fail-closed's error, a static RRset.
var guardNames = []struct {
	name  string
	qtype uint16
}{
	{"www.example.org.", dns.TypeA}, {"v4only.example.org.", dns.TypeAAAA}, {"nope.example.org.", dns.TypeA},
	{"deep.below.sub.example.org.", dns.TypeA}, {"closed.example.org.", dns.TypeA}, {"mail.example.org.", dns.TypeA},
}

// cookieCase is a query's COOKIE option: its data (nil for none) and what it is.
type cookieCase struct {
	name string
	data []byte
}

func cookieCases(secrets *cookie.Secrets, now time.Time) []cookieCase {
	cc := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	return []cookieCase{
		{"no cookie", nil},
		{"client cookie", cc},
		{"valid", secrets.Append(nil, cc, testClient, uint32(now.Unix()))},
		{"another server's", cookie.NewSecrets(cookie.Secret{3}).Append(nil, cc, testClient, uint32(now.Unix()))},
		{"expired", secrets.Append(nil, cc, testClient, uint32(now.Unix())-4000)},
	}
}

// guardPacket is the query of name and qtype with EDNS, the cookie data (nil: none) and, with
// ecs, a Client Subnet option.
func guardPacket(t testing.TB, name string, qtype uint16, data []byte, ecs bool) []byte {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.Id = 0x1234
	m.SetEdns0(1232, true)
	if ecs {
		m.IsEdns0().Option = append(m.IsEdns0().Option, subnet(1, 24, "198.51.100.0"))
	}
	if data != nil {
		m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: hexOf(data)})
	}
	return pack(t, m)
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&0xf])
	}
	return string(out)
}

// respondAt is what Respond puts on the wire for pkt at now; nil when it drops the response.
func respondAt(t *testing.T, snap *catalog.Snapshot, opts Options, pkt []byte, tcp bool, sources *geo.Sources, now time.Time) []byte {
	t.Helper()
	req := new(dns.Msg)
	if err := req.Unpack(pkt); err != nil {
		t.Fatal(err)
	}
	m, res := Respond(snap, opts, Query{Msg: req, Source: testClient, TCP: tcp, Geo: sources, Now: now})
	if res == Dropped {
		return nil
	}
	return pack(t, m)
}

// TestAppendFastCookiesMatchRespond: with cookies on (and required), every cookie of a query
// gets the same reply from both paths, byte for byte: the server cookie, BADCOOKIE; in a zone
// Meridian signs too, with DO (the signed answers the fast path makes from prepared
// signatures).
func TestAppendFastCookiesMatchRespond(t *testing.T) {
	plain, sources := fastSnapshot(t, true)
	signed, _ := fastSnapshotSigned(t, true, signerOf(t, testSigning))
	now := time.Unix(1_900_000_000, 0)
	jar := cookie.NewJar(cookie.NewSecrets(cookie.Secret{7}, cookie.Secret{8}))
	signedFast := 0
	for _, snap := range []*catalog.Snapshot{plain, signed} {
		for _, require := range []bool{false, true} {
			for _, q := range guardNames {
				for _, c := range cookieCases(jar.Secrets(), now) {
					for _, ecs := range []bool{false, true} {
						for _, tcp := range []bool{false, true} {
							opts := Options{Cookies: jar, RequireCookie: require, UseECS: ecs}
							pkt := guardPacket(t, q.name, q.qtype, c.data, ecs)
							fast, handled := AppendFast(nil, snap, &opts, pkt, testClient, tcp, sources, now)
							slow := respondAt(t, snap, opts, pkt, tcp, sources, now)
							if !handled && snap == signed {
								continue // the DO queries the fast path leaves to Respond in a signed zone
							}
							if snap == signed {
								signedFast++
							}
							if !handled {
								t.Errorf("%s %s, %s, require %t, ecs %t, tcp %t: not handled", q.name, dns.TypeToString[q.qtype], c.name, require, ecs, tcp)
								continue
							}
							if string(fast) != string(slow) {
								t.Errorf("%s %s, %s, require %t, ecs %t, tcp %t, signed %t:\nfast\n%s\nslow\n%s", q.name, dns.TypeToString[q.qtype], c.name, require, ecs, tcp, snap == signed, unpacked(string(fast)), unpacked(string(slow)))
							}
						}
					}
				}
			}
		}
	}
	if signedFast == 0 {
		t.Error("the fast path answered no DO query of the signed zone")
	}
	// A malformed cookie, and two, are the slow path's FORMERR.
	for _, pkt := range [][]byte{guardPacket(t, "www.example.org.", dns.TypeA, []byte{1, 2, 3}, false),
		guardPacket(t, "www.example.org.", dns.TypeA, make([]byte, 41), false)} {
		if _, handled := AppendFast(nil, plain, &Options{Cookies: jar}, pkt, testClient, false, sources, now); handled {
			t.Error("a malformed cookie is answered by the fast path")
		}
	}
}

// TestAppendFastRateLimitingMatchesRespond gives each path a limiter of its own with the same
// settings and asks both the same queries: each response, slip and drop is the same.
func TestAppendFastRateLimitingMatchesRespond(t *testing.T) {
	snap, sources := fastSnapshot(t, true)
	now := time.Now()
	jar := cookie.NewJar(cookie.NewSecrets(cookie.Secret{7}))
	for _, slip := range []int{0, 1} {
		cfg := rrl.DefaultConfig()
		for k := range cfg.Rates {
			cfg.Rates[k] = 2
		}
		cfg.Slip = slip
		for _, q := range guardNames {
			for _, c := range cookieCases(jar.Secrets(), now)[:3] {
				fastOpts := Options{Limit: rrl.New(cfg, nil), Cookies: jar}
				slowOpts := Options{Limit: rrl.New(cfg, nil), Cookies: jar}
				for i := range 4 {
					pkt := guardPacket(t, q.name, q.qtype, c.data, false)
					fast, handled := AppendFast(nil, snap, &fastOpts, pkt, testClient, false, sources, now)
					slow := respondAt(t, snap, slowOpts, pkt, false, sources, now)
					if !handled || string(fast) != string(slow) {
						t.Errorf("slip %d, %s %s, %s, query %d: handled %t\nfast\n%s\nslow\n%s", slip, q.name, dns.TypeToString[q.qtype], c.name, i, handled, unpacked(string(fast)), unpacked(string(slow)))
					}
					limited := i >= 2 && c.name != "valid"
					if limited != (len(fast) == 0 || len(fast) < 100 && fast[2]&0x02 != 0 || dnsRcode(fast) == dns.RcodeBadCookie) {
						t.Errorf("slip %d, %s %s, %s, query %d: limited %t, got %d bytes", slip, q.name, dns.TypeToString[q.qtype], c.name, i, limited, len(fast))
					}
				}
			}
		}
	}
	// Over TCP, nothing is limited.
	opts := Options{Limit: rrl.New(rrl.Config{RRLAccounts: config.RRLAccounts{Window: time.Second}, Rates: [5]int{1, 1, 1, 1, 1}}, nil)}
	for i := range 5 {
		pkt := guardPacket(t, "www.example.org.", dns.TypeA, nil, false)
		if out, handled := AppendFast(nil, snap, &opts, pkt, testClient, true, sources, now); !handled || len(out) == 0 {
			t.Fatalf("TCP query %d limited", i)
		}
	}
}

// dnsRcode returns the rcode of the reply wire, with its OPT record's extended bits.
func dnsRcode(wire []byte) int {
	var m dns.Msg
	if len(wire) == 0 || m.Unpack(wire) != nil {
		return -1
	}
	return m.Rcode
}

// TestAppendFastGuardsAllocateNothing: cookies and rate limiting add no allocation.
func TestAppendFastGuardsAllocateNothing(t *testing.T) {
	snap, sources := fastSnapshot(t, true)
	now := time.Now()
	jar := cookie.NewJar(cookie.RandomSecrets())
	cfg := rrl.DefaultConfig()
	cfg.Rates = [5]int{30000, 30000, 30000, 30000, 30000}
	opts := Options{Limit: rrl.New(cfg, nil), Cookies: jar}
	pkt := guardPacket(t, "www.example.org.", dns.TypeA, []byte{1, 2, 3, 4, 5, 6, 7, 8}, false)
	dst, client := make([]byte, 0, 1232), netip.MustParseAddr("192.0.2.9")
	if n := testing.AllocsPerRun(1000, func() {
		if _, ok := AppendFast(dst, snap, &opts, pkt, client, false, sources, now); !ok {
			t.Fatal("not handled")
		}
	}); n != 0 {
		t.Errorf("%v allocations a query", n)
	}
}

// BenchmarkAppendFastGuards is an address answer with rate limiting (no client over its
// limit) and a cookie, against neither: the cost of each on the fast path.
func BenchmarkAppendFastGuards(b *testing.B) {
	snap, sources := fastSnapshot(b, true)
	cfg := rrl.DefaultConfig()
	cfg.Rates = [5]int{30000, 30000, 30000, 30000, 30000}
	now := time.Now()
	for _, c := range []struct {
		name   string
		opts   Options
		cookie []byte
	}{
		{"plain", Options{}, nil},
		{"rrl", Options{Limit: rrl.New(cfg, nil)}, nil},
		{"cookie", Options{Cookies: cookie.NewJar(cookie.RandomSecrets())}, []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		{"rrl+cookie", Options{Limit: rrl.New(cfg, nil), Cookies: cookie.NewJar(cookie.RandomSecrets())}, []byte{1, 2, 3, 4, 5, 6, 7, 8}},
	} {
		pkt := guardPacket(b, "www.example.org.", dns.TypeA, c.cookie, false)
		dst := make([]byte, 0, 1232)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				AppendFast(dst, snap, &c.opts, pkt, testClient, false, sources, now)
			}
		})
	}
}
