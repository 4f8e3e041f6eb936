package admin

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/admin/admintest"
	"github.com/meridian-gslb/meridian/internal/overlay"
)

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func TestAuthentication(t *testing.T) {
	store := overlay.NewMemory(overlay.SystemClock{})
	_, base := startServer(t, Config{BasicUser: "admin", BasicPass: "s3cret", Token: "tok-123"}, store, exampleProvider())
	url := base + "/api/v1/zones"
	for _, c := range []struct {
		name, auth string
		code       int
	}{
		{"none", "", http.StatusUnauthorized},
		{"wrong password", basic("admin", "s3cre"), http.StatusUnauthorized},
		{"wrong user", basic("root", "s3cret"), http.StatusUnauthorized},
		{"password as token", "Bearer s3cret", http.StatusUnauthorized},
		{"token prefix", "Bearer tok-12", http.StatusUnauthorized},
		{"unknown scheme", "Digest tok-123", http.StatusUnauthorized},
		{"basic", basic("admin", "s3cret"), http.StatusOK},
		{"bearer", "Bearer tok-123", http.StatusOK},
		{"bearer lower case", "bearer tok-123", http.StatusOK},
	} {
		req, _ := http.NewRequest("GET", url, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.code)
		}
		if c.code == http.StatusUnauthorized && len(resp.Header.Values("WWW-Authenticate")) != 2 {
			t.Errorf("%s: challenges %q, want basic and bearer", c.name, resp.Header.Values("WWW-Authenticate"))
		}
	}

	// The dashboard asks for credentials itself: no challenge that would open the browser's.
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("X-Requested-With", "XMLHttpRequest")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != "" {
		t.Errorf("dashboard request: %d, challenge %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}

	// Every API endpoint is protected, even one that does not exist, and POST before its body
	// is read.
	for _, path := range []string{"/api/overview", "/api/v1/overrides", "/api/v1/nope"} {
		if code, _ := call(t, "GET", base+path, ""); code != http.StatusUnauthorized {
			t.Errorf("GET %s without credentials: %d", path, code)
		}
	}
	if code, _ := call(t, "POST", base+"/api/backends/disable", `{"location":"dc-eu"}`); code != http.StatusUnauthorized || len(store.List()) != 0 {
		t.Errorf("POST without credentials: %d, %d overrides", code, len(store.List()))
	}
	// Probes, the OpenAPI document and the dashboard's files are public.
	for _, path := range []string{"/livez", "/readyz", "/api/v1/openapi.yaml", "/ui/"} {
		if code, body := call(t, "GET", base+path, ""); code != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
	}

	// The user is recorded with the overrides it sets.
	code, body := call(t, "POST", base+"/api/v1/backends/drain", `{"location":"dc-us","reason":"move"}`, "Authorization", basic("admin", "s3cret"))
	if code != http.StatusOK {
		t.Fatalf("drain: %d %s", code, body)
	}
	if o, _ := store.Get("www.example.org.|10.2.0.1|0"); o.By != "admin" || o.Reason != "move" || o.Action != overlay.Drain {
		t.Errorf("override = %+v", o)
	}
	call(t, "POST", base+"/api/v1/backends/disable", `{"location":"dc-us"}`, "Authorization", "Bearer tok-123")
	if o, _ := store.Get("www.example.org.|10.2.0.1|0"); o.By != "token" {
		t.Errorf("override by token = %+v", o)
	}
}

func TestWithoutAuthenticationOnlyLiteralHosts(t *testing.T) {
	_, base := startServer(t, Config{}, nil, exampleProvider())
	for host, want := range map[string]int{
		"":                         http.StatusOK, // the address as dialled
		"localhost:8080":           http.StatusOK,
		"[::1]:8080":               http.StatusOK,
		"rebound.attacker.example": http.StatusForbidden,
	} {
		req, _ := http.NewRequest("GET", base+"/api/v1/zones", nil)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %q: %d, want %d", host, resp.StatusCode, want)
		}
	}
}

