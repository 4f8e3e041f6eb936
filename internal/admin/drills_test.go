package admin

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/drill"
)

// drillProvider is exampleProvider with one drill, "eu", whose runs fail.
type drillProvider struct{ *fakeProvider }

func (drillProvider) Drills(now time.Time) []drill.Status {
	return []drill.Status{{Name: "eu", Every: "1h0m0s", Hypothesis: drill.Hypothesis{Down: []string{"site:eu"}}, Next: now.Add(time.Hour)}}
}

func (drillProvider) RunDrill(_ context.Context, name string, h drill.Hypothesis) (drill.Report, error) {
	if name != "" && name != "eu" {
		return drill.Report{}, drill.ErrUnknown
	}
	if name == "eu" {
		h = drill.Hypothesis{Down: []string{"site:eu"}}
	}
	return drill.Report{Drill: name, Hypothesis: h, Failed: true, Summary: h.String() + ": 1 of 1 records touched fail",
		Records: []drill.RecordReport{{Record: "www.example.org.", Failures: []string{"no A backend left"}}}}, nil
}

func TestDrillEndpoints(t *testing.T) {
	s, base := startServer(t, Config{}, nil, nil)
	s.Register([]string{"example.org."}, drillProvider{exampleProvider()})
	tests := []struct {
		name, method, path, body string
		code                     int
		want                     string
	}{
		{"list", "GET", "/api/v1/drills", "", http.StatusOK, `"name": "eu"`},
		{"by name", "POST", "/api/v1/drills/run", `{"name": "eu"}`, http.StatusOK, `"summary": "down site:eu: 1 of 1 records touched fail"`},
		{"a what-if", "POST", "/api/v1/drills/run", `{"primaries": true}`, http.StatusOK, `"primaries": true`},
		{"unknown", "POST", "/api/v1/drills/run", `{"name": "ap"}`, http.StatusNotFound, "no block has drill ap"},
		{"both", "POST", "/api/v1/drills/run", `{"name": "eu", "down": ["x"]}`, http.StatusBadRequest, "not both"},
		{"an unknown field", "POST", "/api/v1/drills/run", `{"live": "1m"}`, http.StatusBadRequest, "unknown field"},
	}
	for _, tt := range tests {
		code, body := call(t, tt.method, base+tt.path, tt.body, "Content-Type", "application/json")
		if code != tt.code || !strings.Contains(body, tt.want) {
			t.Errorf("%s: %d %s, want %d with %q", tt.name, code, body, tt.code, tt.want)
		}
	}
}
