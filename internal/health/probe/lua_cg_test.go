package probe

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/testutil"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// The tests of this file run CoreDNS-GSLB's scripts: its backend table, its helpers with their
// optional arguments and failure values, against real servers on loopback.

// cgTarget is a backend on loopback, where the test servers listen.
var cgTarget = Target{Host: "127.0.0.1", IP: netip.MustParseAddr("127.0.0.1"), Record: "webapp.example.com.", Priority: 3}

func TestLuaBackendTable(t *testing.T) {
	withPort := cgTarget
	withPort.Port = 8443
	runLuaCases(t, withPort, 5*time.Second, []luaCase{
		{"fields", `return backend.address == "127.0.0.1" and backend.priority == 3 and backend.port == 8443`, true, "lua: true"},
		{"types", `return type(backend.address) == "string" and type(backend.priority) == "number"`, true, "lua: true"},
	})
	runLuaCases(t, cgTarget, 5*time.Second, []luaCase{
		{"no port", `return backend.port == nil`, true, "lua: true"},
	})
	// The script sees the priority: backends that differ in it do not share a run.
	key := func(priority int) string {
		target := cgTarget
		target.Priority = priority
		c, err := Compile(config.HealthCheck{Type: "lua", Params: config.NewParams(map[string]any{"script": "return backend.priority == 3"})}, target, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return c.Key
	}
	if key(3) == key(4) {
		t.Error("two priorities, one check identity")
	}
}

// cgHTTPServer is a TLS server on 127.0.0.1 that wants HTTP Basic auth user:pass. It serves a
// JSON health document, a Prometheus exposition whose nginx_connections_active is *active, and
// a page that answers after 2 seconds.
func cgHTTPServer(t *testing.T, active *atomic.Int64) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/_cluster/health", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"status": "green", "number_of_nodes": 3}`)
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "# TYPE nginx_connections_active gauge\nnginx_connections_active %d\n", active.Load())
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		// Slow whatever the request's context says: a handler that returned when the
		// context ended could answer 200 with an empty body to a client still waiting.
		time.Sleep(2 * time.Second)
	})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "user" || p != "pass" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes that verify its certificate fail
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func TestLuaHTTPHelpersArguments(t *testing.T) {
	var active atomic.Int64
	active.Store(42)
	u := cgHTTPServer(t, &active).URL
	runLuaCases(t, cgTarget, 5*time.Second, []luaCase{
		{"http_get auth, no tls verification", fmt.Sprintf(`
			local body, status = http_get(%q, 2, "user", "pass", false)
			local h = json_decode(body)
			return status == 200 and h.status == "green" and h.number_of_nodes == 3`, u+"/_cluster/health"), true, "lua: true"},
		{"http_get verifies tls by default", fmt.Sprintf(`return http_get(%q, 2, "user", "pass") ~= ""`, u+"/_cluster/health"),
			false, "lua: script returned false after http_get: Get \"" + u + "/_cluster/health\": tls: failed to verify certificate..."},
		{"http_get wrong password: the body all the same", fmt.Sprintf(`
			local body, status = http_get(%q, 2, "user", "nope", false)
			return status == 401 and body == "who are you\n"`, u+"/_cluster/health"), true, "lua: true"},
		{"http_get own timeout", fmt.Sprintf(`
			local body, err = http_get(%q, 0.2, "user", "pass", false)
			return body ~= "" or err`, u+"/slow"), false, "lua: script returned string http_get: Get \"" + u + "/slow\": context deadline exceeded..."},
		{"metric_get with timeout, tls_verify false and auth", fmt.Sprintf(`
			return metric_get(%q, "nginx_connections_active", 2, false, "user", "pass") == 42`, u+"/metrics"), true, "lua: true"},
		{"metric_get with labels then the same arguments", fmt.Sprintf(`
			return metric_get(%q, "nginx_connections_active", {}, 2, false, "user", "pass") == 42`, u+"/metrics"), true, "lua: true"},
		{"metric_get without auth", fmt.Sprintf(`return metric_get(%q, "nginx_connections_active", 2, false) ~= nil`, u+"/metrics"),
			false, "lua: script returned false after metric_get: http 401"},
		{"metric_get verifies tls by default", fmt.Sprintf(`return metric_get(%q, "nginx_connections_active") ~= nil`, u+"/metrics"),
			false, "lua: script returned false after metric_get: Get \"" + u + "/metrics\": tls: failed to verify certificate..."},
	})
}

