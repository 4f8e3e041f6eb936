package admin

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/overlay"
)

func TestOverview(t *testing.T) {
	_, base := startServer(t, Config{}, nil, exampleProvider())

	code, body := call(t, "GET", base+"/api/overview", "")
	if code != http.StatusOK {
		t.Fatalf("GET /api/overview: %d %s", code, body)
	}
	all := decode[map[string][]compatRecord](t, body)
	recs := all["example.org."]
	if len(all) != 1 || len(recs) != 2 {
		t.Fatalf("overview = %v", all)
	}
	api, www := recs[0], recs[1]
	if api.Record != "api.example.org." || api.Status != "unhealthy" || api.Backends[0].Alive != "unhealthy" {
		t.Errorf("api record = %+v", api)
	}
	if www.Status != "healthy" || len(www.Backends) != 4 || www.Backends[0] != (compatBackend{Address: "10.1.0.1", Alive: "healthy", LastHealthcheck: "2030-05-06T07:08:09Z"}) {
		t.Errorf("www record = %+v", www)
	}

	// The zone in any case, with or without its trailing dot.
	for _, zone := range []string{"example.org.", "EXAMPLE.org"} {
		code, body := call(t, "GET", base+"/api/overview/"+zone, "")
		if code != http.StatusOK || len(decode[[]compatRecord](t, body)) != 2 {
			t.Errorf("GET /api/overview/%s: %d %s", zone, code, body)
		}
	}
	if code, body := call(t, "GET", base+"/api/overview/unknown.test.", ""); code != http.StatusNotFound || decode[ErrorBody](t, body).Error != "Zone not found" {
		t.Errorf("unknown zone: %d %s", code, body)
	}
	if code, _ := call(t, "POST", base+"/api/overview", "{}"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /api/overview: %d", code)
	}
}

// compatResult is the answer of a CoreDNS-GSLB bulk action.
type compatResult struct {
	Success  bool               `json:"success"`
	Status   string             `json:"status"`
	Enabled  *int               `json:"enabled"`
	Disabled *int               `json:"disabled"`
	Backends []compatBackendRef `json:"backends"`
}

