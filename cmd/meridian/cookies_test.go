package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/cookie"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// staticWWW is a zone with one record, www.example.org., answered with 10.0.0.1.
const staticWWW = "records:\n  www.example.org.:\n    backends: [{address: 10.0.0.1}]\n"

// randomHex returns n random bytes in hexadecimal.
func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// askWithCookie asks addr name A over UDP with the COOKIE option data (hex), and returns the
// rcode, the number of answers and the reply's cookie (hex, "" for none).
func askWithCookie(t *testing.T, addr, name, data string) (rcode, answers int, reply string) {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	m.SetEdns0(1232, false)
	m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: data})
	c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s with cookie %s: %v", addr, name, data, err)
	}
	return r.Rcode, len(r.Answer), replyCookieOf(r)
}

func replyCookieOf(m *dns.Msg) string {
	if o := m.IsEdns0(); o != nil {
		for _, e := range o.Option {
			if c, ok := e.(*dns.EDNS0_COOKIE); ok {
				return c.Cookie
			}
		}
	}
	return ""
}

// startCookieServer serves staticWWW with the extra gslb options.
func startCookieServer(t *testing.T, extra string) *testutil.Server {
	t.Helper()
	return serveZone(t, staticWWW, extra)
}

// TestCookiesInteroperateWithBIND: Meridian and BIND 9 given the same secret accept each
// other's server cookies (RFC 9018), as the servers of one anycast address must; each
// answers BADCOOKIE to a cookie it did not make when it requires one; dig, a real client,
// retries with the cookie BADCOOKIE gave it and gets its answer.
func TestCookiesInteroperateWithBIND(t *testing.T) {
	t.Parallel()
	secret := randomHex(t, 16)
	bind := testutil.StartBINDWith(t, proxyTestKey, map[string][]string{"bind.test.": {"www A 192.0.2.53"}},
		fmt.Sprintf("\tcookie-secret %q;\n\trequire-server-cookie yes;", secret))
	file := filepath.Join(t.TempDir(), "cookie.secret")
	if err := os.WriteFile(file, []byte("# the site's secret\n"+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := startCookieServer(t, "  cookie_secret_file "+file+"\n  cookie_require\n")
	cc := randomHex(t, 8)

	rcode, _, fromMeridian := askWithCookie(t, m.Addr, "www.example.org", cc)
	if rcode != dns.RcodeBadCookie || len(fromMeridian) != 48 || fromMeridian[:16] != cc {
		t.Fatalf("Meridian, a client cookie alone: %s, cookie %q", dns.RcodeToString[rcode], fromMeridian)
	}
	if rcode, n, _ := askWithCookie(t, bind.Addr, "www.bind.test", fromMeridian); rcode != dns.RcodeSuccess || n != 1 {
		t.Errorf("BIND refuses Meridian's cookie: %s, %d answers\n%s", dns.RcodeToString[rcode], n, bind.Logs())
	}
	rcode, _, fromBIND := askWithCookie(t, bind.Addr, "www.bind.test", cc)
	if rcode != dns.RcodeBadCookie || len(fromBIND) != 48 {
		t.Fatalf("BIND, a client cookie alone: %s, cookie %q", dns.RcodeToString[rcode], fromBIND)
	}
	if rcode, n, _ := askWithCookie(t, m.Addr, "www.example.org", fromBIND); rcode != dns.RcodeSuccess || n != 1 {
		t.Errorf("Meridian refuses BIND's cookie: %s, %d answers", dns.RcodeToString[rcode], n)
	}
	forged := fromBIND[:40] + "00000000"
	for _, addr := range []string{m.Addr, bind.Addr} {
		if rcode, _, _ := askWithCookie(t, addr, "www.example.org", forged); rcode != dns.RcodeBadCookie {
			t.Errorf("%s takes a forged cookie: %s", addr, dns.RcodeToString[rcode])
		}
	}

	// dig sends a client cookie, gets BADCOOKIE and Meridian's cookie, and asks again with it.
	host, port, _ := net.SplitHostPort(m.Addr)
	out, err := exec.Command("dig", "@"+host, "-p", port, "+cookie", "+badcookie", "www.example.org", "A").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "status: NOERROR") || !strings.Contains(string(out), "10.0.0.1") || !strings.Contains(string(out), "(good)") {
		t.Errorf("dig +cookie +badcookie: %v\n%s", err, out)
	}
}

// TestCookieSecretRotation rotates the secret of two instances of a site in the three steps
// of docs/security.md while a client queries them in turn, always with the last cookie it was
// given: it never gets BADCOOKIE, and the old secret's cookies stop working at the last step.
func TestCookieSecretRotation(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "cookie.secret")
	oldS, newS := randomHex(t, 16), randomHex(t, 16)
	write := func(lines ...string) {
		t.Helper()
		tmp := file + ".tmp"
		if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}
	write(oldS)
	site := []*testutil.Server{
		startCookieServer(t, "  cookie_secret_file "+file+"\n  cookie_require\n"),
		startCookieServer(t, "  cookie_secret_file "+file+"\n  cookie_require\n"),
	}
	secretsOf := func(s string) *cookie.Secrets {
		b, _ := hex.DecodeString(s)
		return cookie.NewSecrets(cookie.Secret(b))
	}
	cc := randomHex(t, 8)
	_, _, current := askWithCookie(t, site[0].Addr, "www.example.org", cc)
	oldCookie := current
	queries := 0
	// ask queries the next instance with the current cookie, which must be taken, and keeps
	// the new one; it reports whether the new one was made with secret.
	ask := func(secret string) bool {
		t.Helper()
		s := site[queries%2]
		queries++
		rcode, n, next := askWithCookie(t, s.Addr, "www.example.org", current)
		if rcode != dns.RcodeSuccess || n != 1 {
			t.Fatalf("query %d, during the rotation, with the cookie just given: %s\n%s", queries, dns.RcodeToString[rcode], s.Logs())
		}
		current = next
		b, _ := hex.DecodeString(next)
		return secretsOf(secret).Check(b, netip.MustParseAddr("127.0.0.1"), uint32(time.Now().Unix())) == cookie.Valid
	}
	if !ask(oldS) {
		t.Fatal("the cookies are not made with the file's secret")
	}
	// Step 1 and 2 at once on the file (a new secret first, the old one accepted): every
	// instance makes cookies with the new one once it read the file; the old ones still work.
	write(newS, oldS)
	testutil.Eventually(t, 10*time.Second, func() bool {
		first := ask(newS)  // one instance
		second := ask(newS) // the other
		return first && second
	}, "the instances do not make cookies with the new secret")
	if rcode, _, _ := askWithCookie(t, site[1].Addr, "www.example.org", oldCookie); rcode != dns.RcodeSuccess {
		t.Errorf("a cookie of the old secret during the rotation: %s", dns.RcodeToString[rcode])
	}
	// Step 3: the old secret goes.
	write(newS)
	testutil.Eventually(t, 10*time.Second, func() bool {
		ask(newS)
		rcode0, _, _ := askWithCookie(t, site[0].Addr, "www.example.org", oldCookie)
		rcode1, _, _ := askWithCookie(t, site[1].Addr, "www.example.org", oldCookie)
		return rcode0 == dns.RcodeBadCookie && rcode1 == dns.RcodeBadCookie
	}, "the old secret's cookies are still taken")
	// An invalid file keeps the secrets that serve.
	write("not a secret")
	testutil.Eventually(t, 10*time.Second, func() bool {
		return strings.Contains(site[0].Logs(), "the previous cookie secrets keep serving")
	}, "an invalid secrets file is not reported:\n%s", site[0].Logs())
	if !ask(newS) {
		t.Error("an invalid secrets file changed the secret")
	}
}
