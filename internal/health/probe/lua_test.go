package probe

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
)

// luaTarget is the backend the lua tests probe.
var luaTarget = Target{Host: "192.0.2.7", IP: netip.MustParseAddr("192.0.2.7"), Port: 8443}

// luaCase is one script and the result it must give.
type luaCase struct {
	name   string
	script string
	ok     bool
	reason string // exact, or a prefix when it ends in "..."
}

// runLuaCases probes each case's script against target with timeout.
func runLuaCases(t *testing.T, target Target, timeout time.Duration, cases []luaCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := extProbe(t, "lua", map[string]any{"script": tc.script}, target, timeout)
			checkResult(t, r, time.Since(start), timeout, tc.ok, tc.reason)
		})
	}
}

func TestLuaResults(t *testing.T) {
	runLuaCases(t, luaTarget, 5*time.Second, []luaCase{
		{"true", `return true`, true, "lua: true"},
		{"true with reason", `return true, "latency 12ms"`, true, "latency 12ms"},
		{"false", `return false`, false, "lua: script returned false"},
		{"false with reason", `return false, "queue 120 > 100"`, false, "queue 120 > 100"},
		{"nil", `local x = 1`, false, "lua: script returned nil"},
		{"number", `return 1`, false, "lua: script returned number 1, not true"},
		{"string", `return "true"`, false, "lua: script returned string true, not true"},
		{"runtime error", `error("boom")`, false, "lua: script:1: boom"},
		{"error without position", `error("boom", 0)`, false, "lua: boom"},
		{"nil index", `return nosuch.field`, false, "lua: script:1: attempt to index a non-table object(nil)..."},
		{"backend globals", `return backend_address == "192.0.2.7" and backend_port == 8443`, true, "lua: true"},
		{"allowed functions", `
			local t = {}
			for i, v in ipairs({3, 1, 2}) do table.insert(t, v) end
			table.sort(t)
			for k, v in pairs({a = 1}) do assert(k == "a" and v == 1) end
			local ok, err = pcall(error, "caught", 0)
			assert(not ok and err == "caught")
			assert(select("#", 1, 2) == 2, "select")
			assert(next({}) == nil, "next")
			assert(unpack({5}) == 5, "unpack")
			assert(tonumber("42") == 42 and tostring(7) == "7" and type(t) == "table")
			assert(math.max(1, 2) == 2 and string.format("%d-%s", 1, "x") == "1-x")
			assert(("abc"):upper() == "ABC" and ("ab"):rep(3) == "ababab")
			return t[1] == 1 and t[3] == 3`, true, "lua: true"},
		{"deep recursion", `local function f(n) return f(n + 1) + 1 end return f(1)`, false, "lua: script:1: stack overflow"},
		{"string.rep bomb", `local s = string.rep("x", 1e9) return true`, false, "lua: script:1: string.rep: result longer than 1048576 bytes"},
	})
}

func TestLuaNoBackendPort(t *testing.T) {
	runLuaCases(t, Target{Host: "db.example"}, 5*time.Second, []luaCase{
		{"port is nil", `return backend_address == "db.example" and backend_port == nil`, true, "lua: true"},
	})
}

// TestLuaSandbox checks that nothing reaching outside the process is reachable.
func TestLuaSandbox(t *testing.T) {
	var cases []luaCase
	for _, name := range []string{
		"os", "io", "package", "debug", "coroutine", "channel", "require", "module", "dofile",
		"loadfile", "load", "loadstring", "print", "collectgarbage", "getfenv", "setfenv",
		"newproxy", "_printregs", "string.dump",
	} {
		cases = append(cases, luaCase{name + " absent", "return " + name + " == nil", true, "lua: true"})
	}
	dir := t.TempDir()
	cases = append(cases,
		luaCase{"os.execute", `os.execute("touch ` + filepath.Join(dir, "pwned") + `") return true`, false, "lua: script:1: attempt to index a non-table object(nil)..."},
		luaCase{"io.open", `return io.open("/etc/passwd") ~= nil`, false, "lua: script:1: attempt to index a non-table object(nil)..."},
		luaCase{"require", `require("os") return true`, false, "lua: script:1: attempt to call a non-function object"},
		luaCase{"dofile", `dofile("/etc/passwd") return true`, false, "lua: script:1: attempt to call a non-function object"},
		luaCase{"loadstring", `return loadstring("return true")()`, false, "lua: script:1: attempt to call a non-function object"},
		luaCase{"through _G", `return _G["os"] == nil and _G.require == nil`, true, "lua: true"},
	)
	runLuaCases(t, luaTarget, 5*time.Second, cases)
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Error("os.execute ran")
	}
}

