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
