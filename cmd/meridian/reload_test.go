package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// scrape returns the value of an unlabelled metric from a Prometheus text endpoint.
func scrape(t *testing.T, url, metric string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), metric+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("%s has no %s", url, metric)
	return 0
}

// TestCorefileReloadLeaksNothing reloads the whole server ten times with SIGUSR1 while it is
// queried, and checks that no query fails and that goroutines and file descriptors stay flat.
func TestCorefileReloadLeaksNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	zone := filepath.Join(dir, "zone.yml")
	if err := os.WriteFile(zone, []byte("records:\n  www.example.org.:\n    backends: [{address: 10.0.0.1}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	metricsPort := testutil.FreePort(t)
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	s := testutil.Start(t, dir, func(port int) string {
		return fmt.Sprintf(".:%d {\n bind 127.0.0.1\n prometheus 127.0.0.1:%d\n gslb {\n  zone example.org. %s\n }\n}\n", port, metricsPort, zone)
	})
	query := func() {
		t.Helper()
		r := s.Query(t, "udp", "www.example.org", dns.TypeA)
		if len(r.Answer) != 1 {
			t.Fatalf("query during reloads answered %v", r)
		}
	}
	reload := func(n int) {
		t.Helper()
		if err := s.Signal(syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, func() bool {
			query()
			return strings.Count(s.Logs(), "Reloading complete") >= n
		}, "reload %d did not complete:\n%s", n, s.Logs())
	}
	// A first reload settles what every later one reuses (listeners handed over, caches).
	reload(1)
	goroutines := scrape(t, metrics, "go_goroutines")
	fds := scrape(t, metrics, "process_open_fds")
	for i := 2; i <= 11; i++ {
		reload(i)
	}
	var g, f float64
	testutil.Eventually(t, 10*time.Second, func() bool {
		g, f = scrape(t, metrics, "go_goroutines"), scrape(t, metrics, "process_open_fds")
		return g <= goroutines+2 && f <= fds+1
	}, "after 10 reloads: goroutines %v -> %v, open fds %v -> %v", goroutines, g, fds, f)
}
