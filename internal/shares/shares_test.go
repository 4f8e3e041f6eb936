package shares

import (
	"math"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

const zone = `records:
  www.example.org.:
    mode: weighted
    backends:
      - {address: 192.0.2.1, weight: 3}
      - {address: 192.0.2.2, weight: 1}
      - {address: "2001:db8::1"}
      - {address: 192.0.2.3, enable: false}
  quiet.example.org.:
    backends: [{address: 192.0.2.9}]
`

// TestShares: the traffic sampled each bucket becomes each backend's share of its family's,
// per bucket and over the last five minutes, beside the share its weight configures; by
// country where the answers knew it; records without traffic are left out.
func TestShares(t *testing.T) {
	z, err := config.ParseZone("zone.yml", []byte(zone), "example.org", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Build([]*config.Zone{z}, health.NewManager(health.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	www := snap.Records()[1]
	if www.Name() != "www.example.org." {
		www = snap.Records()[0]
	}
	k := New()
	k.Configure(func() *catalog.Snapshot { return snap })
	t0 := time.Unix(1_800_000_000, 0)
	count := func(i, n int, ttl uint32, country string) {
		for range n {
			www.CountSelected(www.Backends[i], ttl, country)
		}
	}
	count(0, 6, 30, "DE") // the first minute: 180 s against 60 s, 3:1
	count(1, 2, 30, "US")
	count(2, 1, 30, "")
	k.Sample(t0)
	count(1, 2, 60, "US") // the next minute: only the second, with a longer TTL
	k.Sample(t0.Add(Bucket))

	got := k.Shares(t0.Add(Bucket))
	if len(got) != 1 || got[0].Name != "www.example.org." {
		t.Fatalf("records %+v, want www only", got)
	}
	r := got[0]
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	want := []struct {
		configured, first, second, actual float64
	}{
		{0.75, 0.75, 0, 180.0 / 360},
		{0.25, 0.25, 1, 180.0 / 360},
		{1, 1, -1, 1},
		{0, 0, 0, 0}, // disabled: none of its family's traffic
	}
	for i, w := range want {
		s := r.Backends[i]
		n := len(s.Series)
		if !near(s.Configured, w.configured) || !near(s.Series[n-2], w.first) || !near(s.Series[n-1], w.second) {
			t.Errorf("%s: configured %v, last two buckets %v %v; want %v, %v %v", s.Backend, s.Configured, s.Series[n-2], s.Series[n-1], w.configured, w.first, w.second)
		}
		if !near(s.Actual, w.actual) {
			t.Errorf("%s: actual %v, want %v", s.Backend, s.Actual, w.actual)
		}
	}
	// The largest first, ties by code.
	if len(r.Countries) != 2 || r.Countries[0].Country != "DE" || r.Countries[0].Backends[www.Backends[0].Key()] != 180 ||
		r.Countries[1].Country != "US" || r.Countries[1].Seconds != 180 {
		t.Errorf("countries %+v", r.Countries)
	}
}
