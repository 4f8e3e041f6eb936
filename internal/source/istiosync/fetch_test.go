package istiosync

import (
	"bytes"
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestFetch checks Fetch against a loopback HTTP server (httptest, on 127.0.0.1) standing in
// for istiod's /debug/syncz: the status it parses, and the errors of a failed status, of a
// body over MaxBody (one of exactly MaxBody bytes passes) and of a body that does not parse.
func TestFetch(t *testing.T) {
	padded := func(body string, size int) []byte {
		return append([]byte(body), bytes.Repeat([]byte(" "), size-len(body))...)
	}
	tests := []struct {
		name   string
		status int
		body   []byte
		want   map[string]Proxy
		err    string // a part of the error, "" when Fetch succeeds
	}{
		{name: "legacy", status: http.StatusOK, body: []byte(legacyBody), want: map[string]Proxy{gateway: synced}},
		{name: "xDS", status: http.StatusOK, body: []byte(csdsBody), want: map[string]Proxy{gateway: synced}},
		{name: "other 2xx", status: http.StatusNonAuthoritativeInfo, body: []byte(`[]`), want: map[string]Proxy{}},
		{name: "MaxBody bytes", status: http.StatusOK, body: padded(csdsBody, MaxBody), want: map[string]Proxy{gateway: synced}},
		{name: "over MaxBody", status: http.StatusOK, body: padded(csdsBody, MaxBody+1), err: "larger than 16777216 bytes"},
		{name: "500", status: http.StatusInternalServerError, body: []byte(legacyBody), err: "status 500 Internal Server Error"},
		{name: "404", status: http.StatusNotFound, body: []byte("404 page not found"), err: "status 404 Not Found"},
		{name: "garbage", status: http.StatusOK, body: []byte("<html></html>"), err: "sync status: neither a JSON array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet || r.URL.Path != "/debug/syncz" {
					http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusBadRequest)
					return
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write(tt.body)
			}))
			defer srv.Close()
			got, err := Fetch(t.Context(), srv.Client(), srv.URL+"/debug/syncz")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "GET "+srv.URL) {
					t.Fatalf("Fetch() error %v, want one naming the URL and containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Fetch() error %v", err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("Fetch() = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestFetchFailures checks the errors of a request that cannot be made or is not answered:
// they name the URL without its password. The server is a loopback httptest one.
func TestFetchFailures(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(legacyBody))
	}))
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	defer srv.Close()
	tests := []struct {
		name string
		ctx  context.Context
		url  string
		err  string
	}{
		{"bad URL", t.Context(), "http://[::1", "istiod sync status: "},
		{"canceled", canceled, strings.Replace(srv.URL, "http://", "http://admin:secret@", 1), "context canceled"},
		{"refused", t.Context(), closed.URL + "/debug/syncz", "GET " + closed.URL + "/debug/syncz: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Fetch(tt.ctx, nil, tt.url)
			if err == nil || !strings.Contains(err.Error(), tt.err) || strings.Contains(err.Error(), "secret") {
				t.Fatalf("Fetch() error %v, want one containing %q and no password", err, tt.err)
			}
		})
	}
}
