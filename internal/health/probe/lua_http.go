package probe

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	lua "github.com/yuin/gopher-lua"
)

// The helpers a lua check's script reads its backend over HTTP with: http_get, metric_get (one
// sample of a Prometheus exposition) and json_decode for what they return, with CoreDNS-GSLB's
// arguments and failure values. ssh_exec is in lua_ssh.go; the sandbox and the probe in lua.go.

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
