package lint

import (
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
)

func TestRecordFindings(t *testing.T) {
	tests := []struct {
		name, record string
		want         []string // one substring per finding, in order; none for no finding
	}{
		{"a record that follows the guide", `
    scrape_interval: 10s
    record_ttl: 30
    failover_target: 2m
    drain_guard: {min_healthy: 1}
    backends:
      - {address: 192.0.2.1, local_interval: 5s, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 192.0.2.2, healthchecks: [{type: tcp, params: {port: 80}}]}
`, nil},
		{"the site's check as fast as the local one", `
    scrape_interval: 5s
    backends:
      - {address: 192.0.2.1, local_interval: 5s, healthchecks: [{type: tcp, params: {port: 80}}]}
`, []string{"192.0.2.1: scrape_interval 5s is less than twice its local_interval 5s (local-interval)"}},
		{"one failed probe", `
    backends:
      - {address: 192.0.2.1, fall: 1, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 192.0.2.2, healthchecks: [{type: tcp, params: {port: 80}}]}
`, []string{"192.0.2.1: fall 1 takes it out (fall-one)"}},
		{"a TTL under the resolvers' floor that the target needs", `
    scrape_interval: 5s
    scrape_timeout: 2s
    record_ttl: 5
    failover_target: 30s
    backends:
      - {address: 192.0.2.1, healthchecks: [{type: tcp, params: {port: 80}}]}
`, []string{"record_ttl 5s is below the 30s that many resolvers keep answers at least: through them the worst case is 47s, over failover_target 30s (ttl-floor)"}},
		{"a low TTL with room to spare", `
    scrape_interval: 5s
    scrape_timeout: 2s
    record_ttl: 5
    failover_target: 2m
    backends:
      - {address: 192.0.2.1, healthchecks: [{type: tcp, params: {port: 80}}]}
`, nil},
		{"an hour's TTL on a record that fails over", `
    record_ttl: 3600
    backends:
      - {address: 192.0.2.1, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 192.0.2.2, healthchecks: [{type: tcp, params: {port: 80}}]}
`, []string{"record_ttl 1h0m0s: a resolver keeps a dead site's answer (long-ttl)"}},
		{"an hour's TTL without checks", `
    record_ttl: 3600
    backends: [{address: 192.0.2.1}, {address: 192.0.2.2}]
`, nil},
		{"a guard no drain passes", `
    drain_guard: {min_healthy: 2}
    backends: [{address: 192.0.2.1}, {address: 192.0.2.2}, {address: 2001:db8::1}, {address: 2001:db8::2}, {address: 2001:db8::3}]
`, []string{"drain_guard min_healthy 2 with 2 A backends: no drain of them can pass without force (drain-guard)"}},
	}
	for _, tt := range tests {
		z, err := config.ParseZone("zone.yml", []byte("records:\n  www.example.org.:"+tt.record), "example.org", nil, 1)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got := Zones([]*config.Zone{z}, config.DefaultOptions())
		if len(got) != len(tt.want) {
			t.Errorf("%s: %d findings, want %d: %v", tt.name, len(got), len(tt.want), got)
			continue
		}
		for i, f := range got {
			text := f.String()
			parts := strings.SplitN(tt.want[i], " (", 2)
			if !strings.Contains(text, parts[0]) || !strings.HasSuffix(text, "("+parts[1]) || !strings.HasPrefix(text, "zone.yml:") {
				t.Errorf("%s: finding %q, want one with %q", tt.name, text, tt.want[i])
			}
		}
	}
}