func addresses(refs []compatBackendRef) string {
	var out []string
	for _, r := range refs {
		out = append(out, r.Address)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

func TestCompatBulkActions(t *testing.T) {
	store := overlay.NewMemory(overlay.SystemClock{})
	_, base := startServer(t, Config{}, store, exampleProvider())
	post := func(path, body string) (int, string) { return call(t, "POST", base+path, body) }

	for _, c := range []struct {
		path, body, want string
		count            int
	}{
		{"/api/backends/disable", `{"location":"dc-eu"}`, "10.1.0.1 10.1.0.2 10.1.0.5", 3},
		{"/api/backends/disable", `{"address_prefix":"10.1.0."}`, "10.1.0.1 10.1.0.2 10.1.0.5", 3},
		{"/api/backends/disable", `{"address_prefix":"10.0.0.0/8"}`, "10.1.0.1 10.1.0.2 10.1.0.5 10.2.0.1", 4},
		{"/api/backends/enable", `{"tags":["ssd","test"]}`, "10.1.0.1 10.2.0.1", 2}, // any of the tags
		{"/api/backends/enable", `{"location":"dc-eu","tags":["prod"]}`, "10.1.0.1 10.1.0.5", 2},
		{"/api/backends/enable", `{"location":"dc-us","address_prefix":"2001:db8::/32"}`, "2001:db8::1", 1},
	} {
		code, body := post(c.path, c.body)
		if code != http.StatusOK {
			t.Errorf("%s %s: %d %s", c.path, c.body, code, body)
			continue
		}
		res := decode[compatResult](t, body)
		count := res.Disabled
		if strings.HasSuffix(c.path, "enable") {
			count = res.Enabled
		}
		if !res.Success || res.Status != "ok" || count == nil || *count != c.count || addresses(res.Backends) != c.want {
			t.Errorf("%s %s: %s", c.path, c.body, body)
		}
	}
	if o, ok := store.Get("www.example.org.|10.1.0.1|0"); !ok || o.Action != overlay.Enable {
		t.Errorf("override of 10.1.0.1 = %+v, %v", o, ok)
	}
	if o, ok := store.Get("www.example.org.|10.1.0.2|0"); !ok || o.Action != overlay.Disable || !o.Expires.IsZero() {
		t.Errorf("override of 10.1.0.2 = %+v, %v", o, ok)
	}
}

func TestCompatBadRequests(t *testing.T) {
	store := overlay.NewMemory(overlay.SystemClock{})
	_, base := startServer(t, Config{}, store, exampleProvider())
	for _, c := range []struct {
		name, body, contentType string
		code                    int
		msg                     string
	}{
		{"empty selector", `{}`, "", http.StatusBadRequest, "empty selector"},
		{"malformed JSON", `{"location":`, "", http.StatusBadRequest, "invalid JSON"},
		{"two values", `{"location":"dc-eu"} {}`, "", http.StatusBadRequest, "invalid JSON"},
		{"unknown field", `{"location":"dc-eu","adress_prefix":"10."}`, "", http.StatusBadRequest, "adress_prefix"},
		{"wrong type", `{"tags":"prod"}`, "", http.StatusBadRequest, "invalid JSON"},
		{"bad prefix", `{"address_prefix":"10.0.0.0/99"}`, "", http.StatusBadRequest, "CIDR"},
		{"matches nothing", `{"location":"dc-mars"}`, "", http.StatusUnprocessableEntity, "no backend matches location=dc-mars"},
		{"criteria disagree", `{"location":"dc-us","tags":["prod"]}`, "", http.StatusUnprocessableEntity, "no backend matches"},
		{"not JSON", `location=dc-eu`, "application/x-www-form-urlencoded", http.StatusUnsupportedMediaType, "Content-Type"},
	} {
		header := []string{}
		if c.contentType != "" {
			header = []string{"Content-Type", c.contentType}
		}
		code, body := call(t, "POST", base+"/api/backends/disable", c.body, header...)
		if code != c.code || !strings.Contains(decode[ErrorBody](t, body).Error, c.msg) {
			t.Errorf("%s: %d %s, want %d with %q", c.name, code, body, c.code, c.msg)
		}
	}
	if n := len(store.List()); n != 0 {
		t.Fatalf("refused requests left %d overrides", n)
	}
	if code, _ := call(t, "GET", base+"/api/backends/disable", ""); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /api/backends/disable: %d", code)
	}
}

func TestCompatStatus(t *testing.T) {
	_, base := startServer(t, Config{}, nil, exampleProvider())
	code, body := call(t, "GET", base+"/api/v1/status", "")
	if code != http.StatusOK {
		t.Fatalf("GET /api/v1/status: %d %s", code, body)
	}
	res := decode[struct {
		Success bool                            `json:"success"`
		Zones   map[string][]compatStatusRecord `json:"zones"`
	}](t, body)
	recs := res.Zones["example.org."]
	if !res.Success || len(res.Zones) != 1 || len(recs) != 2 {
		t.Fatalf("status = %s", body)
	}
	www := recs[1]
	if www.FQDN != "www.example.org." || www.Record != www.FQDN || www.Status != "healthy" || len(www.Backends) != 4 || www.Backends[2].Alive != "unhealthy" {
		t.Errorf("www = %+v", www)
	}
}

func TestCompatPool(t *testing.T) {
	store := overlay.NewMemory(overlay.SystemClock{})
	p := exampleProvider()
	p.zones[0].Records[1].Backends[2].Enabled = false // 10.2.0.1 is disabled in its zone file
	_, base := startServer(t, Config{}, store, p)
	put := func(zone, fqdn, body string) (int, string) {
		return call(t, "PUT", base+"/api/v1/zones/"+zone+"/records/"+fqdn+"/backends", body, "Content-Type", "application/json")
	}
	overrides := func() string {
		var out []string
		for _, o := range store.List() {
			out = append(out, o.Key+"="+string(o.Action))
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}

	// The pool is 10.1.0.1 and 10.2.0.1 (enabled although its file disables it); 10.1.0.2 is
	// listed but not served; 2001:db8::1 is left out.
	code, body := put("example.org.", "www.example.org.", `{"backends":[{"address":"10.1.0.1","priority":1,"weight":1},{"address":"10.2.0.1","port":0},{"address":"10.1.0.2","enable":false}]}`)
	if code != http.StatusOK {
		t.Fatalf("PUT: %d %s", code, body)
	}
	res := decode[struct {
		Success  bool               `json:"success"`
		Record   string             `json:"record"`
		Backends []compatPoolChange `json:"backends"`
	}](t, body)
	if !res.Success || res.Record != "www.example.org." || len(res.Backends) != 4 || !res.Backends[0].Enabled || res.Backends[1].Enabled || !res.Backends[2].Enabled || res.Backends[3].Enabled {
		t.Errorf("answer = %s", body)
	}
	want := "www.example.org.|10.1.0.2|0=disable www.example.org.|10.2.0.1|0=enable www.example.org.|2001:db8::1|0=disable"
	if got := overrides(); got != want {
		t.Errorf("overrides = %s, want %s", got, want)
	}

	// A second PUT replaces the pool: overrides that no longer apply are removed. The names
	// may have any case and no trailing dot.
	if code, body := put("EXAMPLE.org", "WWW.example.org", `{"backends":[{"address":"10.1.0.2"},{"address":"2001:DB8::1"}]}`); code != http.StatusOK {
		t.Fatalf("second PUT: %d %s", code, body)
	}
	want = "www.example.org.|10.1.0.1|0=disable"
	if got := overrides(); got != want {
		t.Errorf("after the second PUT, overrides = %s, want %s", got, want)
	}

	// Refused requests change nothing.
	for _, c := range []struct {
		name, zone, fqdn, body string
		code                   int
		msg                    string
	}{
		{"unknown zone", "example.net.", "www.example.net.", `{"backends":[]}`, http.StatusNotFound, "Zone not found"},
		{"unknown record", "example.org.", "ftp.example.org.", `{"backends":[]}`, http.StatusNotFound, "Record not found"},
		{"no backends field", "example.org.", "www.example.org.", `{}`, http.StatusBadRequest, "backends is required"},
		{"unknown field", "example.org.", "www.example.org.", `{"backends":[{"address":"10.1.0.1","healthchecks":[]}]}`, http.StatusBadRequest, "healthchecks"},
		{"no address", "example.org.", "www.example.org.", `{"backends":[{"port":80}]}`, http.StatusBadRequest, "backends[0]: address is required"},
		{"not configured", "example.org.", "www.example.org.", `{"backends":[{"address":"10.1.0.1"},{"address":"10.9.9.9"}]}`, http.StatusUnprocessableEntity, "backends[1]: www.example.org. has no backend 10.9.9.9"},
		{"wrong port", "example.org.", "api.example.org.", `{"backends":[{"address":"10.1.0.5","port":80}]}`, http.StatusUnprocessableEntity, "no backend 10.1.0.5 port 80"},
		{"twice", "example.org.", "www.example.org.", `{"backends":[{"address":"10.1.0.1"},{"address":"10.1.0.1"}]}`, http.StatusBadRequest, "listed twice"},
		{"other priority", "example.org.", "www.example.org.", `{"backends":[{"address":"10.1.0.1","priority":2}]}`, http.StatusConflict, "priority 2, but the zone file gives 10.1.0.1 priority 1"},
		{"other weight", "example.org.", "www.example.org.", `{"backends":[{"address":"10.1.0.1","weight":5}]}`, http.StatusConflict, "weight 5"},
	} {
		code, body := put(c.zone, c.fqdn, c.body)
		if code != c.code || !strings.Contains(decode[ErrorBody](t, body).Error, c.msg) {
			t.Errorf("%s: %d %s, want %d with %q", c.name, code, body, c.code, c.msg)
		}
	}
	if got := overrides(); got != want {
		t.Errorf("refused requests changed the overrides to %s", got)
	}
	if code, body := call(t, "PUT", base+"/api/v1/zones/example.org./records/www.example.org./backends", `{"backends":[]}`, "Content-Type", "text/plain"); code != http.StatusUnsupportedMediaType {
		t.Errorf("PUT as text/plain: %d %s", code, body)
	}
}
