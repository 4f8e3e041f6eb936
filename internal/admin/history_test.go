package admin

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// withoutHistory hides the History method of a provider: a block that keeps none.
type withoutHistory struct{ Provider }

func TestBackendsHistory(t *testing.T) {
	s, base := startServer(t, Config{}, nil, nil)
	org, net, bare := exampleProvider(), exampleProvider(), exampleProvider()
	net.zones[0].Name, bare.zones[0].Name = "example.net.", "example.com."
	org.history = []BackendHistory{
		{Key: "www.example.org.|10.1.0.2|0", Record: "www.example.org.", LatencyUS: Series{-1, 1500}, Failures: Series{-1, 0},
			From: checkTime, State: StateUnknown, Changes: []Change{{Time: checkTime.Add(time.Second), To: StateUp, Reason: "ok"}}},
		{Key: "www.example.org.|10.1.0.1|0", Record: "www.example.org.", LatencyUS: Series{900, -1}, Failures: Series{2, 1},
			From: checkTime, State: StateDown, Changes: []Change{}},
	}
	net.history = []BackendHistory{{Key: "api.example.net.|192.0.2.1|0", Record: "api.example.net.", LatencyUS: Series{7, 8},
		Failures: Series{0, 0}, From: checkTime, State: StateUp, Changes: []Change{}}}
	bare.history = []BackendHistory{{Key: "never.example.com.|192.0.2.9|0"}}
	s.Register([]string{"example.org."}, org)
	s.Register([]string{"example.net."}, net)
	s.Register([]string{"example.com."}, withoutHistory{bare})

	before := time.Now()
	body := mustGet(t, base+"/api/v1/backends/history")
	if strings.Count(body, "\n") != 1 || !strings.Contains(body, `"latency_us":[null,1500]`) {
		t.Errorf("the history is not compact, with nulls for missing values: %s", body)
	}
	h := decode[History](t, body)
	var keys []string
	for _, b := range h.Backends {
		keys = append(keys, b.Key)
	}
	if want := []string{"api.example.net.|192.0.2.1|0", "www.example.org.|10.1.0.1|0", "www.example.org.|10.1.0.2|0"}; !slices.Equal(keys, want) {
		t.Fatalf("backends %v, want %v (sorted by record and key, without the block that keeps no history)", keys, want)
	}
	if h.BucketSeconds != 30 || h.Now.Before(before) || h.Now.Sub(h.Start) > time.Hour || h.Now.Sub(h.Start) < time.Hour-30*time.Second {
		t.Errorf("window %ds from %s to %s", h.BucketSeconds, h.Start, h.Now)
	}
	if b := h.Backends[2]; !slices.Equal(b.LatencyUS, Series{-1, 1500}) || !slices.Equal(b.Failures, Series{-1, 0}) ||
		b.State != StateUnknown || len(b.Changes) != 1 || b.Changes[0].To != StateUp || !b.From.Equal(checkTime) {
		t.Errorf("backend %+v", b)
	}

	empty := decode[History](t, mustGet(t, startEmpty(t)+"/api/v1/backends/history"))
	if empty.Backends == nil || len(empty.Backends) != 0 {
		t.Errorf("without blocks: %+v, want an empty list", empty)
	}
}

// startEmpty serves the API with no block registered.
func startEmpty(t *testing.T) string {
	_, base := startServer(t, Config{}, nil, nil)
	return base
}

func TestSeriesJSON(t *testing.T) {
	tests := []struct {
		series Series
		json   string
	}{
		{Series{}, `[]`},
		{Series{-1}, `[null]`},
		{Series{0, -1, 1234567, -1}, `[0,null,1234567,null]`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(tt.series)
		if err != nil || string(got) != tt.json {
			t.Errorf("marshal %v = %s, %v, want %s", tt.series, got, err, tt.json)
		}
		var back Series
		if err := json.Unmarshal([]byte(tt.json), &back); err != nil || !slices.Equal(back, tt.series) {
			t.Errorf("unmarshal %s = %v, %v", tt.json, back, err)
		}
	}
	var s Series
	if err := json.Unmarshal([]byte(`[1,"x"]`), &s); err == nil {
		t.Errorf("a string in a series is accepted: %v", s)
	}
}

// FuzzSeries checks that a series read from JSON writes back to JSON that reads the same.
func FuzzSeries(f *testing.F) {
	for _, seed := range []string{`[]`, `[null,1,2]`, `[-1]`, `null`, `[1.5]`, `[9223372036854775807]`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var s Series
		if err := json.Unmarshal([]byte(in), &s); err != nil {
			return
		}
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("marshal %v: %v", s, err)
		}
		var back Series
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("unmarshal %s: %v", out, err)
		}
		// Negative numbers read as themselves, and write as null: they are missing values.
		for i := range s {
			if s[i] < 0 {
				s[i] = -1
			}
		}
		if !slices.Equal(back, s) {
			t.Fatalf("%s read as %v, wrote %s, read back %v", in, s, out, back)
		}
	})
}
