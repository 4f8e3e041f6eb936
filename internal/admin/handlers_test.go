package admin

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/published"
)

func TestZonesAndBackends(t *testing.T) {
	store := overlay.NewMemory(overlay.SystemClock{})
	_, base := startServer(t, Config{}, store, exampleProvider())
	if err := store.Apply(context.Background(), []overlay.Change{{Key: "www.example.org.|10.1.0.2|0", Action: overlay.Drain, Expires: time.Now().Add(time.Hour), Reason: "patching"}}); err != nil {
		t.Fatal(err)
	}

	zones := decode[[]Zone](t, mustGet(t, base+"/api/v1/zones"))
	if len(zones) != 1 || len(zones[0].Records) != 2 {
		t.Fatalf("zones = %+v", zones)
	}
	www := zones[0].Records[1]
	if www.Mode != "failover" || www.Healthy != 2 || www.Backends[0].Latency != Millis(1500*time.Microsecond) || !www.Backends[0].LastCheck.Equal(checkTime) {
		t.Errorf("www = %+v", www)
	}
	if o := www.Backends[1].Override; o == nil || o.Action != overlay.Drain || o.Reason != "patching" || www.Backends[0].Override != nil {
		t.Errorf("overrides of www: %+v, %+v", www.Backends[1].Override, www.Backends[0].Override)
	}
	if body := mustGet(t, base+"/api/v1/zones"); !strings.Contains(body, `"latency_ms": 1.5`) {
		t.Errorf("latency is not in milliseconds: %s", body)
	}
	if z := decode[Zone](t, mustGet(t, base+"/api/v1/zones/Example.ORG")); z.Name != "example.org." {
		t.Errorf("zone = %+v", z)
	}
	if code, body := call(t, "GET", base+"/api/v1/zones/example.net.", ""); code != http.StatusNotFound || !strings.Contains(body, "example.net.") {
		t.Errorf("unknown zone: %d %s", code, body)
	}

	for query, want := range map[string]string{
		"":                                   "10.1.0.5 10.1.0.1 10.1.0.2 10.2.0.1 2001:db8::1",
		"?state=up":                          "10.1.0.1 10.1.0.2 2001:db8::1",
		"?state=down&zone=example.org":       "10.1.0.5",
		"?record=WWW.example.org&tag=hdd":    "10.1.0.2",
		"?address_prefix=2001:db8::/64":      "2001:db8::1",
		"?location=dc-us&tag=test&tag=prod":  "10.2.0.1",
		"?key=api.example.org.|10.1.0.5|443": "10.1.0.5",
	} {
		var got []string
		for _, b := range decode[[]BackendStatus](t, mustGet(t, base+"/api/v1/backends"+query)) {
			got = append(got, b.Address)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("backends%s = %v, want %s", query, got, want)
		}
	}
	if b := decode[[]BackendStatus](t, mustGet(t, base+"/api/v1/backends?state=down")); b[0].Zone != "example.org." || b[0].Record != "api.example.org." || b[0].Port != 443 {
		t.Errorf("backend with its zone and record = %+v", b[0])
	}
	for _, query := range []string{"?state=sideways", "?address_prefix=10.0.0.0/33"} {
		if code, _ := call(t, "GET", base+"/api/v1/backends"+query, ""); code != http.StatusBadRequest {
			t.Errorf("backends%s: %d", query, code)
		}
	}
	if o := decode[[]overlay.Override](t, mustGet(t, base+"/api/v1/overrides")); len(o) != 1 || o[0].Key != "www.example.org.|10.1.0.2|0" {
		t.Errorf("overrides = %+v", o)
	}
}

