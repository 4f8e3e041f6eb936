package admin

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/overlay"
)

// guardedProvider is exampleProvider whose www.example.org. has a drain guard that any change
// disabling 10.1.0.1 breaks.
type guardedProvider struct {
	*fakeProvider
	asked [][]overlay.Change
}

const guardedKey = "www.example.org.|10.1.0.1|0"

func (p *guardedProvider) Guard(changes []overlay.Change) []Breach {
	p.asked = append(p.asked, slices.Clone(changes))
	for _, c := range changes {
		if c.Key == guardedKey && c.Action.Disables() {
			return []Breach{{Record: "www.example.org.", Family: "A", Guard: DrainGuard{MinHealthy: 2}, Served: 1, Backends: 3,
				Share: 1.0 / 3, ServedBefore: 2, Text: "www.example.org. A: 1 of 3 backends served"}}
		}
	}
	return nil
}

func TestDrainGuardAtTheAPI(t *testing.T) {
	store := overlay.NewMemory(overlay.SystemClock{})
	p := &guardedProvider{fakeProvider: exampleProvider()}
	s, base := startServer(t, Config{}, store, nil)
	s.Register([]string{"example.org."}, p)

	tests := []struct {
		name, method, path, body string
		code                     int
		want                     string // in the body
		stored                   bool   // the guarded backend has an override after
	}{
		{"refused", "POST", "/api/v1/backends/drain", `{"location": "dc-eu", "duration": "1h"}`, http.StatusConflict, `"breaches"`, false},
		{"a scheduled drain, judged now", "POST", "/api/v1/backends/drain", `{"keys": ["` + guardedKey + `"], "starts_in": "1h"}`, http.StatusConflict, "1 of 3 backends served", false},
		{"CoreDNS-GSLB's disable", "POST", "/api/backends/disable", `{"address_prefix": "10.1.0.1"}`, http.StatusConflict, "refused by the drain guard", false},
		{"CoreDNS-GSLB's pool", "PUT", "/api/v1/zones/example.org./records/www.example.org./backends", `{"backends": [{"address": "10.1.0.2"}]}`, http.StatusConflict, "refused by the drain guard", false},
		{"forced without a reason", "POST", "/api/v1/backends/disable", `{"keys": ["` + guardedKey + `"], "force": true}`, http.StatusBadRequest, "a forced change needs a reason", false},
		{"another backend passes", "POST", "/api/v1/backends/drain", `{"keys": ["www.example.org.|10.1.0.2|0"]}`, http.StatusOK, `"drain"`, false},
		{"forced with a reason", "POST", "/api/v1/backends/disable", `{"keys": ["` + guardedKey + `"], "force": true, "reason": "CHG-7 disk swap"}`, http.StatusOK, `"disable"`, true},
	}
	for _, tt := range tests {
		code, body := call(t, tt.method, base+tt.path, tt.body, "Content-Type", "application/json")
		if code != tt.code || !strings.Contains(body, tt.want) {
			t.Errorf("%s: %d %s, want %d with %q", tt.name, code, body, tt.code, tt.want)
		}
		if _, ok := store.Get(guardedKey); ok != tt.stored {
			t.Errorf("%s: the guarded backend has an override: %t, want %t", tt.name, ok, tt.stored)
		}
	}
	o, _ := store.Get(guardedKey)
	if !o.Forced || o.Reason != "CHG-7 disk swap" || len(o.Breaches) != 1 || !strings.Contains(o.Breaches[0], "1 of 3") {
		t.Errorf("the forced override keeps %+v", o)
	}
	_, body := call(t, "GET", base+"/api/v1/overrides", "")
	if !strings.Contains(body, `"forced": true`) || !strings.Contains(body, `"breaches"`) {
		t.Errorf("the overrides list does not show the forcing:\n%s", body)
	}

	// The client carries the breaches of a refusal.
	c := &Client{BaseURL: base}
	_, err := c.Act(t.Context(), overlay.Drain, ActionRequest{Selector: Selector{Keys: []string{guardedKey}}})
	se, ok := err.(*StatusError)
	if !ok || se.Code != http.StatusConflict || len(se.Breaches) != 1 || se.Breaches[0].Served != 1 {
		t.Errorf("client error %#v", err)
	}
}
