package probe

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
	"golang.org/x/crypto/ssh"
)

// Limits of a lua check's sandbox.
const (
	// luaCallStackSize caps the depth of Lua calls; deeper recursion is a "stack overflow" error.
	luaCallStackSize = 200
	// luaRegistrySize and luaRegistryMaxSize bound the value stack (values live on it while
	// functions run); outgrowing it is a "registry overflow" error.
	luaRegistrySize    = 1024
	luaRegistryMaxSize = 64 * 1024
	// luaStringMax caps what string.rep may build, the one-call way to allocate gigabytes.
	luaStringMax = 1 << 20
	// luaHTTPBodyMax caps a body http_get returns; luaMetricsBodyMax an exposition metric_get
	// parses (a node exporter's is a few hundred KiB).
	luaHTTPBodyMax    = 1 << 20
	luaMetricsBodyMax = 8 << 20
	// luaHTTPTimeout is the own timeout of http_get and metric_get when the script gives none,
	// CoreDNS-GSLB's; the check's timeout bounds every helper in any case.
	luaHTTPTimeout = 10 * time.Second
)

// luaBaseAllowed are the globals the sandbox keeps from Lua's base library (plus the string,
// table and math libraries). Everything else is removed: dofile, loadfile, load, loadstring,
// require, module, print, collectgarbage, getfenv, setfenv, newproxy...
var luaBaseAllowed = map[string]bool{
	"_G": true, "_VERSION": true, "assert": true, "error": true, "getmetatable": true,
	"ipairs": true, "next": true, "pairs": true, "pcall": true, "rawequal": true, "rawget": true,
	"rawset": true, "select": true, "setmetatable": true, "tonumber": true, "tostring": true,
	"type": true, "unpack": true, "xpcall": true,
	lua.StringLibName: true, lua.TabLibName: true, lua.MathLibName: true,
}

// luaHTTPClient serves http_get and metric_get for every lua check, and luaHTTPClientInsecure
// those calls that turn TLS verification off. They ignore proxy settings (checks go straight
// to backends); each call is bounded by the probe's context.
var (
	luaHTTPClient         = newLuaHTTPClient(false)
	luaHTTPClientInsecure = newLuaHTTPClient(true)
)

// newLuaHTTPClient returns a client for the lua helpers, verifying certificates unless
// insecure.
func newLuaHTTPClient(insecure bool) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: insecure}, // only when a script passes tls_verify false
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     90 * time.Second,
	}}
}

// luaProbe runs a Lua script that decides whether the backend is healthy: it is healthy when
// the script returns true. It may return a second value, a string, used as the reason.
// Anything else it returns (false, nil, a number...) is unhealthy, and so is a runtime error
// (reason "lua: <error>"). A script that returns false or nil without a reason after a helper
// failed gets that failure as its reason.
//
// It may also return the backend's load, a number, after the first value and before or after
// the reason: `return true, 0.4`, `return true, "ok", 0.4` or `return false, 0.4, "ok"`. The
// load is reported whatever the verdict; a load that is NaN, infinite or negative is unknown
// (and said in a passing reason), and a script that returns no number reports no load (the
// backend keeps the load it had, until it goes down: a script that reads a load should
// return one on every run, 0/0 (NaN) when it could not read it).
//
// Parameters: `script` (the Lua source) or `script_file` (a file read at load); exactly one.
// The script is compiled at load, so syntax errors are configuration errors. `ssh_known_hosts`,
// an OpenSSH known_hosts file read at load, makes ssh_exec verify host keys.
//
// Each probe runs in a fresh Lua state (states are not safe for concurrent use, and a fresh
// one leaves nothing behind from the last run), with only the safe part of the base library
// and the string, table and math libraries: no os, io, package, debug, coroutine or channel,
// and no way to load code. Globals for the script, with CoreDNS-GSLB's names, arguments and
// failure values (a helper that fails returns "" or nil, then the error message; timeouts are
// in seconds):
//
//	backend                        a table: address (string), priority (number), port (number,
//	                               nil if none); backend_address and backend_port the same.
//	http_get(url[, timeout[, user, password[, tls_verify]]])
//	                               body, status; "" and the error on failure. The body is
//	                               capped at 1 MiB (larger is a failure). user and password
//	                               send HTTP Basic auth; tls_verify false skips verification.
//	json_decode(text)              the value as Lua: objects and arrays become tables, null nil;
//	                               nil and the error for text that is not JSON.
//	metric_get(url, name[, labels][, timeout[, tls_verify[, user, password]]])
//	                               the value of the first sample of metric name on a
//	                               Prometheus text endpoint whose labels include labels (a
//	                               table), or nil. Histograms and summaries are read through
//	                               name_sum, name_count, name_bucket with an le label, and a
//	                               summary's name with a quantile label (the first quantile
//	                               without one). nil and the error on failure (http status not
//	                               200 included).
//	ssh_exec(host, user, password, command[, timeout])
//	                               the command's output, stdout and stderr (see lua_ssh.go).
//
// Limits: gopher-lua has no instruction-count hook, so the probe's context is the CPU limit
// (the VM checks it before every instruction, so `while true do end` ends at the timeout, and
// the HTTP helpers use it too). Memory is bounded only loosely: the call stack and value stack
// have caps, string.rep is capped at 1 MiB, and HTTP bodies are capped, but a script can still
// build large values with loops until the timeout.
type luaProbe struct {
	proto   *lua.FunctionProto
	host    string
	port    uint16
	timeout time.Duration
	// priority is the backend's, which the script sees as backend.priority.
	priority int
	// hostKey checks the host keys of ssh_exec's servers.
	hostKey ssh.HostKeyCallback
	source  string // a hash of the script and of the ssh_known_hosts file
}