func TestActions(t *testing.T) {
	store := overlay.NewMemory(overlay.SystemClock{})
	_, base := startServer(t, Config{}, store, exampleProvider())
	post := func(action, body string) (int, string) {
		return call(t, "POST", base+"/api/v1/backends/"+action, body)
	}

	before := time.Now()
	code, body := post("drain", `{"location":"dc-eu","record":"www.example.org","duration":"30m","reason":"kernel"}`)
	if code != http.StatusOK {
		t.Fatalf("drain: %d %s", code, body)
	}
	res := decode[ActionResult](t, body)
	if res.Action != overlay.Drain || len(res.Backends) != 2 || res.Expires.Before(before.Add(29*time.Minute)) || res.Expires.After(before.Add(31*time.Minute)) {
		t.Fatalf("drain result = %+v", res)
	}
	if res.Backends[0] != (Target{Key: "www.example.org.|10.1.0.1|0", Zone: "example.org.", Record: "www.example.org.", Address: "10.1.0.1"}) {
		t.Errorf("target = %+v", res.Backends[0])
	}
	if o, _ := store.Get("www.example.org.|10.1.0.2|0"); o.Action != overlay.Drain || !o.Expires.Equal(res.Expires) || o.Reason != "kernel" {
		t.Errorf("stored drain = %+v", o)
	}

	code, body = post("clear", `{"keys":["www.example.org.|10.1.0.1|0"]}`)
	if code != http.StatusOK || len(decode[ActionResult](t, body).Backends) != 1 {
		t.Fatalf("clear: %d %s", code, body)
	}
	if got := store.List(); len(got) != 1 || got[0].Key != "www.example.org.|10.1.0.2|0" {
		t.Fatalf("after clear: %+v", got)
	}

	// Refused requests change nothing, even when part of the selection is valid.
	for _, c := range []struct {
		action, body string
		code         int
		msg          string
	}{
		{"disable", `{"keys":["www.example.org.|10.1.0.1|0","www.example.org.|10.9.9.9|0"]}`, http.StatusUnprocessableEntity, "no backend has key www.example.org.|10.9.9.9|0"},
		{"disable", `{"zone":"example.net","location":"dc-eu"}`, http.StatusUnprocessableEntity, "zone example.net is not served here"},
		{"disable", `{"record":"nope.example.org."}`, http.StatusUnprocessableEntity, "no backend matches record=nope.example.org."},
		{"disable", `{"reason":"no selector"}`, http.StatusBadRequest, "empty selector"},
		{"disable", `{"location":"dc-eu","tags":[""]}`, http.StatusBadRequest, "empty tag"},
		{"drain", `{"location":"dc-eu","duration":"soon"}`, http.StatusBadRequest, "duration"},
		{"drain", `{"location":"dc-eu","duration":"-5m"}`, http.StatusBadRequest, "not positive"},
		{"clear", `{"location":"dc-eu","duration":"5m"}`, http.StatusBadRequest, "clear takes no duration"},
		{"maintain", `{"location":"dc-eu"}`, http.StatusNotFound, "unknown action"},
		{"disable", `[{"location":"dc-eu"}]`, http.StatusBadRequest, "invalid JSON"},
		{"disable", ``, http.StatusBadRequest, "invalid JSON"},
		// A valid object that a long padding follows is refused whole.
		{"disable", `{"location":"dc-eu"}` + strings.Repeat(" ", maxBody), http.StatusRequestEntityTooLarge, "longer than"},
	} {
		code, body := post(c.action, c.body)
		if code != c.code || !strings.Contains(decode[ErrorBody](t, body).Error, c.msg) {
			t.Errorf("%s %s: %d %s, want %d with %q", c.action, c.body, code, body, c.code, c.msg)
		}
	}
	if got := store.List(); len(got) != 1 {
		t.Fatalf("refused requests changed the overrides: %+v", got)
	}
}

// failingStore refuses every change, as a full disk would.
type failingStore struct{ overlay.Store }

func (failingStore) Apply(context.Context, []overlay.Change) error {
	return errors.New("write overrides file /var/lib/meridian/overrides.json: no space left on device")
}

func TestActionStoreFailure(t *testing.T) {
	_, base := startServer(t, Config{}, failingStore{overlay.NewMemory(overlay.SystemClock{})}, exampleProvider())
	code, body := call(t, "POST", base+"/api/v1/backends/disable", `{"location":"dc-eu"}`)
	if code != http.StatusInternalServerError || !strings.Contains(body, "no space left") {
		t.Fatalf("store failure: %d %s", code, body)
	}
}

func TestTransitions(t *testing.T) {
	s, base := startServer(t, Config{}, nil, exampleProvider())
	other := exampleProvider()
	other.zones[0].Name = "example.net."
	other.transitions = []Transition{{Time: checkTime.Add(-time.Minute), Record: "www.example.net.", Backend: "www.example.net.|192.0.2.1|0", From: StateUp, To: StateDown}}
	s.Register([]string{"example.net."}, other)

	all := decode[[]Transition](t, mustGet(t, base+"/api/v1/transitions"))
	if len(all) != 3 || all[0].Record != "api.example.org." || all[1].Record != "www.example.net." || all[2].From != StateUnknown {
		t.Fatalf("transitions = %+v", all)
	}
	if two := decode[[]Transition](t, mustGet(t, base+"/api/v1/transitions?limit=2")); len(two) != 2 {
		t.Errorf("limit=2: %d", len(two))
	}
	for _, limit := range []string{"0", "x", "1001"} {
		if code, _ := call(t, "GET", base+"/api/v1/transitions?limit="+limit, ""); code != http.StatusBadRequest {
			t.Errorf("limit=%s: %d", limit, code)
		}
	}
}

