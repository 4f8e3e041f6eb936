package config

import (
	"reflect"
	"slices"
	"testing"
	"unsafe"
)

// TestParamsOfAZone reads the parameters of inline and profile checks as written: sorted by
// key, nested values as plain maps and lists, a profile's shared by its backends and an inline
// check's its own.
func TestParamsOfAZone(t *testing.T) {
	z := parseString(t, `
healthcheck_profiles:
  web: {type: http, params: {uri: /healthz, port: 8080}}
records:
  a.example.org.:
    backends:
      - {address: 10.0.0.1, healthchecks: [web]}
      - {address: 10.0.0.2, healthchecks: [web]}
      - {address: 10.0.0.3, healthchecks: [{type: http, params: {uri: /c3, headers: {X-A: "1"}, codes: [200, 204], enable_tls: false}}]}
      - {address: 10.0.0.4, healthchecks: [{type: tcp, params: {}}]}
`)
	bs := z.Records[0].Backends
	check := func(i int) HealthCheck { return bs[i].Checks().HealthChecks[0] }
	if a, b := check(0).Params, check(1).Params; a.Identity() == nil || a.Identity() != b.Identity() {
		t.Errorf("the backends of a profile do not share its parameters: %p and %p", a.Identity(), b.Identity())
	}
	own := check(2).Params
	if own.Identity() == check(0).Params.Identity() {
		t.Error("an inline check shares a profile's parameters")
	}
	var keys []string
	for k := range own.All() {
		keys = append(keys, k)
	}
	if want := []string{"codes", "enable_tls", "headers", "uri"}; !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	want := map[string]any{"uri": "/c3", "headers": map[string]any{"X-A": "1"}, "codes": []any{200, 204}, "enable_tls": false}
	if got := own.Map(); !reflect.DeepEqual(got, want) {
		t.Errorf("params %#v, want %#v", got, want)
	}
	for k, v := range want {
		if got, ok := own.Get(k); !ok || !reflect.DeepEqual(got, v) {
			t.Errorf("Get(%q) = %v, %v; want %v", k, got, ok, v)
		}
	}
	if v, ok := own.Get("port"); ok || v != nil {
		t.Errorf("Get of a key not written: %v, %v", v, ok)
	}
	if empty := check(3).Params; empty.Len() != 0 || empty.Identity() != nil || empty.Map() != nil {
		t.Errorf("params: {} gives %d parameters", empty.Len())
	}
}

// TestNewParams sorts a map's keys and gives an empty or nil map no parameters.
func TestNewParams(t *testing.T) {
	tests := []struct {
		m    map[string]any
		want []Param
	}{
		{nil, nil},
		{map[string]any{}, nil},
		{map[string]any{"z": 1, "a": "x", "m": nil}, []Param{{"a", "x"}, {"m", nil}, {"z", 1}}},
	}
	for _, tt := range tests {
		p := NewParams(tt.m)
		if !slices.Equal(p.kv, tt.want) || p.Len() != len(tt.want) {
			t.Errorf("NewParams(%v) = %v, want %v", tt.m, p.kv, tt.want)
		}
	}
}

// TestSetParamReplaces keeps each key once, in order, the last value written.
func TestSetParamReplaces(t *testing.T) {
	var kv []Param
	for _, e := range []Param{{"b", 1}, {"a", 2}, {"c", 3}, {"b", 4}} {
		kv = setParam(kv, e.Key, e.Value)
	}
	if want := []Param{{"a", 2}, {"b", 4}, {"c", 3}}; !slices.Equal(kv, want) {
		t.Errorf("pairs %v, want %v", kv, want)
	}
}

// TestHealthCheckStaysSmall holds a check in the 80-byte size class: a big zone keeps one for
// each backend whose check is written inline.
func TestHealthCheckStaysSmall(t *testing.T) {
	if size := unsafe.Sizeof(HealthCheck{}); size > 80 {
		t.Errorf("a HealthCheck takes %d bytes, more than 80", size)
	}
	if size := unsafe.Sizeof(Params{}); size > 24 {
		t.Errorf("a Params takes %d bytes, more than a slice", size)
	}
}
