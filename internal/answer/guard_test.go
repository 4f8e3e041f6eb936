package answer

import (
	"encoding/hex"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/cookie"
	"github.com/meridian-gslb/meridian/internal/rrl"
)

var cookieNow = time.Unix(1_800_000_000, 0)

// cookieQuery is a query of name with a COOKIE option of data (hex), and a second one when
// twice is set.
func cookieQuery(name string, data string, twice bool) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	m.SetEdns0(1232, false)
	o := m.IsEdns0()
	o.Option = append(o.Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: data})
	if twice {
		o.Option = append(o.Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: data})
	}
	return m
}

// replyCookie returns the COOKIE option data of m, "" when it has none.
func replyCookie(m *dns.Msg) string {
	if o := m.IsEdns0(); o != nil {
		for _, e := range o.Option {
			if c, ok := e.(*dns.EDNS0_COOKIE); ok {
				return c.Cookie
			}
		}
	}
	return ""
}

func TestCookies(t *testing.T) {
	snap, _ := testSnapshot(t)
	secrets := cookie.NewSecrets(cookie.Secret{7})
	jar := cookie.NewJar(secrets)
	const cc = "0102030405060708"
	valid := hex.EncodeToString(secrets.Append(nil, []byte{1, 2, 3, 4, 5, 6, 7, 8}, testClient, uint32(cookieNow.Unix())))
	foreign := hex.EncodeToString(cookie.NewSecrets(cookie.Secret{9}).Append(nil, []byte{1, 2, 3, 4, 5, 6, 7, 8}, testClient, uint32(cookieNow.Unix())))
	for _, c := range []struct {
		name    string
		data    string
		twice   bool
		require bool
		tcp     bool
		rcode   int
		cookie  bool // the reply carries the client cookie and a new, valid server cookie
	}{
		{"client cookie", cc, false, false, false, dns.RcodeSuccess, true},
		{"valid server cookie", valid, false, false, false, dns.RcodeSuccess, true},
		{"another server's cookie", foreign, false, false, false, dns.RcodeSuccess, true},
		{"malformed", "01020304", false, false, false, dns.RcodeFormatError, false},
		{"two options", cc, true, false, false, dns.RcodeFormatError, false},
		{"required: client cookie only", cc, false, true, false, dns.RcodeBadCookie, true},
		{"required: another server's", foreign, false, true, false, dns.RcodeBadCookie, true},
		{"required: valid", valid, false, true, false, dns.RcodeSuccess, true},
		{"required: over TCP", cc, false, true, true, dns.RcodeSuccess, true},
	} {
		opts := Options{Cookies: jar, RequireCookie: c.require}
		m, _ := Respond(snap, opts, Query{Msg: cookieQuery("www.example.org.", c.data, c.twice), Source: testClient, TCP: c.tcp, Now: cookieNow})
		if m.Rcode != c.rcode {
			t.Errorf("%s: rcode %s, want %s", c.name, dns.RcodeToString[m.Rcode], dns.RcodeToString[c.rcode])
		}
		got := replyCookie(m)
		if !c.cookie {
			if got != "" {
				t.Errorf("%s: reply cookie %s, want none", c.name, got)
			}
			continue
		}
		b, _ := hex.DecodeString(got)
		if len(b) != cookie.OptionLen || hex.EncodeToString(b[:8]) != cc || secrets.Check(b, testClient, uint32(cookieNow.Unix())) != cookie.Valid {
			t.Errorf("%s: reply cookie %q is not the client's with a valid server cookie", c.name, got)
		}
		// The reply packs (BADCOOKIE's extended rcode in the OPT record) and reads back.
		wire, err := m.Pack()
		var back dns.Msg
		if err == nil {
			err = back.Unpack(wire)
		}
		if err != nil || back.Rcode != c.rcode {
			t.Errorf("%s: packed: %v, rcode %d", c.name, err, back.Rcode)
		}
	}
	// Without cookies on, the option is ignored and the reply has none.
	m, _ := Respond(snap, Options{}, Query{Msg: cookieQuery("www.example.org.", cc, false), Source: testClient})
	if m.Rcode != dns.RcodeSuccess || replyCookie(m) != "" {
		t.Errorf("cookies off: %s, cookie %q", dns.RcodeToString[m.Rcode], replyCookie(m))
	}
}