func TestExplain(t *testing.T) {
	p := exampleProvider()
	_, base := startServer(t, Config{}, nil, p)
	exp := decode[Explanation](t, mustGet(t, base+"/api/v1/explain?name=WWW.example.org"))
	want := Query{Name: "www.example.org.", Type: "A", Client: netip.MustParseAddr("127.0.0.1")}
	if !reflect.DeepEqual(exp.Query, want) || !reflect.DeepEqual(p.explained[0], want) || exp.Rcode != "NOERROR" || len(exp.Answer) != 1 || exp.Steps[0].Stage != "policy" {
		t.Fatalf("explanation = %+v, provider asked %+v", exp, p.explained)
	}
	mustGet(t, base+"/api/v1/explain?name=www.example.org.&type=aaaa&client=::ffff:192.0.2.7&ecs=198.51.100.99/24&down=site:eu,10.0.0.1&down=&drained=www.example.org.|192.0.2.1|0")
	if got := p.explained[1]; got.Type != "AAAA" || got.Client != netip.MustParseAddr("192.0.2.7") || got.ECS != netip.MustParsePrefix("198.51.100.0/24") ||
		!slices.Equal(got.Down, []string{"site:eu", "10.0.0.1"}) || !slices.Equal(got.Drained, []string{"www.example.org.|192.0.2.1|0"}) {
		t.Errorf("query = %+v", got)
	}
	mustGet(t, base+"/api/v1/explain?name=www.example.org&ecs=2001:db8::1")
	if got := p.explained[2].ECS; got != netip.MustParsePrefix("2001:db8::1/128") {
		t.Errorf("ecs of an address = %v", got)
	}

	for query, code := range map[string]int{
		"":                                      http.StatusBadRequest,
		"?name=bad..name":                       http.StatusBadRequest,
		"?name=www.example.org&type=BOGUS":      http.StatusBadRequest,
		"?name=www.example.org&client=nobody":   http.StatusBadRequest,
		"?name=www.example.org&ecs=10.0.0.0/40": http.StatusBadRequest,
		"?name=www.example.net":                 http.StatusNotFound,
		"?name=broken.example.org":              http.StatusInternalServerError,
	} {
		if got, body := call(t, "GET", base+"/api/v1/explain"+query, ""); got != code {
			t.Errorf("explain%s: %d %s, want %d", query, got, body, code)
		}
	}
	if len(p.explained) != 4 {
		t.Errorf("the provider was asked %d times, want 4 (invalid queries stop at the server)", len(p.explained))
	}
}

func TestReload(t *testing.T) {
	p := exampleProvider()
	_, base := startServer(t, Config{}, nil, p)
	code, body := call(t, "POST", base+"/api/v1/reload", "")
	if res := decode[ReloadResult](t, body); code != http.StatusOK || !res.OK || len(res.Blocks) != 1 || res.Blocks[0].Zones[0] != "example.org." {
		t.Fatalf("reload: %d %s", code, body)
	}
	p.reloadErr = errors.New("example.org.yml:3:5: records: bad")
	code, body = call(t, "POST", base+"/api/v1/reload", "")
	res := decode[ReloadResult](t, body)
	if code != http.StatusUnprocessableEntity || res.OK || !strings.Contains(res.Error, "previous configuration") || res.Blocks[0].Error != p.reloadErr.Error() {
		t.Fatalf("failed reload: %d %s", code, body)
	}
	if code, _ := call(t, "POST", base+"/api/v1/reload", "", "Content-Type", "text/plain"); code != http.StatusUnsupportedMediaType {
		t.Errorf("reload without JSON content type: %d", code)
	}
}

func TestDashboardAndDocument(t *testing.T) {
	_, base := startServer(t, Config{}, nil, nil)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/ui/" {
		t.Errorf("GET /: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, err = http.Get(base + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Errorf("GET /ui/: %d %v", resp.StatusCode, resp.Header)
	}
	if body := mustGet(t, base+"/api/v1/openapi.yaml"); body != string(OpenAPI) {
		t.Error("the OpenAPI document served differs from the embedded one")
	}
	if code, _ := call(t, "GET", base+"/ui/nope.js", ""); code != http.StatusNotFound {
		t.Errorf("missing dashboard file: %d", code)
	}
	if code, _ := call(t, "GET", base+"/ui/%ff", ""); code != http.StatusBadRequest {
		t.Errorf("a path that is not UTF-8: %d, want 400", code)
	}
	if body := mustGet(t, base+"/livez"); !strings.Contains(body, `"ok"`) {
		t.Errorf("livez: %s", body)
	}
}

// TestSitesListsTheBlocksThatNameTheirSite: GET /api/v1/sites leaves out a block without a
// site, whose provider gives the zero view, and a provider that knows nothing of sites.
func TestSitesListsTheBlocksThatNameTheirSite(t *testing.T) {
	for _, tt := range []struct {
		name      string
		providers map[string]Provider // by zone
		want      []string            // the sites listed
	}{
		{"no provider of sites", map[string]Provider{"example.org.": exampleProvider()}, nil},
		{"a block without a site", map[string]Provider{"example.org.": &sitesFake{fakeProvider: exampleProvider()}}, nil},
		{"one block with a site, one without", map[string]Provider{
			"example.org.": &sitesFake{fakeProvider: exampleProvider(), view: published.View{Site: "eu"}},
			"example.net.": &sitesFake{fakeProvider: exampleProvider()},
		}, []string{"eu"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, base := startServer(t, Config{}, nil, nil)
			for zone, p := range tt.providers {
				s.Register([]string{zone}, p)
			}
			var got []string
			for _, v := range decode[[]SiteBlock](t, mustGet(t, base+"/api/v1/sites")) {
				got = append(got, v.Site)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("sites %q, want %q", got, tt.want)
			}
		})
	}
}