// newLuaProbe compiles a lua check's script.
func newLuaProbe(p *params, t Target, timeout time.Duration) (Prober, error) {
	src := p.String("script", "")
	file := p.String("script_file", "")
	key, name := "script", "script"
	switch {
	case src != "" && file != "":
		return nil, errors.New("params: set either script or script_file, not both")
	case src == "" && file == "":
		return nil, errors.New("params.script: required (or script_file)")
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("params.script_file: %w", err)
		}
		src, key, name = string(b), "script_file", file
	}
	chunk, err := parse.Parse(strings.NewReader(src), name)
	if err != nil {
		return nil, fmt.Errorf("params.%s: %s", key, luaSyntaxError(err, file))
	}
	proto, err := lua.Compile(chunk, name)
	if err != nil {
		return nil, fmt.Errorf("params.%s: %v", key, firstLine(err.Error()))
	}
	hostKey, knownHosts, err := sshHostKeys(p.String("ssh_known_hosts", ""))
	if err != nil {
		return nil, fmt.Errorf("params.ssh_known_hosts: %w", err)
	}
	sum := sha256.Sum256([]byte(src + "\x00" + knownHosts))
	return &luaProbe{proto: proto, host: t.Host, port: t.Port, timeout: timeout, priority: t.Priority,
		hostKey: hostKey, source: hex.EncodeToString(sum[:8])}, nil
}

// identity makes the script's content part of the check's identity, so that a zone reload
// after an edit of script_file (or of ssh_known_hosts) runs the new script, and so is the
// priority the script sees.
func (l *luaProbe) identity() string { return l.source + "|" + strconv.Itoa(l.priority) }

