package probe

import (
	"context"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestMySQLProbe runs the mysql probe against a real MariaDB server (one for all subtests:
// starting one takes a few seconds).
func TestMySQLProbe(t *testing.T) {
	addr, user, password := testutil.MariaDB(t)
	host, portStr, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portStr)
	// The backend is the server itself: host and port come from the target.
	target := Target{Host: host, IP: netip.MustParseAddr(host), Port: uint16(port)}

	closedPort := int(closedPort(t).Port)

	tests := []struct {
		name    string
		params  map[string]any
		timeout time.Duration
		ok      bool
		reason  string // exact, or a prefix when it ends in "..."
	}{
		{name: "select 1", ok: true, reason: `mysql: result "1"`},
		{name: "expected result matches", params: map[string]any{"query": "SELECT 'ready'", "expected_result": "^ready$"}, ok: true, reason: `mysql: result "ready"`},
		{name: "expected result mismatch", params: map[string]any{"query": "SELECT 0", "expected_result": "1"}, reason: `mysql: result "0" does not match "1"`},
		{name: "database", params: map[string]any{"database": testutil.MariaDBDatabase, "query": "SELECT DATABASE()"}, ok: true, reason: `mysql: result "meridian"`},
		{name: "first column of several", params: map[string]any{"query": "SELECT 7, 'x', NULL"}, ok: true, reason: `mysql: result "7"`},
		{name: "null", params: map[string]any{"query": "SELECT NULL", "expected_result": "^$"}, ok: true, reason: `mysql: result ""`},
		{name: "no rows", params: map[string]any{"query": "SELECT 1 FROM DUAL WHERE 1 = 0"}, reason: "mysql: query returned no rows"},
		{name: "bad password", params: map[string]any{"password": "wrong"}, reason: "mysql: Error 1045: Access denied for user 'meridian'@'127.0.0.1'..."},
		{name: "unknown user", params: map[string]any{"user": "nobody"}, reason: "mysql: Error 1045: Access denied for user 'nobody'..."},
		{name: "unknown database", params: map[string]any{"database": "nope"}, reason: "mysql: Error 1049: Unknown database 'nope'"},
		{name: "query error", params: map[string]any{"database": testutil.MariaDBDatabase, "query": "SELECT * FROM missing"}, reason: "mysql: Error 1146: Table 'meridian.missing' doesn't exist"},
		{name: "syntax error", params: map[string]any{"query": "SELEKT 1"}, reason: "mysql: Error 1064: You have an error in your SQL syntax..."},
		{name: "wrong port", params: map[string]any{"port": closedPort}, reason: "mysql: connect: connection refused"},
		{name: "host param", params: map[string]any{"host": "127.0.0.1", "port": port}, ok: true, reason: `mysql: result "1"`},
		{name: "timeout", params: map[string]any{"query": "SELECT SLEEP(10)"}, timeout: 300 * time.Millisecond, reason: "timeout after 300ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			params := map[string]any{"user": user, "password": password}
			for k, v := range tc.params {
				params[k] = v
			}
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 5 * time.Second
			}
			c, err := extCompile(t, "mysql", params, target, timeout)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Prober.(io.Closer).Close()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			start := time.Now()
			r := c.Prober.Probe(ctx)
			checkResult(t, r, time.Since(start), timeout, tc.ok, tc.reason)
		})
	}

	t.Run("connection reused", func(t *testing.T) {
		params := map[string]any{"user": user, "password": password, "query": "SELECT CONNECTION_ID()"}
		c, err := extCompile(t, "mysql", params, target, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		first := c.Prober.Probe(context.Background())
		second := c.Prober.Probe(context.Background())
		if !first.OK || first.Reason != second.Reason {
			t.Errorf("two probes used different connections: %+v, %+v", first, second)
		}
		if err := c.Prober.(io.Closer).Close(); err != nil {
			t.Fatal(err)
		}
		if r := c.Prober.Probe(context.Background()); r.OK {
			t.Errorf("probe after Close: got %+v", r)
		}
	})

	t.Run("concurrent probes", func(t *testing.T) {
		c, err := extCompile(t, "mysql", map[string]any{"user": user, "password": password}, target, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Prober.(io.Closer).Close()
		done := make(chan Result)
		for range 8 {
			go func() { done <- c.Prober.Probe(context.Background()) }()
		}
		for range 8 {
			if r := <-done; !r.OK {
				t.Errorf("got %+v", r)
			}
		}
	})

	t.Run("recovers after a timeout", func(t *testing.T) {
		params := map[string]any{"user": user, "password": password, "query": "SELECT SLEEP(1)", "expected_result": "^0$"}
		c, err := extCompile(t, "mysql", params, target, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Prober.(io.Closer).Close()
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if r := c.Prober.Probe(ctx); r.OK || r.Reason != "timeout after 5s" {
			t.Fatalf("got %+v, want a timeout", r)
		}
		if r := c.Prober.Probe(context.Background()); !r.OK {
			t.Errorf("probe after a timeout: got %+v", r)
		}
	})
}

// TestMySQLLoadErrors needs no server: parameters are checked at load.
func TestMySQLLoadErrors(t *testing.T) {
	target := Target{Host: "192.0.2.1", IP: netip.MustParseAddr("192.0.2.1")}
	tests := []struct {
		name   string
		params map[string]any
		target Target
		want   string
	}{
		{"bad regexp", map[string]any{"expected_result": "("}, target, "params.expected_result: invalid regular expression"},
		{"empty query", map[string]any{"query": "  "}, target, "params.query: must not be empty"},
		{"bad port", map[string]any{"port": 70000}, target, "params.port: must be an integer"},
		{"no host", nil, Target{}, "params.host: required"},
		{"unknown param", map[string]any{"username": "x"}, target, "params.username: unknown parameter"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := extCompile(t, "mysql", tc.params, tc.target, time.Second)
			if err == nil {
				c.Prober.(io.Closer).Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestMySQLDefaultPort checks that a backend without a port is probed on 3306.
func TestMySQLDefaultPort(t *testing.T) {
	c, err := extCompile(t, "mysql", nil, Target{Host: "192.0.2.1"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Prober.(io.Closer).Close()
	m := c.Prober.(*mysqlProbe)
	if m.addr != "192.0.2.1:3306" || m.query != "SELECT 1" {
		t.Errorf("unexpected check %+v, key %q", m, c.Key)
	}
}
