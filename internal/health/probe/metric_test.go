package probe

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
)

func TestMetricSelectorFind(t *testing.T) {
	const body = `# HELP http_inflight Requests in flight.
# TYPE http_inflight gauge
http_inflight{pool="a"} 3
http_inflight{pool="b",zone="z1"} 7 1712345678000
  http_inflight{pool="c"}	9.5
escaped{path="C:\\dir\"x\"\nend"} 11
trailing_comma{a="1",} 12
spaced { a = "1" , b = "2" } 13
{"my.metric", pool="a"} 14
exemplar 15 # {trace_id="x"} 1
nan_value NaN
inf_value +Inf
neg_inf -Inf
sci 1.5e3
empty_label{pool=""} 16
`
	tests := []struct {
		selector string
		want     float64
		err      string
	}{
		{`http_inflight`, 3, ""},
		{`http_inflight{pool="b"}`, 7, ""},
		{`http_inflight{zone="z1",pool="b"}`, 7, ""},
		{`http_inflight{pool="c"}`, 9.5, ""},
		{`http_inflight{pool="d"}`, 0, "not found"},
		{`http_inflight{pool="a",zone="z1"}`, 0, "not found"},
		{`http_inflight{zone=""}`, 3, ""}, // an empty value matches a missing label
		{`escaped{path="C:\\dir\"x\"\nend"}`, 11, ""},
		{`trailing_comma{a="1"}`, 12, ""},
		{`spaced{b="2"}`, 13, ""},
		{`{"my.metric"}`, 14, ""},
		{`{"my.metric",pool="a"}`, 14, ""},
		{`exemplar`, 15, ""},
		{`nan_value`, math.NaN(), ""},
		{`inf_value`, math.Inf(1), ""},
		{`neg_inf`, math.Inf(-1), ""},
		{`sci`, 1500, ""},
		{`empty_label`, 16, ""},
		{`missing`, 0, "not found"},
		{`http`, 0, "not found"}, // a prefix is not the name
	}
	for _, tc := range tests {
		t.Run(tc.selector, func(t *testing.T) {
			sel, err := parseMetricSelector(tc.selector)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			got, err := sel.find([]byte(body))
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("got %v, %v; want error %q", got, err, tc.err)
				}
			case err != nil:
				t.Errorf("error %v", err)
			case !(got == tc.want || math.IsNaN(got) && math.IsNaN(tc.want)):
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMetricSelectorMalformed(t *testing.T) {
	sel, err := parseMetricSelector("wanted")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ body, err string }{
		{"other{a=\"1\" 3\nwanted 1\n", `line 1: labels not separated by commas`},
		{"# ok\nother{a=1} 3\nwanted 1\n", `line 2: the value of label a is not quoted`},
		{"other{a=\"\\t\"} 3\n", `line 1: bad escape \t`},
		{"other{a=\"x} 3\n", `line 1: unterminated string`},
		{"other 3 abc\n", `line 1: bad timestamp "abc"`},
		{"other 3 17 extra\n", `line 1: unexpected "extra" after the value`},
		{"other three\n", `line 1: bad value "three"`},
		{"other\n", `line 1: no space before the value`},
		{"<html>\n", `line 1: no metric name`},
		{"wanted 1\nother{ 3\n", ""}, // the sample comes before the malformed line
	}
	for _, tc := range tests {
		t.Run(tc.body, func(t *testing.T) {
			v, err := sel.find([]byte(tc.body))
			if tc.err == "" {
				if err != nil || v != 1 {
					t.Errorf("got %v, %v; want 1", v, err)
				}
				return
			}
			if err == nil || err.Error() != tc.err {
				t.Errorf("got %v, %v; want error %q", v, err, tc.err)
			}
		})
	}
}

func TestParseMetricSelector(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{`up`, `up`, ""},
		{` job:rate5m `, `job:rate5m`, ""},
		{`http_inflight{pool="a"}`, `http_inflight{pool="a"}`, ""},
		{`x{a="1", b="q\"uote"}`, `x{a="1",b="q\"uote"}`, ""},
		{`{"my.metric"}`, `{"my.metric"}`, ""},
		{`{"my.metric", "a.b"="x"}`, `{"my.metric","a.b"="x"}`, ""},
		{``, ``, "no metric name"},
		{`{}`, ``, "no metric name"},
		{`9up`, ``, "no metric name"},
		{`up{pool=a}`, ``, "not quoted"},
		{`up{pool="a"`, ``, "not closed"},
		{`up 3`, ``, `unexpected "3" after the selector`},
		{`up{a:b="1"}`, ``, "without ="},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			sel, err := parseMetricSelector(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("got %v, %v; want error %q", sel, err, tc.err)
				}
				return
			}
			if err != nil || sel.String() != tc.want {
				t.Errorf("got %v, %v; want %s", sel, err, tc.want)
			}
		})
	}
}

func TestCheckLoad(t *testing.T) {
	tests := []struct {
		in      float64
		want    float64 // NaN: unknown
		problem string
	}{
		{0, 0, ""},
		{0.4, 0.4, ""},
		{250, 250, ""},
		{-1, math.NaN(), "load -1 is negative"},
		{math.NaN(), math.NaN(), "load NaN is not a finite number"},
		{math.Inf(1), math.NaN(), "load +Inf is not a finite number"},
	}
	for _, tc := range tests {
		got, problem := checkLoad(tc.in)
		if problem != tc.problem || !(got == tc.want || math.IsNaN(got) && math.IsNaN(tc.want)) {
			t.Errorf("checkLoad(%v) = %v, %q; want %v, %q", tc.in, got, problem, tc.want, tc.problem)
		}
	}
}