// Probe runs the script once in a fresh sandboxed state.
func (l *luaProbe) Probe(ctx context.Context) Result {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:     true,
		CallStackSize:    luaCallStackSize,
		RegistrySize:     luaRegistrySize,
		RegistryMaxSize:  luaRegistryMaxSize,
		RegistryGrowStep: 256,
	})
	defer L.Close()
	if err := luaOpenSandbox(L); err != nil {
		return Fail("lua: %v", err)
	}
	backend := L.CreateTable(0, 3)
	backend.RawSetString("address", lua.LString(l.host))
	backend.RawSetString("priority", lua.LNumber(l.priority))
	L.SetGlobal("backend_address", lua.LString(l.host))
	if l.port != 0 {
		backend.RawSetString("port", lua.LNumber(l.port))
		L.SetGlobal("backend_port", lua.LNumber(l.port))
	}
	L.SetGlobal("backend", backend)
	run := &luaRun{hostKey: l.hostKey}
	L.SetGlobal("http_get", L.NewFunction(run.httpGet))
	L.SetGlobal("json_decode", L.NewFunction(run.jsonDecode))
	L.SetGlobal("metric_get", L.NewFunction(run.metricGet))
	L.SetGlobal("ssh_exec", L.NewFunction(run.sshExec))
	L.SetContext(ctx)

	L.Push(L.NewFunctionFromProto(l.proto))
	err := L.PCall(0, 3, nil)
	if deadlinePassed(ctx) {
		return Fail("%s", timeoutAfterReason(l.timeout))
	}
	if err != nil {
		var ae *lua.ApiError
		if errors.As(err, &ae) && ae.Object != nil {
			return Fail("lua: %s", firstLine(ae.Object.String()))
		}
		return Fail("lua: %s", firstLine(err.Error()))
	}
	ret, reason, load, hasLoad := L.Get(1), "", 0.0, false
	for _, v := range []lua.LValue{L.Get(2), L.Get(3)} {
		switch x := v.(type) {
		case lua.LString:
			if reason == "" {
				reason = firstLine(string(x))
			}
		case lua.LNumber:
			if !hasLoad {
				load, hasLoad = float64(x), true
			}
		}
	}
	res := luaVerdict(ret, reason, run)
	if hasLoad {
		var note string
		res.HasLoad = true
		if res.Load, note = checkLoad(load); note != "" && res.OK {
			res.Reason += ", " + note
		}
	}
	return res
}

// luaVerdict judges what a script returned: ret, its first value, and reason, its string.
func luaVerdict(ret lua.LValue, reason string, run *luaRun) Result {
	if ret == lua.LTrue {
		if reason == "" {
			reason = "lua: true"
		}
		return Pass(reason)
	}
	if reason != "" {
		return Fail("%s", reason)
	}
	if ret == lua.LFalse || ret == lua.LNil {
		if run.lastErr != "" {
			return Fail("lua: script returned %s after %s", ret, run.lastErr)
		}
		return Fail("lua: script returned %s", ret)
	}
	return Fail("lua: script returned %s %s, not true", ret.Type(), clipReason(ret.String()))
}

// luaSyntaxError words a parse error: "syntax error at line 2, column 7, near 'then'", after
// the file's name when the script came from one.
func luaSyntaxError(err error, file string) string {
	var msg string
	var pe *parse.Error
	switch {
	case !errors.As(err, &pe):
		msg = firstLine(err.Error())
	case pe.Pos.Line == parse.EOF:
		msg = fmt.Sprintf("%s at the end of the script", pe.Message)
	default:
		msg = fmt.Sprintf("%s at line %d, column %d, near '%s'", pe.Message, pe.Pos.Line, pe.Pos.Column, pe.Token)
	}
	if file != "" {
		msg = file + ": " + msg
	}
	return msg
}

// luaOpenSandbox opens the base, table, string and math libraries in L, then removes every
// global not in luaBaseAllowed and the string functions that are unsafe.
func luaOpenSandbox(L *lua.LState) error {
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
	} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		if err := L.PCall(1, 0, nil); err != nil {
			return fmt.Errorf("opening library %q: %w", lib.name, err)
		}
	}
	globals := L.G.Global
	var remove []lua.LValue
	globals.ForEach(func(k, _ lua.LValue) {
		if s, ok := k.(lua.LString); !ok || !luaBaseAllowed[string(s)] {
			remove = append(remove, k)
		}
	})
	for _, k := range remove {
		globals.RawSet(k, lua.LNil)
	}
	if str, ok := globals.RawGetString(lua.StringLibName).(*lua.LTable); ok {
		str.RawSetString("dump", lua.LNil)
		str.RawSetString("rep", L.NewFunction(luaStringRep))
	}
	return nil
}

// luaStringRep is string.rep with its result capped at luaStringMax bytes.
func luaStringRep(L *lua.LState) int {
	s := L.CheckString(1)
	n := L.CheckInt(2)
	if n <= 0 || s == "" {
		L.Push(lua.LString(""))
		return 1
	}
	if len(s) > luaStringMax/n {
		L.RaiseError("string.rep: result longer than %d bytes", luaStringMax)
		return 0
	}
	L.Push(lua.LString(strings.Repeat(s, n)))
	return 1
}

// luaRun is one run of a script: its helpers, and the last failure of one of them.
type luaRun struct {
	hostKey ssh.HostKeyCallback
	lastErr string
}