func TestRateLimitingOnTheSlowPath(t *testing.T) {
	snap, _ := snapshotOf(t, "example.org.yml", staticZone)
	cfg := rrl.DefaultConfig()
	for k := range cfg.Rates {
		cfg.Rates[k] = 3
	}
	cfg.Slip = 1 // every limited response slips, so that the test sees each
	jar := cookie.NewJar(cookie.NewSecrets(cookie.Secret{7}))
	query := func(name string, qtype uint16, data string) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		if data != "" {
			m = cookieQuery(name, data, false)
			m.Question[0].Qtype = qtype
		}
		return m
	}
	for _, c := range []struct {
		name string
		q    func(i int) *dns.Msg
		tcp  bool
		// limited: the 4th and later responses slip; slip is what they slip as.
		limited bool
		slip    int
	}{
		{"one answer", func(int) *dns.Msg { return query("www.example.org.", dns.TypeA, "") }, false, true, dns.RcodeSuccess},
		{"answers of other names", func(i int) *dns.Msg {
			return query([]string{"www.example.org.", "example.org.", "mail.example.org."}[i%3], dns.TypeA, "")
		}, false, false, 0},
		{"NXDOMAIN of random names: one account", func(i int) *dns.Msg { return query(string(rune('a'+i))+".nx.example.org.", dns.TypeA, "") }, false, true, dns.RcodeSuccess},
		{"NODATA", func(int) *dns.Msg { return query("mail.example.org.", dns.TypeMX, "") }, false, true, dns.RcodeSuccess},
		{"referrals", func(i int) *dns.Msg { return query(string(rune('a'+i))+".sub.example.org.", dns.TypeA, "") }, false, true, dns.RcodeSuccess},
		{"errors", func(int) *dns.Msg { return query("example.org.", dns.TypeAXFR, "") }, false, true, dns.RcodeSuccess},
		{"over TCP", func(int) *dns.Msg { return query("www.example.org.", dns.TypeA, "") }, true, false, 0},
		{"with a client cookie: BADCOOKIE", func(int) *dns.Msg { return query("www.example.org.", dns.TypeA, "0102030405060708") }, false, true, dns.RcodeBadCookie},
	} {
		opts := Options{Limit: rrl.New(cfg, nil), Cookies: jar}
		for i := range 6 {
			m, res := Respond(snap, opts, Query{Msg: c.q(i), Source: testClient, TCP: c.tcp, Now: cookieNow})
			limited := i >= 3 && c.limited
			if res == Dropped || m == nil {
				t.Fatalf("%s: query %d dropped with slip 1", c.name, i)
			}
			if m.Truncated != (limited && c.slip == dns.RcodeSuccess) || (limited && (m.Rcode != c.slip || len(m.Answer)+len(m.Ns) != 0)) {
				t.Errorf("%s: query %d: TC %t, rcode %s, %d answers: limited %t", c.name, i, m.Truncated, dns.RcodeToString[m.Rcode], len(m.Answer), limited)
			}
		}
	}

	// A valid server cookie proves the address: never limited. Without slip, a limited
	// response is dropped; explain is never limited.
	cfg.Slip = 0
	opts := Options{Limit: rrl.New(cfg, nil), Cookies: jar}
	valid := hex.EncodeToString(jar.Secrets().Append(nil, []byte{1, 2, 3, 4, 5, 6, 7, 8}, testClient, uint32(cookieNow.Unix())))
	for i := range 10 {
		if m, _ := Respond(snap, opts, Query{Msg: query("www.example.org.", dns.TypeA, valid), Source: testClient, Now: cookieNow}); len(m.Answer) != 1 {
			t.Fatalf("valid cookie, query %d limited", i)
		}
	}
	for i := range 5 {
		m, res := Respond(snap, opts, Query{Msg: query("www.example.org.", dns.TypeA, ""), Source: netip.MustParseAddr("198.51.100.1"), Now: cookieNow})
		if (i >= 3) != (res == Dropped) || (res == Dropped) != (m == nil) {
			t.Errorf("slip 0, query %d: %v %v", i, res, m)
		}
	}
	ex := Explain(snap, opts, Query{Msg: query("www.example.org.", dns.TypeA, ""), Source: netip.MustParseAddr("198.51.100.1"), Now: cookieNow})
	if ex.Rcode != "NOERROR" || len(ex.Answer) != 1 {
		t.Errorf("explain while the client is limited: %+v", ex)
	}
}