// TestLuaTimeout checks that runaway scripts end at the probe's deadline.
func TestLuaTimeout(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer slow.Close()
	runLuaCases(t, luaTarget, 200*time.Millisecond, []luaCase{
		{"infinite loop", `while true do end`, false, "timeout after 200ms"},
		{"loop catching the deadline", `while true do pcall(function() while true do end end) end`, false, "timeout after 200ms"},
		{"busy recursion", `local function f() for i = 1, 1e12 do end end f()`, false, "timeout after 200ms"},
		{"slow http_get", fmt.Sprintf(`http_get(%q) return true`, slow.URL), false, "timeout after 200ms"},
	})
}

// TestLuaHelpers exercises http_get, json_decode and metric_get against local servers.
func TestLuaHelpers(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status": "ok", "items": [1, 2, 3], "nested": {"ratio": 0.5, "none": null, "on": true}}`)
	})
	mux.HandleFunc("/down", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		w.Write(make([]byte, 2<<20))
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, `# HELP up Whether the target is up.
# TYPE up gauge
up 1
# HELP requests_total Requests served.
# TYPE requests_total counter
requests_total{code="200",method="GET"} 1027
requests_total{code="503",method="GET"} 3
# TYPE queue_depth untyped
queue_depth{queue="mail"} 42.5
# TYPE latency_seconds histogram
latency_seconds_bucket{le="0.1"} 90
latency_seconds_bucket{le="1"} 99
latency_seconds_bucket{le="+Inf"} 100
latency_seconds_sum 12.5
latency_seconds_count 100
# TYPE rpc_seconds summary
rpc_seconds{quantile="0.5"} 0.02
rpc_seconds{quantile="0.99"} 0.3
rpc_seconds_sum 8
rpc_seconds_count 200
`)
	})
	mux.HandleFunc("/bad-metrics", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "up{ 1\n")
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	u := srv.URL

	runLuaCases(t, luaTarget, 5*time.Second, []luaCase{
		{"http_get and json_decode", fmt.Sprintf(`
			local body, status = http_get(%q)
			local j = json_decode(body)
			return status == 200 and j.status == "ok" and #j.items == 3 and j.items[2] == 2
				and j.nested.ratio == 0.5 and j.nested.none == nil and j.nested.on == true`, u+"/status"), true, "lua: true"},
		{"http_get status", fmt.Sprintf(`
			local body, status = http_get(%q)
			return status == 200, "http " .. status .. ": " .. body`, u+"/down"), false, "http 503: maintenance"},
		// A helper that fails returns CoreDNS-GSLB's failure value ("" or nil) and the error;
		// a script that then returns false gets the error as its reason.
		{"http_get body cap", fmt.Sprintf(`local body, err = http_get(%q) return body ~= "" or err`, u+"/huge"), false, "lua: script returned string http_get: body larger than 1048576 bytes, not true"},
		{"http_get refused", `return http_get("http://127.0.0.1:1/") ~= ""`, false, "lua: script returned false after http_get: Get \"http://127.0.0.1:1/\": dial tcp 127.0.0.1:1: connect: connection refused"},
		{"http_get bad scheme", `return http_get("file:///etc/passwd") ~= ""`, false, `lua: script returned false after http_get: "file:///etc/passwd" is not an http:// or https:// URL`},
		{"failure as a fallback", `return http_get("http://127.0.0.1:1/") == "" and json_decode(http_get("http://127.0.0.1:1/")) == nil`, true, "lua: true"},
		{"json_decode scalar", `return json_decode("42") == 42 and json_decode("null") == nil`, true, "lua: true"},
		{"json_decode error", `local v, err = json_decode("{") return v ~= nil, err`, false, "json_decode: unexpected end of JSON input"},
		{"metric_get", fmt.Sprintf(`
			local m = %q
			assert(metric_get(m, "up") == 1, "up")
			assert(metric_get(m, "requests_total") == 1027, "first sample")
			assert(metric_get(m, "requests_total", {code = "503"}) == 3, "by label")
			assert(metric_get(m, "requests_total", {code = "404"}) == nil, "no such label value")
			assert(metric_get(m, "requests_total", {host = "x"}) == nil, "no such label")
			assert(metric_get(m, "queue_depth", {queue = "mail"}) == 42.5, "untyped")
			assert(metric_get(m, "nope") == nil, "absent metric")
			assert(metric_get(m, "latency_seconds_bucket", {le = "1"}) == 99, "bucket")
			assert(metric_get(m, "latency_seconds_bucket", {le = "+Inf"}) == 100, "inf bucket")
			assert(metric_get(m, "latency_seconds_sum") == 12.5, "histogram sum")
			assert(metric_get(m, "latency_seconds_count") == 100, "histogram count")
			assert(metric_get(m, "rpc_seconds", {quantile = "0.99"}) == 0.3, "quantile")
			assert(metric_get(m, "rpc_seconds") == 0.02, "first quantile")
			assert(metric_get(m, "rpc_seconds_count") == 200, "summary count")
			assert(metric_get(m, "rpc_seconds_sum") == 8, "summary sum")
			return metric_get(m, "queue_depth") < 100, "queue depth " .. metric_get(m, "queue_depth")`, u+"/metrics"), true, "queue depth 42.5"},
		{"metric_get http error", fmt.Sprintf(`return metric_get(%q, "up") ~= nil`, u+"/down"), false, "lua: script returned false after metric_get: http 503"},
		{"metric_get parse error", fmt.Sprintf(`return metric_get(%q, "up") ~= nil`, u+"/bad-metrics"), false, "lua: script returned false after metric_get: text format parsing error in line 1..."},
	})
}