func TestLuaSSHExec(t *testing.T) {
	sshd := testutil.StartSSHD(t)
	call := func(command string, extra string) string {
		return fmt.Sprintf(`ssh_exec(%q, %q, %q, %q%s)`, sshd.Addr, sshd.User, sshd.Password, command, extra)
	}
	runLuaCases(t, cgTarget, 5*time.Second, []luaCase{
		{"output", fmt.Sprintf(`local out = %s return out == "hello\n", out`, call("echo hello", "")), true, "hello"},
		{"stderr too", fmt.Sprintf(`return %s == "oops\n"`, call("echo oops >&2", ", 3")), true, "lua: true"},
		{"runs as the user", fmt.Sprintf(`local out = %s return out == "%s\n", out`, call("id -un", ""), sshd.User), true, sshd.User},
		{"non-zero exit", fmt.Sprintf(`local out, err = %s return out ~= "" or err`, call("echo half; exit 3", "")),
			false, `lua: script returned string ssh_exec: "echo half; exit 3": Process exited with status 3, not true`},
		{"wrong password", fmt.Sprintf(`return ssh_exec(%q, %q, "wrong", "true") ~= ""`, sshd.Addr, sshd.User),
			false, "lua: script returned false after ssh_exec: ssh: handshake failed: ssh: unable to authenticate..."},
		{"own timeout", fmt.Sprintf(`local out, err = %s return out ~= "" or err`, call("sleep 10", ", 0.5")),
			false, "lua: script returned string ssh_exec: timeout after 500ms, not true"},
		{"refused", `return ssh_exec("127.0.0.1:1", "u", "p", "true") ~= ""`, false, "lua: script returned false after ssh_exec: dial tcp 127.0.0.1:1: connect: connection refused"},
	})
	runLuaCases(t, cgTarget, 300*time.Millisecond, []luaCase{
		{"bounded by the check's timeout", fmt.Sprintf(`%s return true`, call("sleep 10", "")), false, "timeout after 300ms"},
	})
}

// TestLuaCoreDNSGSLBExample runs a script in the style of CoreDNS-GSLB's documentation, as
// written there but for the servers' addresses: healthy while the exposition's gauge is below
// 100 and the process runs on the host.
func TestLuaCoreDNSGSLBExample(t *testing.T) {
	sshd := testutil.StartSSHD(t)
	var active atomic.Int64
	u := cgHTTPServer(t, &active).URL
	port := u[strings.LastIndex(u, ":")+1:]
	script := func(process string) string {
		return fmt.Sprintf(`
local health = json_decode(http_get("https://" .. backend.address .. ":%s/_cluster/health", 2, "user", "pass", false))
if not health or health.status ~= "green" then
  return false
end
local value = metric_get("https://" .. backend.address .. ":%s/metrics", "nginx_connections_active", 2, false, "user", "pass")
local out = ssh_exec(%q, %q, %q, "pgrep -x %s", 3)
if value and value < 100 and out ~= "" then
  return true
end
return false
`, port, port, sshd.Addr, sshd.User, sshd.Password, process)
	}
	tests := []struct {
		name    string
		active  int64
		process string
		ok      bool
		reason  string
	}{
		{"healthy", 42, "sshd", true, "lua: true"},
		{"too many connections", 150, "sshd", false, "lua: script returned false"},
		{"process not running", 42, "nosuchdaemon", false, `lua: script returned false after ssh_exec: "pgrep -x nosuchdaemon": Process exited with status 1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			active.Store(tc.active)
			start := time.Now()
			r := extProbe(t, "lua", map[string]any{"script": script(tc.process)}, cgTarget, 5*time.Second)
			checkResult(t, r, time.Since(start), 5*time.Second, tc.ok, tc.reason)
		})
	}
}

// TestLuaSSHKnownHosts: with ssh_known_hosts, ssh_exec logs in only where the host key is the
// one the file has for the address.
func TestLuaSSHKnownHosts(t *testing.T) {
	sshd := testutil.StartSSHD(t)
	_, other, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	otherKey, err := ssh.NewSignerFromKey(other)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	knownHosts := func(name, line string) string {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	script := fmt.Sprintf(`local out, err = ssh_exec(%q, %q, %q, "echo in") return out == "in\n", err`, sshd.Addr, sshd.User, sshd.Password)
	tests := []struct {
		name   string
		file   string
		ok     bool
		reason string
	}{
		{"the server's key", knownHosts("right", knownhosts.Normalize(sshd.Addr)+" "+sshd.HostKey), true, "lua: true"},
		{"another key", knownHosts("wrong", knownhosts.Line([]string{sshd.Addr}, otherKey.PublicKey())), false, "ssh_exec: ssh: handshake failed: knownhosts: key mismatch"},
		{"another host", knownHosts("unknown", "[127.0.0.1]:1 "+sshd.HostKey), false, "ssh_exec: ssh: handshake failed: knownhosts: key is unknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := extProbe(t, "lua", map[string]any{"script": script, "ssh_known_hosts": tc.file}, cgTarget, 5*time.Second)
			checkResult(t, r, 0, 5*time.Second, tc.ok, tc.reason)
		})
	}
	if _, err := extCompile(t, "lua", map[string]any{"script": "return true", "ssh_known_hosts": filepath.Join(dir, "nope")}, cgTarget, time.Second); err == nil ||
		!strings.Contains(err.Error(), "params.ssh_known_hosts: open ") {
		t.Errorf("a missing known_hosts file: got error %v", err)
	}
	// An edited file is a new check.
	key := func(line string) string {
		c, err := extCompile(t, "lua", map[string]any{"script": "return true", "ssh_known_hosts": knownHosts("edited", line)}, cgTarget, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return c.Key
	}
	if key("[127.0.0.1]:1 "+sshd.HostKey) == key("[127.0.0.1]:2 "+sshd.HostKey) {
		t.Error("editing ssh_known_hosts kept the check's identity")
	}
}
