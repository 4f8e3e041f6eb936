package main

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestQuickstartAnswersAsTheREADMEShows runs the quick start's own files (on a free port) and
// checks the answers the README prints.
func TestQuickstartAnswersAsTheREADMEShows(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	corefile, err := os.ReadFile(filepath.Join(root, "examples", "quickstart", "Corefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(corefile), ":1053") || !strings.Contains(string(corefile), "bind 127.0.0.1") || !strings.Contains(string(corefile), "examples/quickstart/") ||
		!strings.Contains(string(corefile), "api_listen_port 8053") {
		t.Fatal("the quick start no longer listens on 127.0.0.1:1053 (DNS) and 127.0.0.1:8053 (dashboard) as the README says")
	}
	records, err := os.ReadFile(filepath.Join(root, "examples", "quickstart", "example.test.yml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	apiPort := strconv.Itoa(testutil.FreePort(t))
	// The quick start's files, moved to a free port (the health check of its own port too).
	s := testutil.Start(t, dir, func(port int) string {
		p := strconv.Itoa(port)
		yaml := strings.ReplaceAll(string(records), "port: 1053", "port: "+p)
		if err := os.WriteFile(filepath.Join(dir, "example.test.yml"), []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		c := strings.ReplaceAll(string(corefile), ":1053", ":"+p)
		c = strings.ReplaceAll(c, "api_listen_port 8053", "api_listen_port "+apiPort)
		return strings.ReplaceAll(c, "examples/quickstart/", dir+"/")
	})
	// The dashboard the README points to.
	resp, err := http.Get("http://127.0.0.1:" + apiPort + "/ui/")
	if err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("dashboard: %s", resp.Status)
	}
	tests := []struct {
		name  string
		qtype uint16
		want  []string
	}{
		{"www.example.test", dns.TypeA, []string{"192.0.2.10"}},
		{"www.example.test", dns.TypeAAAA, []string{"2001:db8::10"}},
		{"api.example.test", dns.TypeA, []string{"192.0.2.20"}},
		{"api.example.test", dns.TypeA, []string{"198.51.100.20"}},
		{"api.example.test", dns.TypeA, []string{"203.0.113.20"}},
	}
	for _, tt := range tests {
		if got := addresses(s.Query(t, "udp", tt.name, tt.qtype)); !slices.Equal(got, tt.want) {
			t.Errorf("%s %s: %v, want %v", tt.name, dns.TypeToString[tt.qtype], got, tt.want)
		}
	}
	if got := addresses(s.Query(t, "udp", "foo.app.example.test", dns.TypeA)); len(got) != 1 || (got[0] != "192.0.2.40" && got[0] != "198.51.100.40") {
		t.Errorf("wildcard: %v", got)
	}
	if r := s.Query(t, "udp", "nope.example.test", dns.TypeA); r.Rcode != dns.RcodeNameError {
		t.Errorf("nope.example.test: %s, want NXDOMAIN", dns.RcodeToString[r.Rcode])
	}
	// The health-checked record: its primary's check hits a closed port, its secondary's the
	// server's own port, which the test rewrote along with the listener.
	testutil.Eventually(t, 5*time.Second, func() bool {
		return slices.Equal(addresses(s.Query(t, "udp", "status.example.test", dns.TypeA)), []string{"127.0.0.1"})
	}, "status.example.test did not fail over to 127.0.0.1:\n%s", s.Logs())
	var txt []string
	for _, rr := range s.Query(t, "udp", "status.example.test", dns.TypeTXT).Answer {
		txt = append(txt, rr.(*dns.TXT).Txt...)
	}
	want := []string{
		"Backend: 127.0.0.2 | Priority: 1 | Status: down | Enabled: true",
		"Backend: 127.0.0.1 | Priority: 2 | Status: up | Enabled: true",
	}
	if !slices.Equal(txt, want) {
		t.Errorf("status TXT %q, want %q", txt, want)
	}
}
