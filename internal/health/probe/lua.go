package probe

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

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