// fail returns, the way CoreDNS-GSLB's helpers do, the failure value of helper fn followed by
// the error message, which it also keeps as the run's last failure.
func (r *luaRun) fail(L *lua.LState, value lua.LValue, fn string, err error) int {
	r.lastErr = clipReason(fn + ": " + firstLine(err.Error()))
	L.Push(value)
	L.Push(lua.LString(r.lastErr))
	return 2
}

// luaArgSeconds reads argument n, a number of seconds, as a duration; def when it is absent,
// not a number or not positive.
func luaArgSeconds(L *lua.LState, n int, def time.Duration) time.Duration {
	if L.GetTop() < n {
		return def
	}
	if s := float64(lua.LVAsNumber(L.Get(n))); s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	return def
}

// luaHTTPOptions are the optional arguments of http_get and metric_get.
type luaHTTPOptions struct {
	timeout        time.Duration
	user, password string // HTTP Basic auth, when either is set
	insecure       bool   // TLS verification off
}

// luaFetch GETs url within the state's context and o.timeout and returns the body (at most
// limit bytes, more is an error) and the status code.
func luaFetch(L *lua.LState, url, accept string, limit int64, o luaHTTPOptions) ([]byte, int, error) {
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return nil, 0, fmt.Errorf("%q is not an http:// or https:// URL", url)
	}
	ctx := L.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("User-Agent", "meridian-lua-check")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if o.user != "" || o.password != "" {
		req.SetBasicAuth(o.user, o.password)
	}
	client := luaHTTPClient
	if o.insecure {
		client = luaHTTPClientInsecure
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, 0, fmt.Errorf("reading the body: %w", err)
	}
	if int64(len(body)) > limit {
		return nil, 0, fmt.Errorf("body larger than %d bytes", limit)
	}
	return body, resp.StatusCode, nil
}

// httpGet is http_get(url[, timeout[, user, password[, tls_verify]]]) -> body, status.
// Credentials count from four arguments on, as in CoreDNS-GSLB.
func (r *luaRun) httpGet(L *lua.LState) int {
	url := L.CheckString(1)
	o := luaHTTPOptions{timeout: luaArgSeconds(L, 2, luaHTTPTimeout)}
	if L.GetTop() >= 4 {
		o.user, o.password = lua.LVAsString(L.Get(3)), lua.LVAsString(L.Get(4))
	}
	if L.GetTop() >= 5 {
		o.insecure = !lua.LVAsBool(L.Get(5))
	}
	body, status, err := luaFetch(L, url, "", luaHTTPBodyMax, o)
	if err != nil {
		return r.fail(L, lua.LString(""), "http_get", err)
	}
	L.Push(lua.LString(body))
	L.Push(lua.LNumber(status))
	return 2
}

// jsonDecode is json_decode(text) -> value.
func (r *luaRun) jsonDecode(L *lua.LState) int {
	var v any
	if err := json.Unmarshal([]byte(lua.LVAsString(L.Get(1))), &v); err != nil {
		return r.fail(L, lua.LNil, "json_decode", err)
	}
	L.Push(luaFromJSON(L, v))
	return 1
}

// luaFromJSON converts a value encoding/json decoded into a Lua value.
func luaFromJSON(L *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(x)
	case float64:
		return lua.LNumber(x)
	case string:
		return lua.LString(x)
	case []any:
		t := L.CreateTable(len(x), 0)
		for i, item := range x {
			t.RawSetInt(i+1, luaFromJSON(L, item))
		}
		return t
	case map[string]any:
		t := L.CreateTable(0, len(x))
		for k, item := range x {
			t.RawSetString(k, luaFromJSON(L, item))
		}
		return t
	}
	return lua.LNil
}

