package main

import (
	"strings"
	"testing"
)

// TestCheckFailoverTarget: meridian check says, for every record with a failover_target,
// whether it holds; one that does not is a warning naming the dominant timer, and the check
// still passes.
func TestCheckFailoverTarget(t *testing.T) {
	dir := t.TempDir()
	zone := writeFile(t, dir, "zone.yml", `
defaults:
  scrape_interval: 10s
  scrape_timeout: 5s
  record_ttl: 30
records:
  ok.example.org.:
    failover_target: 65s
    backends: [{address: 10.0.0.1, fall: 3, healthchecks: [{type: tcp, params: {port: 80}}]}]
  tight.example.org.:
    failover_target: 60s
    backends: [{address: 10.0.0.2, fall: 3, healthchecks: [{type: tcp, params: {port: 80}}]}]
  none.example.org.:
    backends: [{address: 10.0.0.3}]
`)
	core := writeFile(t, dir, "Corefile", ".:53 {\n gslb {\n  zone example.org. "+zone+"\n }\n}\n")
	var out, errs strings.Builder
	if code := runCheck([]string{"-conf", core}, &out, &errs); code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errs.String())
	}
	for _, want := range []string{
		"ok.example.org. failover_target: worst case 1m5s (detection (fall 3 × scrape_interval 10s + timeout 5s) 35s + record_ttl 30s), within failover_target 1m5s",
		"OK",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
	want := "warning: " + zone + ":10:3: tight.example.org. failover_target: worst case 1m5s"
	if !strings.Contains(errs.String(), want) || !strings.Contains(errs.String(), "over failover_target 1m0s by 5s: detection") {
		t.Errorf("stderr lacks %q:\n%s", want, errs.String())
	}
	if strings.Contains(out.String()+errs.String(), "none.example.org.") {
		t.Errorf("a record without failover_target is reported:\n%s%s", out.String(), errs.String())
	}
}