func TestLuaLoad(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "check.lua")
	if err := os.WriteFile(file, []byte("return backend_port == 8443, 'from file'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := extProbe(t, "lua", map[string]any{"script_file": file}, luaTarget, time.Second); !r.OK || r.Reason != "from file" {
		t.Errorf("script_file: got %+v", r)
	}
	broken := filepath.Join(dir, "broken.lua")
	if err := os.WriteFile(broken, []byte("return true\nif then\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"syntax error", map[string]any{"script": "return (true"}, "params.script: syntax error at the end of the script"},
		{"syntax error in file", map[string]any{"script_file": broken}, "params.script_file: " + broken + ": syntax error at line 2, column 2, near 'if'"},
		{"missing file", map[string]any{"script_file": filepath.Join(dir, "nope.lua")}, "params.script_file: open "},
		{"no script", nil, "params.script: required"},
		{"both", map[string]any{"script": "return true", "script_file": file}, "either script or script_file"},
		{"unknown param", map[string]any{"script": "return true", "scirpt": "x"}, "params.scirpt: unknown parameter"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := extCompile(t, "lua", tc.params, luaTarget, time.Second)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestLuaConcurrentProbes runs one prober from several goroutines: each probe has its own
// state, the compiled script is shared.
func TestLuaConcurrentProbes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"n": 3}`)
	}))
	defer srv.Close()
	script := fmt.Sprintf(`
		counter = (counter or 0) + 1 -- a fresh state each time: always 1
		local t = {}
		for i = 1, 1000 do t[i] = tostring(i) end
		local body = http_get(%q)
		return counter == 1 and json_decode(body).n == 3 and #table.concat(t) > 0`, srv.URL)
	c, err := extCompile(t, "lua", map[string]any{"script": script}, luaTarget, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan Result)
	for range 8 {
		go func() {
			for range 5 {
				if r := c.Prober.Probe(context.Background()); !r.OK {
					done <- r
					return
				}
			}
			done <- Result{OK: true}
		}()
	}
	for range 8 {
		if r := <-done; !r.OK {
			t.Errorf("got %+v", r)
		}
	}
}

func TestLuaScriptFileContentIsPartOfTheIdentity(t *testing.T) {
	file := filepath.Join(t.TempDir(), "check.lua")
	key := func(src string) string {
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Compile(config.HealthCheck{Type: "lua", Params: config.NewParams(map[string]any{"script_file": file})}, luaTarget, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return c.Key
	}
	first, same, edited := key("return true"), key("return true"), key("return false")
	if first != same || first == edited {
		t.Fatalf("keys %q, %q, %q: an edited script must change the check's identity, and only then", first, same, edited)
	}
}