// metricGet is metric_get(url, name[, labels][, timeout[, tls_verify[, user, password]]]) ->
// number or nil. labels, a table, is Meridian's; the arguments after it are CoreDNS-GSLB's.
func (r *luaRun) metricGet(L *lua.LState) int {
	url, name := L.CheckString(1), L.CheckString(2)
	want := map[string]string{}
	next := 3
	if labels, ok := L.Get(3).(*lua.LTable); ok {
		labels.ForEach(func(k, v lua.LValue) { want[lua.LVAsString(k)] = lua.LVAsString(v) })
		next++
	}
	o := luaHTTPOptions{timeout: luaArgSeconds(L, next, luaHTTPTimeout)}
	if L.GetTop() >= next+1 {
		o.insecure = !lua.LVAsBool(L.Get(next + 1))
	}
	if L.GetTop() >= next+3 {
		o.user, o.password = lua.LVAsString(L.Get(next+2)), lua.LVAsString(L.Get(next+3))
	}
	body, status, err := luaFetch(L, url, "text/plain;version=0.0.4", luaMetricsBodyMax, o)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("http %d", status)
	}
	if err != nil {
		return r.fail(L, lua.LNil, "metric_get", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		return r.fail(L, lua.LNil, "metric_get", err)
	}
	if v, ok := luaMetricSample(families, name, want); ok {
		L.Push(lua.LNumber(v))
	} else {
		L.Push(lua.LNil)
	}
	return 1
}

// luaMetricSample returns the value of the first sample called name whose labels include want.
// A histogram's and a summary's samples are found by their exposition names (name_sum,
// name_count, name_bucket{le=...}, name{quantile=...}).
func luaMetricSample(families map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	if mf, ok := families[name]; ok {
		switch mf.GetType() {
		case dto.MetricType_COUNTER, dto.MetricType_GAUGE, dto.MetricType_UNTYPED:
			for _, m := range mf.GetMetric() {
				if luaMetricLabelsMatch(m, want, "") {
					switch {
					case m.Counter != nil:
						return m.Counter.GetValue(), true
					case m.Gauge != nil:
						return m.Gauge.GetValue(), true
					case m.Untyped != nil:
						return m.Untyped.GetValue(), true
					}
				}
			}
			return 0, false
		case dto.MetricType_SUMMARY:
			qs, byQuantile := want["quantile"]
			q, err := strconv.ParseFloat(qs, 64)
			if byQuantile && err != nil {
				return 0, false
			}
			for _, m := range mf.GetMetric() {
				if luaMetricLabelsMatch(m, want, "quantile") {
					for _, sq := range m.GetSummary().GetQuantile() {
						if !byQuantile || sq.GetQuantile() == q {
							return sq.GetValue(), true
						}
					}
				}
			}
			return 0, false
		}
	}
	for _, suffix := range []string{"_sum", "_count", "_bucket"} {
		base, ok := strings.CutSuffix(name, suffix)
		mf := families[base]
		if !ok || mf == nil {
			continue
		}
		for _, m := range mf.GetMetric() {
			if v, ok := luaMetricPart(m, suffix, want); ok {
				return v, true
			}
		}
	}
	return 0, false
}

// luaMetricPart returns a histogram's or summary's _sum, _count or _bucket sample of m when m's
// labels include want (le selects the bucket).
func luaMetricPart(m *dto.Metric, suffix string, want map[string]string) (float64, bool) {
	ignore := ""
	if suffix == "_bucket" {
		ignore = "le"
	}
	if !luaMetricLabelsMatch(m, want, ignore) {
		return 0, false
	}
	h, s := m.GetHistogram(), m.GetSummary()
	switch {
	case suffix == "_sum" && h != nil:
		return h.GetSampleSum(), true
	case suffix == "_sum" && s != nil:
		return s.GetSampleSum(), true
	case suffix == "_count" && h != nil:
		return float64(h.GetSampleCount()), true
	case suffix == "_count" && s != nil:
		return float64(s.GetSampleCount()), true
	case suffix == "_bucket" && h != nil:
		le, err := strconv.ParseFloat(want["le"], 64)
		if err != nil {
			return 0, false
		}
		for _, b := range h.GetBucket() {
			if b.GetUpperBound() == le {
				return float64(b.GetCumulativeCount()), true
			}
		}
		if math.IsInf(le, 1) {
			return float64(h.GetSampleCount()), true
		}
	}
	return 0, false
}

// luaMetricLabelsMatch reports whether m has every label of want, except ignore.
func luaMetricLabelsMatch(m *dto.Metric, want map[string]string, ignore string) bool {
	for k, v := range want {
		if k == ignore {
			continue
		}
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == k {
				found = lp.GetValue() == v
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
