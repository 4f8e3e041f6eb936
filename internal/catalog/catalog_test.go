package catalog

import (
	"fmt"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

type states map[string]*health.State

func (s states) State(key string) *health.State {
	if s[key] == nil {
		s[key] = &health.State{}
	}
	return s[key]
}

func mustZone(t *testing.T, origin, yaml string) *config.Zone {
	t.Helper()
	z, err := config.ParseZone(origin+".yml", []byte(yaml), origin, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

func TestZoneMatchesOnLabelBoundaries(t *testing.T) {
	snap, err := Build([]*config.Zone{
		mustZone(t, "example.org", ""),
		mustZone(t, "sub.example.org", ""),
	}, states{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ qname, want string }{
		{"example.org.", "example.org."},
		{"www.example.org.", "example.org."},
		{"a.sub.example.org.", "sub.example.org."},
		{"sub.example.org.", "sub.example.org."},
		{"xexample.org.", ""},
		{"org.", ""},
		{"xsub.example.org.", "example.org."},
	}
	for _, tt := range tests {
		got := ""
		if z := snap.Zone(tt.qname); z != nil {
			got = z.Origin
		}
		if got != tt.want {
			t.Errorf("Zone(%s) = %q, want %q", tt.qname, got, tt.want)
		}
	}
	root, err := Build([]*config.Zone{mustZone(t, ".", "")}, states{})
	if err != nil {
		t.Fatal(err)
	}
	if z := root.Zone("anything.example."); z == nil || z.Origin != "." {
		t.Errorf("the root zone does not hold every name")
	}
	if _, err := Build([]*config.Zone{mustZone(t, "example.org", ""), mustZone(t, "example.org", "")}, states{}); err == nil {
		t.Error("a zone configured twice was accepted")
	}
}

func TestLookup(t *testing.T) {
	snap, err := Build([]*config.Zone{mustZone(t, "example.org", `
records:
  www.example.org.: {backends: [{address: 10.0.0.1}]}
  a.b.c.example.org.: {backends: [{address: 10.0.0.2}]}
  "*.w.example.org.": {backends: [{address: 10.0.0.3}]}
  x.w.example.org.: {backends: [{address: 10.0.0.4}]}
`)}, states{})
	if err != nil {
		t.Fatal(err)
	}
	z := snap.Zone("example.org.")
	tests := []struct {
		qname            string
		record           string // "" for none
		exists, wildcard bool
	}{
		{"www.example.org.", "www.example.org.", true, false},
		{"example.org.", "", true, false},     // apex without a record
		{"b.c.example.org.", "", true, false}, // empty non-terminal
		{"c.example.org.", "", true, false},
		{"nope.example.org.", "", false, false},
		{"y.w.example.org.", "*.w.example.org.", true, true},
		{"deep.y.w.example.org.", "*.w.example.org.", true, true},
		{"x.w.example.org.", "x.w.example.org.", true, false},
		{"below.x.w.example.org.", "", false, false}, // the closest encloser has no wildcard
		{"w.example.org.", "", true, false},
	}
	for _, tt := range tests {
		rec, exists, wildcard := z.Lookup(tt.qname)
		name := ""
		if rec != nil {
			name = rec.Name()
		}
		if name != tt.record || exists != tt.exists || wildcard != tt.wildcard {
			t.Errorf("Lookup(%s) = %q, %v, %v; want %q, %v, %v", tt.qname, name, exists, wildcard, tt.record, tt.exists, tt.wildcard)
		}
	}
}

func TestViewFollowsHealth(t *testing.T) {
	hs := states{}
	snap, err := Build([]*config.Zone{mustZone(t, "example.org", `
records:
  www.example.org.:
    backends:
      - {address: 10.0.0.1, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.0.0.2, enable: false}
      - {address: 10.0.0.3, assume_healthy: true, healthchecks: [{type: tcp, params: {port: 80}}]}
`)}, hs)
	if err != nil {
		t.Fatal(err)
	}
	// Only the probed backend has a state of its own in the health source: the others'
	// health never changes, and a big zone's backends would each cost one.
	if len(hs) != 1 || hs["www.example.org.|10.0.0.1|0"] == nil {
		t.Fatalf("health states %v, want one, of the probed backend", slices.Collect(maps.Keys(hs)))
	}
	rec := snap.Records()[0]
	healthy := func() []string {
		var out []string
		for _, b := range rec.View().Healthy[IPv4] {
			out = append(out, b.Config.Address)
		}
		return out
	}
	if got := healthy(); len(got) != 1 || got[0] != "10.0.0.3" {
		t.Fatalf("healthy at start %v, want only the assume_healthy backend", got)
	}
	hs["www.example.org.|10.0.0.1|0"].Set(health.Up)
	rec.Refresh()
	if got := healthy(); len(got) != 2 {
		t.Fatalf("healthy after an up %v, want two (never the disabled one)", got)
	}
	v := rec.View()
	if v.FallbackApplies(IPv4) || v.FallbackApplies(IPv6) {
		t.Fatal("fallback applies while the record is healthy")
	}
	if len(v.Enabled[IPv4]) != 2 || !v.Configured[IPv4] || v.Configured[IPv6] {
		t.Fatalf("view %+v", v)
	}
}

func TestOverridesTakePrecedenceOverTheEnableFlag(t *testing.T) {
	snap, err := Build([]*config.Zone{mustZone(t, "example.org", `
records:
  www.example.org.:
    backends:
      - {address: 10.0.0.1}
      - {address: 10.0.0.2, enable: false}
`)}, states{})
	if err != nil {
		t.Fatal(err)
	}
	rec := snap.Records()[0]
	first, second := rec.Backends[0], rec.Backends[1]
	tests := []struct {
		name          string
		first, second Override
		want          []string
	}{
		{"as configured", NoOverride, NoOverride, []string{"10.0.0.1"}},
		{"drain the enabled one", ForceDisable, NoOverride, nil},
		{"enable the disabled one", NoOverride, ForceEnable, []string{"10.0.0.1", "10.0.0.2"}},
		{"swap", ForceDisable, ForceEnable, []string{"10.0.0.2"}},
		{"back to the configuration", NoOverride, NoOverride, []string{"10.0.0.1"}},
	}
	for _, tt := range tests {
		first.SetOverride(tt.first)
		second.SetOverride(tt.second)
		rec.Refresh()
		var got []string
		for _, b := range rec.View().Enabled[IPv4] {
			got = append(got, b.Config.Address)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: enabled %v, want %v", tt.name, got, tt.want)
		}
		if h := len(rec.View().Healthy[IPv4]); h != len(tt.want) {
			t.Errorf("%s: %d healthy, want %d (backends without checks are up)", tt.name, h, len(tt.want))
		}
	}
	if first.SetOverride(NoOverride) {
		t.Error("SetOverride reported a change for the same override")
	}
}

// TestHashOrderReachesTheSets checks that a record's hash_order orders its ip-hash sets: the
// file's text order, not the addresses' value order.
func TestHashOrderReachesTheSets(t *testing.T) {
	for order, want := range map[string][]string{
		"text":    {"10.0.0.10", "10.0.0.9"},
		"address": {"10.0.0.9", "10.0.0.10"},
	} {
		snap, err := Build([]*config.Zone{mustZone(t, "example.org", `
records:
  www.example.org.:
    mode: ip-hash
    hash_order: `+order+`
    backends: [{address: 10.0.0.9}, {address: 10.0.0.10}]
`)}, states{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, b := range snap.Records()[0].View().Healthy[IPv4] {
			got = append(got, b.Config.Address)
		}
		if !slices.Equal(got, want) {
			t.Errorf("hash_order %s: set order %v, want %v", order, got, want)
		}
	}
}

func TestCarryCountsAcrossReloads(t *testing.T) {
	build := func(yaml string) *Snapshot {
		t.Helper()
		snap, err := Build([]*config.Zone{mustZone(t, "example.org", yaml)}, states{})
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	old := build("records:\n  www.example.org.:\n    backends: [{address: 10.0.0.1}, {address: 10.0.0.2}]\n  gone.example.org.:\n    backends: [{address: 10.9.0.1}]\n")
	www := old.Records()[1]
	www.CountAnswer(false, time.Millisecond)
	www.CountAnswer(false, time.Millisecond)
	www.CountAnswer(true, time.Millisecond)
	www.CountSelected(www.Backends[0], 30, "DE")
	www.CountSelected(www.Backends[1], 30, "")
	old.Records()[0].CountAnswer(false, time.Millisecond) // gone.example.org., not in the new snapshot

	snap := build("records:\n  www.example.org.:\n    backends: [{address: 10.0.0.1}, {address: 10.0.0.3}]\n  new.example.org.:\n    backends: [{address: 10.0.0.1}]\n")
	snap.Records()[1].CountAnswer(false, time.Millisecond) // www, answered by the new snapshot already
	snap.CarryCounts(old)
	snap.CarryCounts(nil) // the first load: nothing to carry
	for _, r := range snap.Records() {
		ok, failed := r.Answers()
		var selected []uint64
		for _, b := range r.Backends {
			selected = append(selected, r.Selected(b), r.Traffic(b))
		}
		buckets, secs := r.Resolutions(false)
		if r.Name() == "www.example.org." && (buckets[0] != 3 || secs != 0.003) {
			t.Errorf("%s: resolution histogram %v in %gs, want 3 in the first bucket in 0.003s", r.Name(), buckets, secs)
		}
		want := map[string]string{"new.example.org.": "0 0 [0 0]", "www.example.org.": "3 1 [1 30 0 0]"}[r.Name()]
		if got := fmt.Sprintf("%d %d %v", ok, failed, selected); got != want {
			t.Errorf("%s: answers, failed, selected and traffic = %s, want %s", r.Name(), got, want)
		}
	}
}

// TestTrafficByCountry: the traffic of the answers whose client's country is known is counted
// by country and backend, the TTL each; other codes are not countries.
func TestTrafficByCountry(t *testing.T) {
	snap, err := Build([]*config.Zone{mustZone(t, "example.org", "records:\n  www.example.org.:\n    backends: [{address: 10.0.0.1}, {address: 10.0.0.2}]\n")}, states{})
	if err != nil {
		t.Fatal(err)
	}
	r := snap.Records()[0]
	r.CountSelected(r.Backends[0], 30, "DE")
	r.CountSelected(r.Backends[0], 60, "DE")
	r.CountSelected(r.Backends[1], 30, "US")
	r.CountSelected(r.Backends[1], 30, "")
	r.CountSelected(r.Backends[1], 30, "eu")
	var got []string
	r.TrafficByCountry(func(country string, b *Backend, seconds uint64) {
		got = append(got, fmt.Sprintf("%s %s %d", country, b.Config.Address, seconds))
	})
	if want := "[DE 10.0.0.1 90 US 10.0.0.2 30]"; fmt.Sprint(got) != want {
		t.Errorf("by country %v, want %s", got, want)
	}
	if r.Traffic(r.Backends[1]) != 90 {
		t.Errorf("traffic of the second %d, want 90", r.Traffic(r.Backends[1]))
	}
}

func TestResolutionHistogram(t *testing.T) {
	snap, err := Build([]*config.Zone{mustZone(t, "example.org", "records:\n  www.example.org.:\n    backends: [{address: 10.0.0.1}]\n")}, states{})
	if err != nil {
		t.Fatal(err)
	}
	r := snap.Records()[0]
	for _, d := range []time.Duration{time.Microsecond, 5 * time.Millisecond, 6 * time.Millisecond, 30 * time.Second} {
		r.CountAnswer(false, d)
	}
	r.CountAnswer(true, 2*time.Millisecond)
	buckets, secs := r.Resolutions(false)
	// Bounds 5ms, 10ms, ... 10s: 1µs and 5ms (a bound is inclusive) in the first, 6ms in the
	// second, 30s beyond the last.
	if want := []uint64{2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}; !slices.Equal(buckets, want) {
		t.Errorf("buckets %v, want %v", buckets, want)
	}
	if want := (time.Microsecond + 11*time.Millisecond + 30*time.Second).Seconds(); secs != want {
		t.Errorf("sum %gs, want %gs", secs, want)
	}
	if buckets, secs := r.Resolutions(true); buckets[0] != 1 || secs != 0.002 {
		t.Errorf("failed answers: %v in %gs, want 1 in the first bucket in 0.002s", buckets, secs)
	}
	if ok, failed := r.Answers(); ok != 4 || failed != 1 {
		t.Errorf("Answers = %d, %d; want 4, 1", ok, failed)
	}
}

// TestViewStaysSmall guards the sizes of a view, of which every record keeps one (what only
// some records need belongs in ViewExtra), of a record, of a backend (what only some need
// belongs in recordExtra) and of a name's node. A big zone holds hundreds of thousands of each;
// the sizes are those of Go's allocation classes, so that one more word does not cost the next
// class.
func TestViewStaysSmall(t *testing.T) {
	for _, tt := range []struct {
		what       string
		size, most uintptr
	}{
		{"View", unsafe.Sizeof(View{}), 144},
		{"Record", unsafe.Sizeof(Record{}), 96},
		{"Backend", unsafe.Sizeof(Backend{}), 40},
		{"node", unsafe.Sizeof(node{}), 32},
	} {
		if tt.size > tt.most {
			t.Errorf("a %s takes %d bytes, more than %d", tt.what, tt.size, tt.most)
		}
	}
}

// TestViewExtraOnlyWhenNeeded gives a view its extra part only when something is in it.
func TestViewExtraOnlyWhenNeeded(t *testing.T) {
	snap, err := Build([]*config.Zone{mustZone(t, "example.org", `
records:
  plain.example.org.: {backends: [{address: 10.0.0.1}]}
  geo.example.org.: {mode: geoip, backends: [{address: 10.0.0.2, country: FR}]}
`)}, states{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range snap.Records() {
		v := r.View()
		if got, want := v.extra != nil, r.Name() == "geo.example.org."; got != want {
			t.Errorf("%s: extra part %v, want %v", r.Name(), got, want)
		}
		if r.Name() == "geo.example.org." && v.Extra().Geo[IPv4] == nil {
			t.Errorf("%s: no geo table", r.Name())
		}
	}
}

// TestHealthyInOrderSharesEnabled gives a view one slice for its enabled and healthy backends
// when they are the same in the same order, and two otherwise: a weighted record's set keeps
// the configuration's order, a failover record with a backend down has fewer healthy ones.
func TestHealthyInOrderSharesEnabled(t *testing.T) {
	hs := states{}
	snap, err := Build([]*config.Zone{mustZone(t, "example.org", `
records:
  www.example.org.:
    mode: failover
    backends:
      - {address: 10.0.0.1, priority: 1, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.0.0.2, priority: 2}
`)}, hs)
	if err != nil {
		t.Fatal(err)
	}
	rec := snap.Records()[0]
	shared := func() bool {
		v := rec.View()
		return len(v.Healthy[IPv4]) > 0 && &v.Healthy[IPv4][0] == &v.Enabled[IPv4][0]
	}
	hs["www.example.org.|10.0.0.1|0"].Set(health.Up)
	rec.Refresh()
	if v := rec.View(); !shared() || len(v.Healthy[IPv4]) != 2 || cap(v.Healthy[IPv4]) != 2 {
		t.Errorf("all healthy in order: shared %v, healthy %d (cap %d); want one slice of 2", shared(), len(v.Healthy[IPv4]), cap(v.Healthy[IPv4]))
	}
	hs["www.example.org.|10.0.0.1|0"].Set(health.Down)
	rec.Refresh()
	if v := rec.View(); shared() || len(v.Healthy[IPv4]) != 1 || v.Healthy[IPv4][0].Config.Address != "10.0.0.2" || len(v.Enabled[IPv4]) != 2 {
		t.Errorf("one down: shared %v, healthy %d, enabled %d; want apart, 10.0.0.2 of 2", shared(), len(v.Healthy[IPv4]), len(v.Enabled[IPv4]))
	}
}

// TestEnabledSharesTheRecordsBackends: a view's enabled backends of a family are a subslice
// of the record's Backends when they are a run of them (every backend of a family, in order:
// most records of a big zone), capped so that an append cannot write into the record's; a copy
// when a backend between them is disabled.
func TestEnabledSharesTheRecordsBackends(t *testing.T) {
	snap, err := Build([]*config.Zone{mustZone(t, "example.org", `
records:
  mixed.example.org.:
    backends: [{address: 10.0.0.1}, {address: 10.0.0.2}, {address: "2001:db8::1"}]
  gap.example.org.:
    backends: [{address: 10.0.0.1}, {address: 10.0.0.2, enable: false}, {address: 10.0.0.3}]
`)}, states{})
	if err != nil {
		t.Fatal(err)
	}
	shares := func(r *Record, f Family, from int) bool {
		e := r.View().Enabled[f]
		return len(e) > 0 && &e[0] == &r.Backends[from] && cap(e) == len(e)
	}
	for _, tt := range []struct {
		name   string
		f      Family
		want   int  // enabled backends
		shared bool // a subslice of the record's
		from   int  // where it starts in the record's Backends
	}{
		{"mixed.example.org.", IPv4, 2, true, 0},
		{"mixed.example.org.", IPv6, 1, true, 2},
		{"gap.example.org.", IPv4, 2, false, 0},
	} {
		var r *Record
		for _, c := range snap.Records() {
			if c.Name() == tt.name {
				r = c
			}
		}
		if got := len(r.View().Enabled[tt.f]); got != tt.want {
			t.Errorf("%s family %d: %d enabled, want %d", tt.name, tt.f, got, tt.want)
		}
		if got := shares(r, tt.f, tt.from); got != tt.shared {
			t.Errorf("%s family %d: shares the record's backends %v, want %v", tt.name, tt.f, got, tt.shared)
		}
	}
}

// TestBackendKey names a backend by its record, its canonical address and its port.
func TestBackendKey(t *testing.T) {
	tests := []struct {
		b    config.Backend
		want string
	}{
		{config.Backend{Address: "10.0.0.1", IP: netip.MustParseAddr("10.0.0.1")}, "www.example.org.|10.0.0.1|0"},
		{config.Backend{Address: "2001:DB8:0::1", IP: netip.MustParseAddr("2001:DB8:0::1"), Port: 8443}, "www.example.org.|2001:db8::1|8443"},
		{config.Backend{Address: "web.example.net.", Port: 80}, "www.example.org.|web.example.net.|80"},
	}
	for _, tt := range tests {
		if got := config.BackendKey("www.example.org.", &tt.b); got != tt.want {
			t.Errorf("config.BackendKey(%s) = %q, want %q", tt.b.Address, got, tt.want)
		}
	}
	// A catalog backend makes its key when asked, and reads a map by it without allocating.
	snap, err := Build([]*config.Zone{mustZone(t, "example.org", `
records:
  www.example.org.: {backends: [{address: 10.0.0.1}, {address: web.example.net., port: 80}]}
`)}, states{})
	if err != nil {
		t.Fatal(err)
	}
	rec := snap.Records()[0]
	byKey := map[string]int{"www.example.org.|10.0.0.1|0": 1, "www.example.org.|web.example.net.|80": 2}
	for i, b := range rec.Backends {
		var buf [128]byte
		if b.Key() != config.BackendKey(rec.Name(), b.Config) || byKey[string(b.AppendKey(buf[:0]))] != i+1 {
			t.Errorf("backend %d: key %q", i, b.Key())
		}
		if n := testing.AllocsPerRun(10, func() { _ = byKey[string(b.AppendKey(buf[:0]))] }); n != 0 {
			t.Errorf("backend %d: a lookup by its key allocates %v times", i, n)
		}
	}
	if !sameKey(rec.Backends[0], rec.Backends[0]) || sameKey(rec.Backends[0], rec.Backends[1]) {
		t.Error("sameKey does not tell the backends apart")
	}
}

// TestProbedBackendKeyIsTheManagers gives a probed backend the health manager's own key
// string (a big zone keeps one copy of each), and an unprobed one a key made when asked.
func TestProbedBackendKeyIsTheManagers(t *testing.T) {
	m := health.NewManager(health.Options{})
	snap, err := Build([]*config.Zone{mustZone(t, "example.org", `
records:
  www.example.org.:
    backends:
      - {address: 10.0.0.1, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.0.0.2}
`)}, m)
	if err != nil {
		t.Fatal(err)
	}
	probed, unprobed := snap.Records()[0].Backends[0], snap.Records()[0].Backends[1]
	const key = "www.example.org.|10.0.0.1|0"
	if probed.Key() != key || unsafe.StringData(probed.Key()) != unsafe.StringData(m.State(key).Key()) {
		t.Errorf("probed key %q is not the manager's string", probed.Key())
	}
	if unprobed.Key() != "www.example.org.|10.0.0.2|0" || unprobed.State.Key() != "" {
		t.Errorf("unprobed key %q (state's %q)", unprobed.Key(), unprobed.State.Key())
	}
}

// TestViewExtraSeesEveryField sets each field of a ViewExtra alone: it is then not empty, so a
// view keeps it. A field added and forgotten in empty fails here.
func TestViewExtraSeesEveryField(t *testing.T) {
	typ := reflect.TypeFor[ViewExtra]()
	for i := range typ.NumField() {
		var x ViewExtra
		f := reflect.ValueOf(&x).Elem().Field(i)
		switch {
		case f.Type() == reflect.TypeFor[time.Time]():
			f.Set(reflect.ValueOf(time.Unix(1, 0)))
		case f.Kind() == reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case f.Kind() == reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case f.Kind() == reflect.Array && f.Type().Elem().Kind() == reflect.Pointer:
			f.Index(0).Set(reflect.New(f.Type().Elem().Elem()))
		case f.Kind() == reflect.Array && f.Type().Elem().Kind() == reflect.Slice:
			f.Index(1).Set(reflect.MakeSlice(f.Type().Elem(), 1, 1))
		case f.Kind() == reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		default:
			t.Fatalf("ViewExtra.%s: a field of a type this test cannot set, %s", typ.Field(i).Name, f.Type())
		}
		if x.empty() {
			t.Errorf("a ViewExtra with only %s set is empty", typ.Field(i).Name)
		}
	}
}
