package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestLearned: each instance writes when it learned a backend's change; each reads the others',
// not its own, the latest of each; the fleet forgets them after learnedTTL.
func TestLearned(t *testing.T) {
	r := testutil.StartRedis(t)
	clients := make([]*Client, 3)
	for i := range clients {
		c, err := New(config.ClusterOptions{Enable: true, Addrs: []string{r.Addr}}, &testutil.Log{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		clients[i] = c
	}
	base := time.Unix(1_800_000_000, 0)
	clients[0].NoteLearned("www.example.org.|192.0.2.1|0", "down", base)
	clients[1].NoteLearned("www.example.org.|192.0.2.1|0", "up", base.Add(time.Second))
	clients[1].NoteLearned("www.example.org.|192.0.2.1|0", "down", base.Add(2*time.Second)) // its latest
	clients[2].NoteLearned("other|192.0.2.2|0", "down", base)

	got := clients[0].LearnedBy("www.example.org.|192.0.2.1|0")
	want := map[string]Learned{clients[1].ID(): {To: "down", At: base.Add(2 * time.Second)}}
	if len(got) != len(want) || got[clients[1].ID()].To != "down" || !got[clients[1].ID()].At.Equal(want[clients[1].ID()].At) {
		t.Errorf("LearnedBy = %v, want %v", got, want)
	}
	ttl := r.Client(t).TTL(context.Background(), clients[0].keys.learned("www.example.org.|192.0.2.1|0")).Val()
	if ttl <= 0 || ttl > learnedTTL {
		t.Errorf("the hash expires in %v, want within %v", ttl, learnedTTL)
	}
}
