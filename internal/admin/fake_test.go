package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/admin/admintest"
	"github.com/meridian-gslb/meridian/internal/overlay"
)

// fakeProvider is a Provider with fixed content that counts its reloads.
type fakeProvider struct {
	mu          sync.Mutex
	zones       []Zone
	transitions []Transition
	ready       bool
	reloadErr   error
	reloads     int
	explained   []Query
	// history is what History returns, its Now and Start set from the request's now.
	history []BackendHistory
}

func (p *fakeProvider) Status() []Zone {
	p.mu.Lock()
	defer p.mu.Unlock()
	// A copy: the server fills in overrides.
	var out []Zone
	data, _ := json.Marshal(p.zones)
	_ = json.Unmarshal(data, &out)
	return out
}

func (p *fakeProvider) Transitions(limit int) []Transition {
	return p.transitions[:min(limit, len(p.transitions))]
}

func (p *fakeProvider) History(now time.Time) History {
	p.mu.Lock()
	defer p.mu.Unlock()
	return History{BucketSeconds: 30, Start: now.Truncate(30 * time.Second).Add(-time.Hour + 30*time.Second), Now: now,
		Backends: slices.Clone(p.history)}
}

func (p *fakeProvider) Explain(_ context.Context, q Query) (Explanation, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.explained = append(p.explained, q)
	if strings.HasPrefix(q.Name, "broken.") {
		return Explanation{}, errors.New("engine failure")
	}
	return Explanation{
		Zone: p.zones[0].Name, Record: q.Name, Rcode: "NOERROR",
		Answer: []string{q.Name + "\t30\tIN\tA\t192.0.2.10"},
		Steps:  []Step{{Stage: "policy", Text: "failover picks priority 1", Backends: []string{q.Name + "|192.0.2.10|0"}}},
	}, nil
}

func (p *fakeProvider) Reload() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reloads++
	return p.reloadErr
}

func (p *fakeProvider) Ready() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ready
}

var checkTime = time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)

// exampleProvider serves example.org. with two records over three sites.
func exampleProvider() *fakeProvider {
	be := func(rec, addr string, port int, loc string, state State, tags ...string) Backend {
		return Backend{
			Key: fmt.Sprintf("%s|%s|%d", rec, addr, port), Address: addr, Port: port, Priority: 1, Weight: 1,
			Location: loc, Tags: tags, Enabled: true, Healthy: state == StateUp, State: state,
			LastCheck: checkTime, LastOK: state == StateUp, Latency: Millis(1500 * time.Microsecond), LastChange: checkTime.Add(-time.Hour),
		}
	}
	return &fakeProvider{
		ready: true,
		zones: []Zone{{Name: "example.org.", Records: []Record{
			{Name: "api.example.org.", Mode: "roundrobin", Fallback: "fail-open", Healthy: 0, Backends: []Backend{
				be("api.example.org.", "10.1.0.5", 443, "dc-eu", StateDown, "prod"),
			}},
			{Name: "www.example.org.", Mode: "failover", Fallback: "fail-open", Healthy: 2, Backends: []Backend{
				be("www.example.org.", "10.1.0.1", 0, "dc-eu", StateUp, "prod", "ssd"),
				be("www.example.org.", "10.1.0.2", 0, "dc-eu", StateUp, "hdd"),
				be("www.example.org.", "10.2.0.1", 0, "dc-us", StateUnknown, "test"),
				be("www.example.org.", "2001:db8::1", 0, "dc-us", StateUp),
			}},
		}}},
		transitions: []Transition{
			{Time: checkTime, Record: "api.example.org.", Backend: "api.example.org.|10.1.0.5|443", From: StateUp, To: StateDown, Reason: "connection refused"},
			{Time: checkTime.Add(-time.Hour), Record: "www.example.org.", Backend: "www.example.org.|10.1.0.1|0", From: StateUnknown, To: StateUp},
		},
	}
}

type nopLog struct{}

func (nopLog) Infof(string, ...any)  {}
func (nopLog) Errorf(string, ...any) {}

// startServer serves cfg on a free loopback port, with store (a memory store when nil), and
// registers p for its zones.
func startServer(t *testing.T, cfg Config, store overlay.Store, p *fakeProvider) (*Server, string) {
	t.Helper()
	if store == nil {
		store = overlay.NewMemory(overlay.SystemClock{})
	}
	s, err := Listen("127.0.0.1:0", cfg, store, nopLog{})
	if err != nil {
		t.Fatal(err)
	}
	s.Serve()
	t.Cleanup(func() { s.Close() })
	if p != nil {
		var zones []string
		for _, z := range p.zones {
			zones = append(zones, z.Name)
		}
		s.Register(zones, p)
	}
	scheme := "http"
	if cfg.TLSCert != "" {
		scheme = "https"
	}
	return s, scheme + "://" + s.Addr().String()
}

// call sends a request with the default client and returns the status and the body.
func call(t *testing.T, method, url, body string, header ...string) (int, string) {
	t.Helper()
	return admintest.Call(t, http.DefaultClient, method, url, body, header...)
}

// decode is admintest.Decode, shorter.
func decode[T any](t *testing.T, body string) T {
	t.Helper()
	return admintest.Decode[T](t, body)
}
