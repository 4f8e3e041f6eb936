package admin

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/overlay"
)

func TestForceUpAndScheduledDrains(t *testing.T) {
	store := overlay.NewMemory(overlay.SystemClock{})
	_, base := startServer(t, Config{}, store, exampleProvider())
	post := func(action, body string) (int, string) {
		return call(t, "POST", base+"/api/v1/backends/"+action, body)
	}
	const key = "api.example.org.|10.1.0.5|443"

	if code, body := post("force-up", `{"keys": ["`+key+`"], "duration": "1h", "reason": "probe is wrong"}`); code != http.StatusOK {
		t.Fatalf("force-up: %d %s", code, body)
	}
	if o, ok := store.Get(key); !ok || o.Action != overlay.ForceUp || o.Expires.IsZero() {
		t.Fatalf("after force-up the store holds %+v, %v", o, ok)
	}
	zones := decode[[]Zone](t, mustGet(t, base+"/api/v1/zones"))
	if o := zones[0].Records[0].Backends[0].Override; o == nil || o.Action != overlay.ForceUp {
		t.Fatalf("zones show the override %+v", o)
	}

	before := time.Now()
	code, body := post("drain", `{"keys": ["`+key+`"], "starts_in": "10m", "duration": "1h"}`)
	if code != http.StatusOK {
		t.Fatalf("scheduled drain: %d %s", code, body)
	}
	res := decode[ActionResult](t, body)
	if res.Starts.Before(before.Add(10*time.Minute-time.Second)) || res.Starts.After(time.Now().Add(10*time.Minute)) ||
		res.Expires.Sub(res.Starts) != time.Hour {
		t.Fatalf("scheduled drain starts %v expires %v; want in 10m, for an hour from then", res.Starts, res.Expires)
	}
	if o, _ := store.Get(key); o.Action != overlay.Drain || !o.Starts.Equal(res.Starts) || !o.Pending(time.Now()) {
		t.Fatalf("the store holds %+v", o)
	}
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	if code, body := post("drain", `{"keys": ["`+key+`"], "starts": "`+at+`"}`); code != http.StatusOK || !strings.Contains(body, `"starts": "`+at) {
		t.Fatalf("drain at %s: %d %s", at, code, body)
	}

	for _, tc := range []struct{ action, body, want string }{
		{"disable", `{"keys": ["` + key + `"], "starts_in": "10m"}`, "only drain takes a start time"},
		{"drain", `{"keys": ["` + key + `"], "starts_in": "10m", "starts": "` + at + `"}`, "not both"},
		{"drain", `{"keys": ["` + key + `"], "starts_in": "-1m"}`, "not positive"},
		{"drain", `{"keys": ["` + key + `"], "starts": "2001-01-01T00:00:00Z"}`, "not in the future"},
	} {
		if code, body := post(tc.action, tc.body); code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s: %d %s, want 400 with %q", tc.action, tc.body, code, body, tc.want)
		}
	}
	if code, body := post("sideways", `{"keys": ["`+key+`"]}`); code != http.StatusNotFound || !strings.Contains(body, "force-up") {
		t.Errorf("unknown action: %d %s", code, body)
	}
}
