package cluster

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// lines is a Logger that keeps its lines in order, each with its level.
type lines []string

func (l *lines) Infof(format string, args ...any) {
	*l = append(*l, "INFO "+fmt.Sprintf(format, args...))
}

func (l *lines) Warningf(format string, args ...any) {
	*l = append(*l, "WARNING "+fmt.Sprintf(format, args...))
}

func TestRedisLogForwardsAndLimits(t *testing.T) {
	dial := "redis: connection pool: failed to dial after %d attempts: %v"
	hook := "redis: connection pool: conn[%d] rejected by hook, returning to pool\n"
	steps := []struct {
		after  time.Duration // since the previous step
		format string
		args   []any
		want   string // the line logged, or "" for none
	}{
		{0, dial, []any{1, "connection refused"}, "WARNING go-redis: redis: connection pool: failed to dial after 1 attempts: connection refused"},
		{time.Second, dial, []any{1, "connection refused"}, ""},
		{time.Second, hook, []any{7}, "WARNING go-redis: redis: connection pool: conn[7] rejected by hook, returning to pool"},
		{57 * time.Second, dial, []any{1, "connection refused"}, ""},
		{time.Second, dial, []any{2, "i/o timeout"}, "WARNING go-redis: redis: connection pool: failed to dial after 2 attempts: i/o timeout (and 2 more like it since the last one logged)"},
		{time.Minute, dial, []any{1, "connection refused"}, "WARNING go-redis: redis: connection pool: failed to dial after 1 attempts: connection refused"},
	}
	now := time.Unix(1_800_000_000, 0)
	l := newRedisLog(time.Minute, func() time.Time { return now })
	l.Printf(context.Background(), dial, 1, "before there is a logger")
	var got lines
	l.setOutput(&got)
	for i, s := range steps {
		now = now.Add(s.after)
		before := len(got)
		l.Printf(context.Background(), s.format, s.args...)
		var logged string
		if len(got) > before {
			logged = got[len(got)-1]
		}
		if len(got) > before+1 || logged != s.want {
			t.Fatalf("step %d: logged %q, want %q", i, got[before:], s.want)
		}
	}
}

func TestGoRedisLogsToTheClientsLogger(t *testing.T) {
	// A port nothing listens on: every dial fails, and go-redis logs the failure.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	// The process-wide limiter may hold a dial failure of an earlier test.
	redisLogger.mu.Lock()
	clear(redisLogger.kinds)
	redisLogger.mu.Unlock()

	log := &testutil.Log{}
	c, err := New(config.ClusterOptions{Enable: true, Addrs: []string{addr}}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 3 {
		if err := c.rdb.Ping(context.Background()).Err(); err == nil {
			t.Fatalf("PING of %s succeeded", addr)
		}
	}
	if n := log.Count("WARNING go-redis: redis: connection pool: failed to dial"); n != 1 {
		t.Fatalf("%d go-redis dial failures logged for 3 failed pings, want 1 (rate-limited):\n%s", n, log)
	}
}
