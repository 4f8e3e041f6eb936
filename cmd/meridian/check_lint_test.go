package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestCheckLintsTheTimers runs meridian check on a zone that goes against the practice guide's
// timers: each finding is a warning with its file, line, record and rule, and the check passes.
func TestCheckLintsTheTimers(t *testing.T) {
	dir := t.TempDir()
	zone := writeFile(t, dir, "zone.yml", `
records:
  www.example.org.:
    scrape_interval: 5s
    scrape_timeout: 2s
    record_ttl: 5
    failover_target: 30s
    drain_guard: {min_healthy: 2}
    backends:
      - {address: 10.0.0.1, local_interval: 5s, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.0.0.2, fall: 1, healthchecks: [{type: tcp, params: {port: 80}}]}
  fine.example.org.:
    backends: [{address: 10.0.0.3, local_interval: 2s, healthchecks: [{type: tcp, params: {port: 80}}]}]
`)
	core := writeFile(t, dir, "Corefile", ".:53 {\n gslb {\n  zone example.org. "+zone+"\n }\n}\n")
	out, err := exec.Command(testutil.Binary(t), "check", "-conf", core).CombinedOutput()
	if err != nil {
		t.Fatalf("meridian check: %v\n%s", err, out)
	}
	for _, want := range []string{
		"warning: " + zone + ":10:9: www.example.org.: backend 10.0.0.1: scrape_interval 5s is less than twice its local_interval 5s",
		"warning: " + zone + ":11:9: www.example.org.: backend 10.0.0.2: fall 1 takes it out of the answers on one failed probe",
		"warning: " + zone + ":3:3: www.example.org.: record_ttl 5s is below the 30s that many resolvers keep answers at least: through them the worst case is 47s, over failover_target 30s (ttl-floor)",
		"warning: " + zone + ":3:3: www.example.org.: drain_guard min_healthy 2 with 2 A backends",
		core + ": OK",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "fine.example.org.:") {
		t.Errorf("a record that follows the guide has findings:\n%s", out)
	}
}
