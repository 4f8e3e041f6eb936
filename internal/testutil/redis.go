package testutil

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisStartTimeout bounds one start of a Redis process, until it answers PING.
const redisStartTimeout = 10 * time.Second

// Redis is a redis-server (or a Sentinel) a test started on a free 127.0.0.1 port, without
// persistence, in a temporary directory. It is stopped, by its PID, when the test ends.
type Redis struct {
	// Addr is the server's address, 127.0.0.1:port.
	Addr string
	// Port is the server's port.
	Port int
	args []string // the command line after the binary, without the port
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// StartRedis starts a redis-server for the test, with extra arguments appended to its command
// line (such as "--replicaof", "127.0.0.1", "6380"). It needs Debian's redis-server package;
// when redis-server is missing the test is skipped. A start takes a few milliseconds.
func StartRedis(t testing.TB, extra ...string) *Redis {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}, extra...)
	return startRedis(t, dir, args, nil)
}

// StartReplica starts a redis-server replicating primary, and waits until the replication
// link is up.
func StartReplica(t testing.TB, primary *Redis) *Redis {
	t.Helper()
	r := StartRedis(t, "--replicaof", "127.0.0.1", strconv.Itoa(primary.Port))
	c := r.Client(t)
	Eventually(t, redisStartTimeout, func() bool {
		info, err := c.Info(context.Background(), "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	}, "the replica at %s did not connect to its primary %s", r.Addr, primary.Addr)
	return r
}

// StartSentinel starts a Redis Sentinel monitoring primary under the name master, with a
// quorum of one and a down-after of one second, and waits until it knows the primary's
// replicas (when replicas are given).
func StartSentinel(t testing.TB, master string, primary *Redis, replicas ...*Redis) *Redis {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	r := startRedis(t, dir, []string{conf, "--sentinel"}, func(port int) error {
		// Sentinel rewrites its configuration file: it needs one of its own, writable.
		return os.WriteFile(conf, fmt.Appendf(nil, "port %d\nbind 127.0.0.1\ndir %s\n"+
			"sentinel monitor %s 127.0.0.1 %d 1\n"+
			"sentinel down-after-milliseconds %s 1000\n"+
			"sentinel failover-timeout %s 5000\n",
			port, dir, master, primary.Port, master, master), 0o644)
	})
	c := redis.NewSentinelClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { c.Close() })
	Eventually(t, redisStartTimeout, func() bool {
		known, err := c.Replicas(context.Background(), master).Result()
		ready := 0
		for _, k := range known {
			// A replica it has heard from: a failover may promote it.
			if k["flags"] == "slave" && k["role-reported"] == "slave" && k["master-link-status"] == "ok" {
				ready++
			}
		}
		return err == nil && ready >= len(replicas)
	}, "sentinel at %s did not discover the %d replicas of %s", r.Addr, len(replicas), master)
	return r
}

// Failover makes the Sentinel at r promote a replica of master, and waits until it names the
// new primary, whose address it returns.
func (r *Redis) Failover(t testing.TB, master string) string {
	t.Helper()
	c := redis.NewSentinelClient(&redis.Options{Addr: r.Addr})
	defer c.Close()
	ctx := context.Background()
	old, err := c.GetMasterAddrByName(ctx, master).Result()
	if err != nil {
		t.Fatalf("sentinel: the primary of %s: %v", master, err)
	}
	if err := c.Failover(ctx, master).Err(); err != nil {
		t.Fatalf("sentinel failover %s: %v", master, err)
	}
	var now []string
	Eventually(t, redisStartTimeout, func() bool {
		now, err = c.GetMasterAddrByName(ctx, master).Result()
		return err == nil && now[1] != old[1]
	}, "the sentinel did not promote a replica of %s", master)
	return net.JoinHostPort(now[0], now[1])
}

// StartRedisCluster starts n redis-servers in cluster mode, creates a Redis Cluster of them (no
// replicas, the slots spread over all), and waits until every node reports it ok.
func StartRedisCluster(t testing.TB, n int) []*Redis {
	t.Helper()
	nodes := make([]*Redis, n)
	addrs := make([]string, n)
	for i := range nodes {
		dir := t.TempDir()
		bus := FreePort(t)
		nodes[i] = startRedis(t, dir, []string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir,
			"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			"--cluster-node-timeout", "1000", "--cluster-port", strconv.Itoa(bus)}, nil)
		addrs[i] = nodes[i].Addr
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, node := range nodes {
		c := node.Client(t)
		Eventually(t, redisStartTimeout, func() bool {
			info, err := c.ClusterInfo(context.Background()).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok")
		}, "the Redis Cluster node at %s is not ok", node.Addr)
	}
	return nodes
}

// startRedis starts redis-server with args and a free port; prepare, when set, runs first with
// the port. It retries with another port when the server cannot start (the port was taken).
func startRedis(t testing.TB, dir string, args []string, prepare func(port int) error) *Redis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (Debian package redis-server)")
	}
	var lastErr error
	for range 3 {
		r := &Redis{Port: FreePort(t), args: args, dir: dir}
		r.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Port))
		if prepare != nil {
			if err := prepare(r.Port); err != nil {
				t.Fatal(err)
			}
		}
		if lastErr = r.start(); lastErr == nil {
			t.Cleanup(r.Stop)
			return r
		}
	}
	t.Fatalf("redis-server did not start: %v", lastErr)
	return nil
}

// start launches the process on r.Port and waits until it answers PING.
func (r *Redis) start() error {
	logFile := filepath.Join(r.dir, fmt.Sprintf("redis-%d.log", r.Port))
	args := append(append([]string(nil), r.args...), "--port", strconv.Itoa(r.Port), "--logfile", logFile)
	r.cmd = exec.Command("redis-server", args...)
	if err := r.cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	r.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(r.cmd, r.done)
	c := redis.NewClient(&redis.Options{Addr: r.Addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(redisStartTimeout)
	for {
		select {
		case <-r.done:
			return fmt.Errorf("redis-server on port %d exited: %s", r.Port, mariadbLogTail(logFile))
		default:
		}
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			r.Kill()
			return fmt.Errorf("redis-server on port %d not ready after %s (%v): %s", r.Port, redisStartTimeout, err, mariadbLogTail(logFile))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Client returns a client of the server, closed when the test ends. It does not retry: a
// command to a stopped server fails at once.
func (r *Redis) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { c.Close() })
	return c
}

// Kill ends the server at once (SIGKILL), as a crash would, and waits for it.
func (r *Redis) Kill() { r.signal(syscall.SIGKILL) }

// Stop ends the server (SIGTERM, then SIGKILL after five seconds) and waits for it.
func (r *Redis) Stop() { r.signal(syscall.SIGTERM) }

func (r *Redis) signal(sig syscall.Signal) {
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Signal(sig)
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

// Restart starts the stopped server again, on the same port and with the same arguments.
func (r *Redis) Restart(t testing.TB) {
	t.Helper()
	if err := r.start(); err != nil {
		t.Fatalf("restarting redis-server: %v", err)
	}
}

// PerCycle groups event times (sorted) into cycles of interval, counted from the first: events
// of one cycle happen about together (a fleet's probes at their phase), a cycle apart from the
// next cycle's. It returns the count of each cycle, in order, 0 for a cycle without events.
func PerCycle(times []time.Time, interval time.Duration) []int {
	var counts []int
	for _, at := range times {
		n := int((at.Sub(times[0]) + interval/2) / interval)
		for len(counts) <= n {
			counts = append(counts, 0)
		}
		counts[n]++
	}
	return counts
}
