package engine

import (
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/cluster"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestClusterFleetLearned: what one instance learned reaches another's timeline through Redis,
// for the same change only: the same status, within a minute of it.
func TestClusterFleetLearned(t *testing.T) {
	r := testutil.StartRedis(t)
	var fleet [2]clusterFleet
	for i := range fleet {
		c, err := cluster.New(config.ClusterOptions{Enable: true, Addrs: []string{r.Addr}}, &testutil.Log{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		fleet[i] = clusterFleet{c}
	}
	changed := time.Now()
	const key = "www.example.org.|192.0.2.1|0"
	fleet[0].NoteLearned(health.Transition{Key: key, To: health.Down, Time: changed.Add(20 * time.Millisecond)})
	tests := []struct {
		name    string
		to      health.Status
		changed time.Time
		want    int
	}{
		{"the same change", health.Down, changed, 1},
		{"another status", health.Up, changed, 0},
		{"a change two minutes later", health.Down, changed.Add(2 * time.Minute), 0},
	}
	for _, tt := range tests {
		got := fleet[1].LearnedBy(key, tt.to, tt.changed)
		if len(got) != tt.want || tt.want == 1 && got[0].By != "instance "+fleet[0].c.ID() {
			t.Errorf("%s: %+v, want %d from %s", tt.name, got, tt.want, fleet[0].c.ID())
		}
	}
	if got := fleet[0].LearnedBy(key, health.Down, changed); len(got) != 0 {
		t.Errorf("an instance learns from itself: %+v", got)
	}
}
