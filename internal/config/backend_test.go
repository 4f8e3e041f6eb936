package config

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"
)

func TestBackendProbed(t *testing.T) {
	checks := []HealthCheck{{Type: "tcp"}}
	tests := []struct {
		name string
		b    Backend
		want bool
	}{
		{"no checks", Backend{}, false},
		{"checks", Backend{}.WithChecks(Checks{HealthChecks: checks}), true},
		{"passive", Backend{Passive: true}, true},
		{"assume_healthy with checks", Backend{AssumeHealthy: true}.WithChecks(Checks{HealthChecks: checks}), false},
		{"assume_healthy and passive", Backend{Passive: true, AssumeHealthy: true}, false},
	}
	for _, tt := range tests {
		if got := tt.b.Probed(); got != tt.want {
			t.Errorf("%s: Probed() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCapacityAndSlowStart(t *testing.T) {
	z := parseString(t, `
defaults: {slow_start: 30s}
records:
  w.example.org.:
    mode: weighted
    backends:
      - {address: 10.0.0.1, capacity: 250}
      - {address: 10.0.0.2}
  r.example.org.:
    mode: roundrobin
    slow_start: 0
    backends: [{address: 10.0.0.1, capacity: 0.5}]
  f.example.org.:
    backends: [{address: 10.0.0.1}]
`)
	got := map[string]*Record{}
	for i := range z.Records {
		got[z.Records[i].Name] = &z.Records[i]
	}
	eq(t, "weighted slow_start (from defaults)", got["w.example.org."].Steering().SlowStart, 30*time.Second)
	eq(t, "capacities", []float64{got["w.example.org."].Backends[0].Checks().Capacity, got["w.example.org."].Backends[1].Checks().Capacity, got["r.example.org."].Backends[0].Checks().Capacity}, []float64{250, DefaultCapacity, 0.5})
	eq(t, "slow_start: 0", got["r.example.org."].Steering().SlowStart, time.Duration(0))
	// Inherited by a failover record, where it does not apply: no error, no effect there.
	eq(t, "failover slow_start", got["f.example.org."].Steering().SlowStart, 30*time.Second)
}

func TestCapacityAndSlowStartErrors(t *testing.T) {
	tests := []struct{ yml, want string }{
		{"records:\n  a.example.org:\n    backends: [{address: 10.0.0.1, capacity: 0}]\n",
			`zone.yml:3:46: records["a.example.org"].backends[0].capacity: must be more than 0, not 0`},
		{"records:\n  a.example.org:\n    backends: [{address: 10.0.0.1, capacity: -2}]\n",
			`zone.yml:3:46: records["a.example.org"].backends[0].capacity: must be more than 0, not -2`},
		{"records:\n  a.example.org:\n    slow_start: 30s\n    backends: [{address: 10.0.0.1}]\n",
			`zone.yml:3:17: records["a.example.org"].slow_start: slow_start only applies with mode weighted, roundrobin or chain, not failover`},
		{"records:\n  a.example.org:\n    mode: weighted\n    slow_start: soon\n    backends: [{address: 10.0.0.1}]\n",
			`zone.yml:4:17: records["a.example.org"].slow_start: must be a positive duration such as "10s" or "1m30s", or a number of seconds, not "soon"`},
	}
	for _, tc := range tests {
		_, err := ParseZone("zone.yml", []byte(tc.yml), "example.org", nil, 1)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.yml, err, tc.want)
		}
	}
}

// TestBackendLabels keeps a backend's labels out of line only when it has some, and a copy of a
// backend keeps its own labels once either is given new ones.
func TestBackendLabels(t *testing.T) {
	z := parseString(t, `
records:
  g.example.org.:
    mode: geoip
    backends:
      - {address: 10.0.0.1, country: fr, city: Paris, tags: [a], description: one, latitude: 48.8, longitude: 2.3}
      - {address: 10.0.0.2}
`)
	labeled, plain := z.Records[0].Backends[0], z.Records[0].Backends[1]
	l := labeled.Labels()
	eq(t, "labels", []any{l.Country, l.City, l.Tags, l.Description, l.HasCoords, l.Latitude, l.Longitude},
		[]any{"FR", "Paris", []string{"a"}, "one", true, 48.8, 2.3})
	if plain.labels != nil {
		t.Errorf("a backend without labels holds %+v", *plain.labels)
	}
	cp := labeled
	l.Location = "eu"
	cp.SetLabels(l)
	eq(t, "the copy's location", cp.Labels().Location, "eu")
	eq(t, "the original's location", labeled.Labels().Location, "")
	cp.SetLabels(Labels{})
	if cp.labels != nil {
		t.Errorf("empty labels are kept: %+v", *cp.labels)
	}
}

// TestBackendStaysSmall guards the size of a backend: a zone of 100,000 records holds hundreds
// of thousands (see docs/benchmarks.md, "Loading big zones").
func TestBackendStaysSmall(t *testing.T) {
	if size := unsafe.Sizeof(Backend{}); size > 96 {
		t.Errorf("a Backend takes %d bytes, more than 96: keep what most backends share or leave unset out of line, as Checks, Origin and Labels", size)
	}
}

// TestRecordsShareTheirSteering gives the records with the same steering one copy of it, and a
// record with its own settings its own.
func TestRecordsShareTheirSteering(t *testing.T) {
	z := parseString(t, `
defaults: {min_healthy: 2, record_ttl: 60, scrape_interval: 30s}
records:
  a.example.org.: {backends: [{address: 10.0.0.1}]}
  b.example.org.: {backends: [{address: 10.0.0.2}]}
  c.example.org.: {min_healthy: 3, owner: web, backends: [{address: 10.0.0.3}]}
  d.example.org.: {mode: chain, chain: [rtt, weighted], max_answers: 1, backends: [{address: 10.0.0.4}]}
`)
	a, b, c, d := &z.Records[0], &z.Records[1], &z.Records[2], &z.Records[3]
	if a.Steering() != b.Steering() {
		t.Error("two records of the same steering keep a copy each")
	}
	if a.Settings() != b.Settings() || c.Settings() == b.Settings() {
		t.Error("consecutive records of the same settings keep a copy each, or of other settings share")
	}
	eq(t, "owner", []string{a.Settings().Owner, c.Settings().Owner, d.Settings().Owner}, []string{"", "web", ""})
	eq(t, "scrape_interval", c.Settings().ScrapeInterval, 30*time.Second)
	made := NewRecord("n.example.org.", ModeFailover, Position{})
	if (&Record{}).Settings().ScrapeInterval != 0 || made.Settings().Fallback.Mode != FallbackFailOpen {
		t.Error("a record given no settings does not read as zero, or a new one not as the defaults")
	}
	eq(t, "min_healthy", []int{a.Steering().MinHealthy, c.Steering().MinHealthy}, []int{2, 3})
	eq(t, "chain", []any{d.Steering().Chain, d.Steering().MaxAnswers, a.Steering().Chain},
		[]any{[]ChainStep{StepRTT, StepWeighted}, 1, []ChainStep(nil)})
	if (&Record{}).Steering().MinHealthy != 0 {
		t.Error("a record given no steering does not read as zero")
	}
}

// TestBackendsShareTheirChecks: consecutive backends with the same checks (a profile's, or
// none) keep one Checks; a backend whose checks differ in anything keeps its own.
func TestBackendsShareTheirChecks(t *testing.T) {
	z := parseString(t, `
healthcheck_profiles:
  web: {type: tcp, params: {port: 80}}
records:
  a.example.org.: {backends: [{address: 10.0.0.1, healthchecks: [web]}, {address: 10.0.0.2, healthchecks: [web]}]}
  b.example.org.: {backends: [{address: 10.0.0.3, healthchecks: [web]}, {address: 10.0.0.4, healthchecks: [web], rise: 5}]}
  c.example.org.: {backends: [{address: 10.0.0.5}, {address: 10.0.0.6}, {address: 10.0.0.7, timeout: 1s}]}
  d.example.org.: {backends: [{address: 10.0.0.8, healthchecks: [{type: tcp, params: {port: 80}}]}, {address: 10.0.0.9, healthchecks: [{type: tcp, params: {port: 80}}]}]}
`)
	checks := func(r, b int) *Checks { return z.Records[r].Backends[b].Checks() }
	for _, tc := range []struct {
		name       string
		a, b       *Checks
		wantShared bool
	}{
		{"one profile", checks(0, 0), checks(0, 1), true},
		{"one profile, the next record", checks(0, 1), checks(1, 0), true},
		{"another rise", checks(1, 0), checks(1, 1), false},
		{"no checks", checks(2, 0), checks(2, 1), true},
		{"another timeout", checks(2, 1), checks(2, 2), false},
		{"inline checks, written twice", checks(3, 0), checks(3, 1), false},
	} {
		if shared := tc.a == tc.b; shared != tc.wantShared {
			t.Errorf("%s: shared %v, want %v", tc.name, shared, tc.wantShared)
		}
	}
	eq(t, "rise", []int{checks(1, 0).Rise, checks(1, 1).Rise}, []int{DefaultRise, 5})
	eq(t, "timeout", checks(2, 2).Timeout, time.Second)
	if (&Backend{}).Checks().Rise != 0 || (&Backend{}).Site() != "" || (&Backend{}).Share() != 0 {
		t.Error("a backend given no checks or origin does not read as zero")
	}
}

// TestBackendsShareTheirAddresses: backends of different records with the same address keep
// one string of it.
func TestBackendsShareTheirAddresses(t *testing.T) {
	z := parseString(t, `
records:
  a.example.org.: {backends: [{address: 10.0.0.1}, {address: pool.example.net}]}
  b.example.org.: {backends: [{address: 10.0.0.1}, {address: Pool.Example.Net.}]}
  c.example.org.: {backends: [{address: 10.0.0.2}]}
`)
	addr := func(r, b int) string { return z.Records[r].Backends[b].Address }
	for _, tc := range []struct {
		name       string
		a, b       string
		wantShared bool
	}{
		{"one address", addr(0, 0), addr(1, 0), true},
		{"one host name, written two ways", addr(0, 1), addr(1, 1), true},
		{"two addresses", addr(0, 0), addr(2, 0), false},
	} {
		if shared := unsafe.StringData(tc.a) == unsafe.StringData(tc.b); shared != tc.wantShared {
			t.Errorf("%s: %q and %q shared %v, want %v", tc.name, tc.a, tc.b, shared, tc.wantShared)
		}
	}
	eq(t, "addresses", []string{addr(0, 0), addr(1, 1), addr(2, 0)}, []string{"10.0.0.1", "pool.example.net.", "10.0.0.2"})
}

// TestStringCache: the repeated strings of a zone (a few hundred addresses, each met hundreds
// of times) nearly all share one copy each; a string met again after thousands of others is
// still equal to itself.
func TestStringCache(t *testing.T) {
	var c stringCache
	first := string([]byte("192.0.2.1"))
	if got := c.intern(first); unsafe.StringData(got) != unsafe.StringData(first) {
		t.Fatal("a new string is not itself")
	}
	copies := map[*byte]bool{}
	for range 400 {
		for i := range 500 {
			copies[unsafe.StringData(c.intern(fmt.Sprintf("198.51.%d.%d", i/250, i%250)))] = true
		}
	}
	// Two strings may still contend for a slot (the seed is random): 800 copies a pair. A
	// cache of one slot a string left about 40 % of the 200,000 unshared.
	if len(copies) > 2500 {
		t.Errorf("500 strings met 400 times each have %d copies, want about 500", len(copies))
	}
	for i := range 20000 { // far more distinct strings than slots
		s := fmt.Sprintf("203.0.%d.%d", i/256, i%256)
		if got := c.intern(s); got != s {
			t.Fatalf("intern(%q) = %q", s, got)
		}
	}
	if got := c.intern(string([]byte("192.0.2.1"))); got != "192.0.2.1" {
		t.Errorf("a string met again after 20,000 others is %q", got)
	}
}

// TestRecordStaysSmall guards the size of a record, of which a big zone holds 100,000.
func TestRecordStaysSmall(t *testing.T) {
	if size := unsafe.Sizeof(Record{}); size > 104 {
		t.Errorf("a Record takes %d bytes, more than 104: keep what most records share or leave unset out of line, as Steering and Settings", size)
	}
}

// TestLabelsAndSteeringSeeEveryField sets each field of Labels, Steering, Settings, Fallback,
// Checks and HealthCheck alone: Labels are then neither empty nor equal to the zero Labels,
// and the others not equal to their zero one. A field added
// to one and forgotten in empty or equal fails here.
func TestLabelsAndSteeringSeeEveryField(t *testing.T) {
	for _, tc := range []struct {
		zero  any
		alike func(v reflect.Value) bool
	}{
		{Labels{}, func(v reflect.Value) bool { l := v.Interface().(Labels); return l.empty() }},
		{Labels{}, func(v reflect.Value) bool { l := v.Interface().(Labels); return l.equal(&Labels{}) }},
		{Steering{}, func(v reflect.Value) bool { s := v.Interface().(Steering); return s.equal(&Steering{}) }},
		{Settings{}, func(v reflect.Value) bool { s := v.Interface().(Settings); return s.equal(&Settings{}) }},
		{Fallback{}, func(v reflect.Value) bool { f := v.Interface().(Fallback); return f.equal(&Fallback{}) }},
		{Checks{}, func(v reflect.Value) bool { c := v.Interface().(Checks); return c.equal(&Checks{}) }},
		{HealthCheck{}, func(v reflect.Value) bool {
			c := Checks{HealthChecks: []HealthCheck{v.Interface().(HealthCheck)}}
			return c.equal(&Checks{HealthChecks: []HealthCheck{{}}})
		}},
	} {
		typ := reflect.TypeOf(tc.zero)
		for i := range typ.NumField() {
			v := reflect.New(typ).Elem()
			f := v.Field(i)
			switch f.Kind() {
			case reflect.Pointer:
				f.Set(reflect.New(f.Type().Elem()))
			case reflect.Map:
				f.Set(reflect.MakeMap(f.Type()))
			case reflect.Slice:
				f.Set(reflect.MakeSlice(f.Type(), 1, 1))
				if f.Index(0).Kind() == reflect.String {
					f.Index(0).SetString("x")
				}
			case reflect.String:
				f.SetString("x")
			case reflect.Bool:
				f.SetBool(true)
			case reflect.Int, reflect.Int32, reflect.Int64:
				f.SetInt(1)
			case reflect.Uint32:
				f.SetUint(1)
			case reflect.Float64:
				f.SetFloat(1)
			case reflect.Struct:
				if f.Type() == reflect.TypeFor[Position]() {
					f.Set(reflect.ValueOf(At("x", 1, 1)))
				} else if f.Type() == reflect.TypeFor[Params]() {
					f.Set(reflect.ValueOf(NewParams(map[string]any{"x": 1})))
				} else if f.Field(0).Kind() == reflect.String {
					f.Field(0).SetString("x")
				} else {
					f.Field(0).Set(reflect.ValueOf(1).Convert(f.Field(0).Type()))
				}
			default:
				t.Fatalf("%s.%s: a field of kind %s this test cannot set", typ.Name(), typ.Field(i).Name, f.Kind())
			}
			if tc.alike(v) {
				t.Errorf("%s with only %s set reads as the zero one", typ.Name(), typ.Field(i).Name)
			}
		}
	}
}

// TestIntegersInOtherYAMLForms checks that integers written as YAML's hexadecimal and octal
// forms are read as their values.
func TestIntegersInOtherYAMLForms(t *testing.T) {
	z, err := ParseZone("zone.yml", []byte("records:\n  a.example.org:\n    mode: weighted\n    backends: [{address: 10.0.0.1, port: 0x50, weight: 0o17}]\n"), "example.org", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if b := z.Records[0].Backends[0]; b.Port != 80 || b.Weight != 15 {
		t.Errorf("port %d, weight %d; want 80 and 15", b.Port, b.Weight)
	}
}
