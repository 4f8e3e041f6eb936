package config

import (
	"strings"
	"testing"
	"time"
)

func TestRecordFailoverBudget(t *testing.T) {
	probed := []HealthCheck{{Type: "tcp"}}
	// The worked example of docs/modes.md: checks every 10 s, down after 3 failures, TTL 30 s.
	example := func(target time.Duration, backends ...Backend) *Record {
		r := &Record{Name: "www.example.org.", TTL: 30, Backends: backends}
		r.SetSettings(Settings{ScrapeInterval: 10 * time.Second, ScrapeTimeout: 5 * time.Second, FailoverTarget: target})
		return r
	}
	local := Backend{Address: "192.0.2.10"}.WithChecks(Checks{Fall: 3, HealthChecks: probed})
	sites := Options{Sites: SitesOptions{Site: "eu"}}
	tests := []struct {
		name     string
		rec      *Record
		opts     Options
		worst    time.Duration
		holds    bool
		dominant string // part of the dominant term's name
		text     string // part of the sentence
	}{
		{"worked example, 65 s target", example(65*time.Second, local), Options{}, 65 * time.Second, true,
			"detection", "within failover_target 1m5s"},
		{"worked example, 60 s target", example(60*time.Second, local), Options{}, 65 * time.Second, false,
			"detection", "over failover_target 1m0s by 5s: detection (fall 3 × scrape_interval 10s + timeout 5s) dominates; lower scrape_interval, fall or scrape_timeout"},
		{"no target", example(0, local), Options{}, 65 * time.Second, false, "detection", "worst case 1m5s"},
		{"backend timeout", example(time.Minute, Backend{Address: "192.0.2.10"}.WithChecks(Checks{Fall: 2, Timeout: time.Second, HealthChecks: probed})),
			Options{}, 51 * time.Second, true, "record_ttl", "fall 2 × scrape_interval 10s + timeout 1s"},
		{"ttl dominates", func() *Record { r := example(time.Minute, local); r.TTL = 300; return r }(), Options{},
			335 * time.Second, false, "record_ttl", "record_ttl dominates; lower record_ttl"},
		{"other site: detection and peer read", example(time.Minute, local, Backend{}.WithOrigin(Origin{Site: "us"})), sites,
			35*time.Second + 12*time.Second + 30*time.Second, false, "detection", "peer read (peer_interval 10s + peer_timeout 2s) 12s"},
		{"other site: split brain", example(time.Minute, local, Backend{}.WithOrigin(Origin{Site: "us"}).WithChecks(Checks{Fall: 1})), sites,
			40*time.Second + 30*time.Second, false, "silent site", "split_brain_threshold 30s + peer_interval 10s"},
		{"other site: heartbeats", example(2*time.Minute, local, Backend{}.WithOrigin(Origin{Site: "us"}).WithChecks(Checks{Fall: 1})),
			Options{Sites: SitesOptions{Site: "eu"}, Heartbeats: HeartbeatOptions{Global: &HeartbeatZone{Zone: "hb.example."}}},
			40*time.Second + 30*time.Second, true, "silent site", "healthy duration 30s + heartbeat_interval 10s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.rec.FailoverBudget(tt.opts)
			if b.Worst != tt.worst || b.Holds() != tt.holds || !strings.Contains(b.Dominant().Name, tt.dominant) || !strings.Contains(b.String(), tt.text) {
				t.Fatalf("worst %v holds %v dominant %q\n%s\nwant %v, %v, %q, %q", b.Worst, b.Holds(), b.Dominant().Name, b, tt.worst, tt.holds, tt.dominant, tt.text)
			}
		})
	}
	unprobed := example(time.Minute, local, Backend{Address: "192.0.2.11"}).FailoverBudget(Options{})
	if unprobed.Holds() || unprobed.Never == "" || !strings.Contains(unprobed.String(), "192.0.2.11 has no health check") {
		t.Fatalf("a backend without checks: %s", unprobed)
	}
}
