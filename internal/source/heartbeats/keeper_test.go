package heartbeats

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/source"
)

// recorder is a Reporter that keeps the last verdict of each key.
type recorder map[string]health.Status

func (r recorder) Report(key string, st health.Status, _ string) bool { r[key] = st; return true }

// TestVerdicts judges other sites' backends from the heartbeats read: a fresh one lists what
// is up (others are down), a stale one turns the listed ones stale (the local and the global
// zone each with its healthy duration), a heartbeat dated ahead stays fresh, and a site never
// read is not judged.
func TestVerdicts(t *testing.T) {
	z, err := config.ParseZone("gslb.example.com.yml", []byte(`
records:
  app.gslb.example.com.:
    backends:
      - {address: 192.0.2.1, site: eu-1}
      - {address: 192.0.2.2, site: eu-2}
      - {address: 192.0.2.3, site: us-1}
      - {address: 192.0.2.9, site: ap-1}
`), "gslb.example.com.", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	opts := config.HeartbeatOptions{Region: "europe", Interval: time.Second, LocalHealthy: 10 * time.Second, GlobalHealthy: 20 * time.Second,
		Local: &config.HeartbeatZone{Zone: "europe.hb."}, Global: &config.HeartbeatZone{Zone: "global.hb."}}
	rec := recorder{}
	k := NewKeeper("eu-1", opts, rec, nil)
	if _, err := k.Source().Merge([]*config.Zone{z}); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(10000, 0)
	up := func(a string) []netip.Addr { return []netip.Addr{netip.MustParseAddr(a)} }
	key := func(a string) string { return "app.gslb.example.com.|" + a + "|0" }
	for _, tt := range []struct {
		name         string
		eu2, us1     siteState
		want2, want3 health.Status
	}{
		{"fresh and listed", siteState{Record{Time: now.Add(-5 * time.Second), Up: up("192.0.2.2")}, local, true},
			siteState{Record{Time: now.Add(-15 * time.Second), Up: up("192.0.2.3")}, global, true}, health.Up, health.Up},
		{"fresh, not listed", siteState{Record{Time: now, Up: nil}, local, true},
			siteState{Record{Time: now, Up: up("192.0.2.99")}, global, true}, health.Down, health.Down},
		{"stale by each zone's duration", siteState{Record{Time: now.Add(-11 * time.Second), Up: up("192.0.2.2")}, local, true},
			siteState{Record{Time: now.Add(-21 * time.Second), Up: nil}, global, true}, health.Stale, health.Down},
		{"dated ahead (self-heal)", siteState{Record{Time: now.Add(3 * time.Minute), Up: up("192.0.2.2")}, local, true},
			siteState{Record{Time: now.Add(-19 * time.Second), Up: up("192.0.2.3")}, global, true}, health.Up, health.Up},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k.mu.Lock()
			k.sites = map[string]*siteState{"eu-2": &tt.eu2, "us-1": &tt.us1}
			verdicts := k.judgeLocked(now)
			k.mu.Unlock()
			clear(rec)
			source.Report(rec, verdicts)
			if rec[key("192.0.2.2")] != tt.want2 || rec[key("192.0.2.3")] != tt.want3 {
				t.Errorf("eu-2's backend %s, us-1's %s; want %s, %s", rec[key("192.0.2.2")], rec[key("192.0.2.3")], tt.want2, tt.want3)
			}
			if _, judged := rec[key("192.0.2.9")]; judged {
				t.Error("ap-1, never read, was judged")
			}
			if _, judged := rec[key("192.0.2.1")]; judged {
				t.Error("this site's own backend was judged")
			}
		})
	}
}

// TestHealAfter: healing starts after a round of failed writes, or a quarter of the healthy
// duration when that is longer.
func TestHealAfter(t *testing.T) {
	for _, tt := range []struct{ healthy, interval, want time.Duration }{
		{30 * time.Second, 10 * time.Second, 15 * time.Second},
		{4 * time.Second, 250 * time.Millisecond, time.Second},
		{2 * time.Second, time.Second, 1500 * time.Millisecond},
	} {
		if got := healAfter(tt.healthy, tt.interval); got != tt.want {
			t.Errorf("healAfter(%s, %s) = %s, want %s", tt.healthy, tt.interval, got, tt.want)
		}
	}
}

// TestPlaceholdersNeedPeers: a placeholder is an error naming its file and line.
func TestPlaceholdersNeedPeers(t *testing.T) {
	z, err := config.ParseZone("z.yml", []byte("records:\n  app.gslb.example.com.:\n    backends:\n      - {site: us-1}\n"), "gslb.example.com.", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewKeeper("eu-1", config.HeartbeatOptions{}, recorder{}, nil).Source().Merge([]*config.Zone{z}); err == nil {
		t.Fatal("a placeholder was accepted with heartbeats")
	} else if want := "z.yml:4:"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %s", err, want)
	}
}