func TestListenRefusesUnsafeSettings(t *testing.T) {
	store := overlay.NewMemory(overlay.SystemClock{})
	certFile, keyFile, _ := admintest.Certificate(t, t.TempDir())
	for _, c := range []struct {
		name, addr string
		cfg        Config
		store      overlay.Store
		msg        string
	}{
		{"open without auth", "0.0.0.0:0", Config{}, store, "without authentication"},
		{"every interface without auth", ":0", Config{}, store, "without authentication"},
		{"TLS is no authentication", "0.0.0.0:0", Config{TLSCert: certFile, TLSKey: keyFile}, store, "without authentication"},
		{"user without password", "127.0.0.1:0", Config{BasicUser: "admin"}, store, "together"},
		{"certificate without key", "127.0.0.1:0", Config{TLSCert: certFile}, store, "together"},
		{"missing certificate", "127.0.0.1:0", Config{TLSCert: "/nonexistent.crt", TLSKey: keyFile}, store, "/nonexistent.crt"},
		{"no store", "127.0.0.1:0", Config{}, nil, "store"},
	} {
		s, err := Listen(c.addr, c.cfg, c.store, nopLog{})
		if err == nil {
			s.Close()
			t.Errorf("%s: Listen succeeded", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %q", c.name, err, c.msg)
		}
	}
	for name, cfg := range map[string]Config{
		"token":                 Config{Token: "t"},
		"basic":                 Config{BasicUser: "u", BasicPass: "p"},
		"allowed explicitly":    Config{AllowUnauthenticated: true},
		"loopback without auth": Config{},
	} {
		addr := "0.0.0.0:0"
		if name == "loopback without auth" {
			addr = "localhost:0"
		}
		s, err := Listen(addr, cfg, store, nopLog{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		s.Close()
	}
}

func TestTLSAndReconfiguration(t *testing.T) {
	store := overlay.NewMemory(overlay.SystemClock{})
	certFile, keyFile, tlsClient := admintest.Certificate(t, t.TempDir())
	s, base := startServer(t, Config{TLSCert: certFile, TLSKey: keyFile, Token: "one"}, store, exampleProvider())
	if code, body := admintest.Call(t, tlsClient, "GET", base+"/api/v1/zones", "", "Authorization", "Bearer one"); code != http.StatusOK {
		t.Fatalf("over TLS: %d %s", code, body)
	}
	plain := "http://" + s.Addr().String()
	if resp, err := http.Get(plain + "/livez"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain HTTP to a TLS server: %d", resp.StatusCode)
		}
	}

	// A Corefile reload changes the settings on the same listener: plain HTTP, a new token.
	if err := s.Configure(Config{Token: "two"}, store); err != nil {
		t.Fatal(err)
	}
	if code, _ := call(t, "GET", plain+"/api/v1/zones", "", "Authorization", "Bearer one"); code != http.StatusUnauthorized {
		t.Errorf("old token after reconfiguration: %d", code)
	}
	if code, _ := call(t, "GET", plain+"/api/v1/zones", "", "Authorization", "Bearer two"); code != http.StatusOK {
		t.Errorf("new token after reconfiguration: %d", code)
	}
	// Invalid settings change nothing.
	if err := s.Configure(Config{TLSCert: certFile}, store); err == nil {
		t.Fatal("Configure accepted a certificate without key")
	}
	if code, _ := call(t, "GET", plain+"/api/v1/zones", "", "Authorization", "Bearer two"); code != http.StatusOK {
		t.Errorf("after a refused reconfiguration: %d", code)
	}
	// And back to TLS.
	if err := s.Configure(Config{TLSCert: certFile, TLSKey: keyFile, Token: "two"}, store); err != nil {
		t.Fatal(err)
	}
	if code, _ := admintest.Call(t, tlsClient, "GET", base+"/api/v1/zones", "", "Authorization", "Bearer two"); code != http.StatusOK {
		t.Errorf("TLS again: %d", code)
	}
}

func TestRegistrations(t *testing.T) {
	s, base := startServer(t, Config{}, nil, nil)
	if code, _ := call(t, "GET", base+"/readyz", ""); code != http.StatusServiceUnavailable {
		t.Errorf("readyz with no block: %d", code)
	}
	old := exampleProvider()
	unregisterOld := s.Register([]string{"example.org"}, old)
	sub := exampleProvider()
	sub.zones[0].Name = "sub.example.org."
	s.Register([]string{"SUB.example.org."}, sub)

	// During a Corefile reload the new instance registers the same zone: it answers for it.
	next := exampleProvider()
	next.zones[0].Records = next.zones[0].Records[:1]
	unregisterNext := s.Register([]string{"example.org."}, next)
	zones := decode[[]Zone](t, mustGet(t, base+"/api/v1/zones"))
	if len(zones) != 2 || zones[0].Name != "example.org." || len(zones[0].Records) != 1 || zones[1].Name != "sub.example.org." {
		t.Fatalf("zones during a reload = %+v", zones)
	}
	// The closest enclosing zone explains a name.
	mustGet(t, base+"/api/v1/explain?name=www.sub.example.org")
	mustGet(t, base+"/api/v1/explain?name=www.example.org")
	if len(sub.explained) != 1 || len(next.explained) != 1 || len(old.explained) != 0 {
		t.Errorf("explained: sub %d, next %d, old %d", len(sub.explained), len(next.explained), len(old.explained))
	}
	// A reload reloads each block that answers once.
	if code, body := call(t, "POST", base+"/api/v1/reload", ""); code != http.StatusOK || old.reloads != 0 || next.reloads != 1 || sub.reloads != 1 {
		t.Errorf("reload: %d %s; reloads old %d next %d sub %d", code, body, old.reloads, next.reloads, sub.reloads)
	}
	next.mu.Lock()
	next.ready = false
	next.mu.Unlock()
	if code, _ := call(t, "GET", base+"/readyz", ""); code != http.StatusServiceUnavailable {
		t.Errorf("readyz with a block not ready: %d", code)
	}

	// The old instance stops after the new one started; if the new one fails, the old one is
	// back.
	unregisterOld()
	if z := decode[[]Zone](t, mustGet(t, base+"/api/v1/zones")); len(z[0].Records) != 1 {
		t.Errorf("after the old block left: %+v", z)
	}
	unregisterOld = s.Register([]string{"example.org."}, old)
	defer unregisterOld()
	unregisterNext()
	if z := decode[[]Zone](t, mustGet(t, base+"/api/v1/zones")); len(z[0].Records) != 2 {
		t.Errorf("after the new block left: %+v", z)
	}
	if code, _ := call(t, "GET", base+"/readyz", ""); code != http.StatusOK {
		t.Errorf("readyz: %d", code)
	}
}

func mustGet(t *testing.T, url string) string {
	t.Helper()
	code, body := call(t, "GET", url, "")
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	return body
}
