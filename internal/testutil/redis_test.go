package testutil

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestRedisKillAndRestart(t *testing.T) {
	r := StartRedis(t)
	ctx := context.Background()
	c := r.Client(t)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	r.Kill()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("a killed server answers PING")
	}
	r.Restart(t)
	Eventually(t, 2*time.Second, func() bool { return c.Ping(ctx).Err() == nil }, "the restarted server does not answer")
	if n, err := c.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("the restarted server kept data (%d, %v): persistence must be off", n, err)
	}
}

func TestSentinelFollowsAFailover(t *testing.T) {
	primary := StartRedis(t)
	replica := StartReplica(t, primary)
	sentinel := StartSentinel(t, "main", primary, replica)
	if got := sentinel.Failover(t, "main"); got != replica.Addr {
		t.Fatalf("the sentinel promoted %s, want the replica %s", got, replica.Addr)
	}
}

func TestRedisCluster(t *testing.T) {
	nodes := StartRedisCluster(t, 3)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].Addr}})
	defer c.Close()
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c", "d"} { // keys of different slots and nodes
		if err := c.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatalf("set %s: %v", k, err)
		}
	}
}