// FuzzMetricFind feeds arbitrary bodies and selectors to the parser: it must not panic, and a
// selector that parses must print as one that parses to the same.
func FuzzMetricFind(f *testing.F) {
	f.Add(`http_inflight{pool="a"}`, "# TYPE x gauge\nhttp_inflight{pool=\"a\"} 3 17\n")
	f.Add(`{"a.b"}`, "{\"a.b\",x=\"\\\\\\n\\\"\"} NaN # {t=\"1\"} 2\n")
	f.Add(`x`, "x{,} 1\r\nx{a=\"1\",,} 2\n")
	f.Fuzz(func(t *testing.T, selector, body string) {
		sel, err := parseMetricSelector(selector)
		if err != nil {
			return
		}
		again, err := parseMetricSelector(sel.String())
		if err != nil || again.String() != sel.String() {
			t.Fatalf("%q prints as %q, which parses to %v, %v", selector, sel.String(), again, err)
		}
		_, _ = sel.find([]byte(body))
	})
}

// metricServer serves /metrics with the body and status that set gives.
func metricServer(t *testing.T, status int, body string) Target {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return probeTarget(t, srv.Listener.Addr())
}

func TestHTTPMetric(t *testing.T) {
	big := strings.Repeat("# padding padding padding padding padding padding padding padding\n", httpBodyLimit/64)
	tests := []struct {
		name     string
		status   int
		body     string
		params   map[string]any
		ok       bool
		load     float64 // NaN: unknown
		reason   string
		noReport bool // the check reports no load
	}{
		{"gauge", 200, "inflight{pool=\"a\"} 2\ninflight{pool=\"b\"} 5\n", map[string]any{"metric": `inflight{pool="b"}`}, true, 5, "http 200", false},
		{"missing sample passes, load unknown", 200, "other 1\n", map[string]any{"metric": "inflight"}, true, math.NaN(), "http 200, metric inflight: not found", false},
		{"unparsable body", 200, "<html>busy</html>\n", map[string]any{"metric": "inflight"}, true, math.NaN(), "http 200, metric inflight: line 1: no metric name", false},
		{"negative", 200, "inflight -3\n", map[string]any{"metric": "inflight"}, true, math.NaN(), "http 200, metric inflight: load -3 is negative", false},
		{"failing status still reads the load", 503, "inflight 40\n", map[string]any{"metric": "inflight"}, false, 40, "http 503", false},
		{"with expected_body", 200, "inflight 4\n", map[string]any{"metric": "inflight", "expected_body": "inflight"}, true, 4, "http 200", false},
		{"beyond the body limit", 200, big + "inflight 4\n", map[string]any{"metric": "inflight"}, true, math.NaN(), "http 200, metric inflight: not found", false},
		{"no metric", 200, "inflight 4\n", nil, true, 0, "http 200", true},
	}
	for _, tc := range tests {
		for _, via := range probeWays {
			t.Run(tc.name+"/"+via, func(t *testing.T) {
				pr := compileHTTP(t, tc.params, metricServer(t, tc.status, tc.body))
				res, _ := probeVia(t, via, pr, 2*time.Second)
				if res.OK != tc.ok || res.Reason != tc.reason {
					t.Errorf("got %v %q, want %v %q", res.OK, res.Reason, tc.ok, tc.reason)
				}
				switch {
				case res.HasLoad == tc.noReport:
					t.Errorf("HasLoad %v", res.HasLoad)
				case tc.noReport:
				case !(res.Load == tc.load || math.IsNaN(res.Load) && math.IsNaN(tc.load)):
					t.Errorf("load %v, want %v", res.Load, tc.load)
				}
			})
		}
	}
}

func TestHTTPMetricParam(t *testing.T) {
	_, err := Compile(config.HealthCheck{Type: "http", Params: config.NewParams(map[string]any{"metric": "up{a=1}"})}, Target{Host: "192.0.2.1"}, time.Second)
	if err == nil || !strings.Contains(err.Error(), `params.metric: must name a sample such as http_inflight or http_inflight{pool="a"}: the value of label a is not quoted`) {
		t.Errorf("got %v", err)
	}
}

func TestLuaLoadResult(t *testing.T) {
	tests := []struct {
		script  string
		ok      bool
		reason  string
		hasLoad bool
		load    float64 // NaN: unknown
	}{
		{`return true`, true, "lua: true", false, 0},
		{`return true, 0.4`, true, "lua: true", true, 0.4},
		{`return true, "fine", 0.4`, true, "fine", true, 0.4},
		{`return false, 0.9, "overloaded"`, false, "overloaded", true, 0.9},
		{`return false, 0.9`, false, "lua: script returned false", true, 0.9},
		{`return true, 0/0`, true, "lua: true, load NaN is not a finite number", true, math.NaN()},
		{`return true, -2`, true, "lua: true, load -2 is negative", true, math.NaN()},
		{`return true, "r", "s", 3`, true, "r", false, 0}, // only the second and third values count
	}
	for _, tc := range tests {
		t.Run(tc.script, func(t *testing.T) {
			r := extProbe(t, "lua", map[string]any{"script": tc.script}, luaTarget, time.Second)
			if r.OK != tc.ok || r.Reason != tc.reason || r.HasLoad != tc.hasLoad {
				t.Fatalf("got %+v", r)
			}
			if tc.hasLoad && !(r.Load == tc.load || math.IsNaN(r.Load) && math.IsNaN(tc.load)) {
				t.Errorf("load %v, want %v", r.Load, tc.load)
			}
		})
	}
}
