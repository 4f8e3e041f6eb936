package main

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestFailoverFollowsHealthChecks serves a failover record whose backends are TCP listeners
// on loopback. Closing the primary's listener moves the answer to the secondary within
// fall x interval + timeout; reopening it moves the answer back after rise successes.
func TestFailoverFollowsHealthChecks(t *testing.T) {
	t.Parallel()
	primary, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	primaryAddr := primary.Addr().String()
	secondary, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	defer secondary.Close()
	for _, l := range []net.Listener{primary, secondary} {
		go acceptAndClose(l)
	}
	const (
		interval = 200 * time.Millisecond
		timeout  = 100 * time.Millisecond
		rise     = 2
		fall     = 2
	)
	yaml := fmt.Sprintf(`
records:
  app.example.org.:
    mode: failover
    scrape_interval: %s
    scrape_timeout: %s
    backends:
      - address: 127.0.0.1
        priority: 1
        rise: %d
        fall: %d
        healthchecks: [{type: tcp, params: {port: %d}}]
      - address: 127.0.0.2
        priority: 2
        healthchecks: [{type: tcp, params: {port: %d}}]
`, interval, timeout, rise, fall, primary.Addr().(*net.TCPAddr).Port, secondary.Addr().(*net.TCPAddr).Port)
	s := serveZone(t, yaml, "")
	answer := func() []string { return addresses(s.Query(t, "udp", "app.example.org", dns.TypeA)) }
	is := func(want string) func() bool {
		return func() bool { return slices.Equal(answer(), []string{want}) }
	}
	testutil.Eventually(t, 5*time.Second, is("127.0.0.1"), "the healthy primary is not answered: %v", answer())

	primary.Close()
	down := time.Now()
	// The jitter of the schedule (±5% of the interval) and the time to notice count as slack.
	budget := fall*interval + timeout + interval
	testutil.Eventually(t, 5*time.Second, is("127.0.0.2"), "the answer did not fail over: %v\n%s", answer(), s.Logs)
	took := time.Since(down)
	t.Logf("failover after %s (budget %s)", took, budget)
	if took > budget {
		t.Errorf("failover took %s, budget fall x interval + timeout (+ one interval of slack) = %s", took, budget)
	}

	// A Corefile reload keeps the health state: no query sees the backends as unknown (which
	// would answer both through fail-open) while the new instance starts.
	if err := s.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(s.Logs(), "Reloading complete") {
		if got := answer(); !slices.Equal(got, []string{"127.0.0.2"}) {
			t.Fatalf("during a Corefile reload the answer was %v, want the healthy secondary only", got)
		}
	}
	for range 20 {
		if got := answer(); !slices.Equal(got, []string{"127.0.0.2"}) {
			t.Fatalf("after a Corefile reload the answer was %v, want the healthy secondary only", got)
		}
	}

	reopened, err := net.Listen("tcp", primaryAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	go acceptAndClose(reopened)
	testutil.Eventually(t, 5*time.Second, is("127.0.0.1"), "the answer did not come back to the primary: %v", answer())
}

func acceptAndClose(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}
