package testutil

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestRedisKillAndRestart(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	primary := StartRedis(t)
	replica := StartReplica(t, primary)
	sentinel := StartSentinel(t, "main", primary, replica)
	if got := sentinel.Failover(t, "main"); got != replica.Addr {
		t.Fatalf("the sentinel promoted %s, want the replica %s", got, replica.Addr)
	}
}

func TestRedisCluster(t *testing.T) {
	t.Parallel()
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

func TestPerCycle(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms ...int) []time.Time {
		var out []time.Time
		for _, m := range ms {
			out = append(out, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return out
	}
	tests := []struct {
		times []time.Time
		want  []int
	}{
		{at(0, 5, 1003, 1990, 2010), []int{2, 1, 2}},
		{at(0, 2995), []int{1, 0, 0, 1}},
		{nil, nil},
	}
	for _, tt := range tests {
		if got := PerCycle(tt.times, time.Second); !slices.Equal(got, tt.want) {
			t.Errorf("PerCycle(%v) = %v, want %v", tt.times, got, tt.want)
		}
	}
}
