package timeline

import (
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/meridian-gslb/meridian/internal/answer"
	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

const zone = `records:
  www.example.org.:
    mode: failover
    failover_target: 40s
    backends:
      - {address: 192.0.2.1, priority: 1, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 192.0.2.2, priority: 2, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: "2001:db8::1", healthchecks: [{type: tcp, params: {port: 80}}]}
`

// setup returns a keeper, started, following the snapshot of zone, whose health words a
// manager that probes nothing keeps.
func setup(t *testing.T) (*Keeper, *catalog.Snapshot) {
	t.Helper()
	z, err := config.ParseZone("zone.yml", []byte(zone), "example.org", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Build([]*config.Zone{z}, health.NewManager(health.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range snap.Records()[0].Backends {
		b.State.Set(health.Up)
	}
	snap.Records()[0].Refresh()
	k := New()
	k.Configure(func() *catalog.Snapshot { return snap }, nil)
	k.Start()
	t.Cleanup(k.Stop)
	return k, snap
}

// change makes the backend at addr of www go to status to, as the health manager does: the
// transition first (its evidence since detected), then the record's refresh.
func change(k *Keeper, snap *catalog.Snapshot, addr string, to health.Status, detected time.Time) {
	rec := snap.Records()[0]
	for _, b := range rec.Backends {
		if b.Config.Address == addr {
			from := b.State.Status()
			b.State.Set(to)
			k.Transition(health.Transition{Time: time.Now(), Since: detected, Record: rec.Name(), Backend: addr, Key: b.Key(), From: from, To: to, Reason: "test"})
		}
	}
	rec.Refresh()
}

func query(snap *catalog.Snapshot, qtype uint16) {
	m := new(dns.Msg)
	m.SetQuestion("www.example.org.", qtype)
	answer.Respond(snap, answer.Options{}, answer.Query{Msg: m, Source: netip.MustParseAddr("198.51.100.1")})
}

// waitTimelines polls until the keeper holds n closed timelines.
func waitTimelines(t *testing.T, k *Keeper, n int) []Timeline {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		k.mu.Lock()
		open, done := len(k.open), len(k.done["www.example.org."])
		k.mu.Unlock()
		if open == 0 && done >= n {
			return k.Timelines("www.example.org.", 0)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d timelines closed, %d open, want %d closed", done, open, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTimeline follows a failover to its first answer: its stages in order, the measured time
// in the record's histogram beside its target; a change from unknown starts none; an answer
// of the other family does not close it.
func TestTimeline(t *testing.T) {
	k, snap := setup(t)
	before := promtest.CollectAndCount(failoverSeconds)
	k.Transition(health.Transition{Record: "www.example.org.", From: health.Unknown, To: health.Up, Time: time.Now()})
	detected := time.Now().Add(-3 * time.Second)
	change(k, snap, "192.0.2.1", health.Down, detected)
	query(snap, dns.TypeAAAA)
	time.Sleep(3 * poll)
	if got := k.Timelines("", 0); len(got) != 1 || !got[0].Answered.IsZero() || got[0].Swapped.IsZero() {
		t.Fatalf("before an IPv4 answer: %+v", got)
	}
	query(snap, dns.TypeA)
	tl := waitTimelines(t, k, 1)[0]
	if tl.Key == "" || tl.To != health.Down || tl.From != health.Up || tl.Target != 40*time.Second {
		t.Errorf("timeline %+v", tl)
	}
	if !tl.Detected.Equal(detected) || tl.Changed.Before(tl.Detected) || tl.Swapped.Before(tl.Changed) || tl.Answered.Before(tl.Swapped) {
		t.Errorf("stages out of order: detected %v, changed %v, swapped %v, answered %v", tl.Detected, tl.Changed, tl.Swapped, tl.Answered)
	}
	if m := tl.Measured(); m < 3*time.Second || m > 10*time.Second {
		t.Errorf("measured %v, want about 3 s", m)
	}
	if promtest.CollectAndCount(failoverSeconds) != before+1 {
		t.Error("the record's histogram has no series")
	}
	if v := promtest.ToFloat64(failoverTarget.WithLabelValues("www.example.org.")); v != 40 {
		t.Errorf("target gauge %v, want 40", v)
	}
	if snap.Records()[0].View().Extra().Watch != nil {
		snap.Records()[0].Refresh()
		if snap.Records()[0].View().Extra().Watch != nil {
			t.Error("the watch stays on the record once answered")
		}
	}
}

// TestSupersededAndShared: a second change of the record before the first one's view was
// swapped shares its watch; one after the swap but before the answer supersedes it.
func TestSupersededAndShared(t *testing.T) {
	k, snap := setup(t)
	rec := snap.Records()[0]
	for _, addr := range []string{"192.0.2.1", "192.0.2.2"} {
		for _, b := range rec.Backends {
			if b.Config.Address == addr {
				b.State.Set(health.Down)
				k.Transition(health.Transition{Time: time.Now(), Since: time.Now(), Record: rec.Name(), Key: b.Key(), From: health.Up, To: health.Down})
			}
		}
	}
	rec.Refresh() // one refresh for both
	change(k, snap, "192.0.2.1", health.Up, time.Now())
	query(snap, dns.TypeA)
	ts := waitTimelines(t, k, 3)
	superseded, answered := 0, 0
	for _, tl := range ts {
		if tl.Superseded {
			superseded++
		}
		if !tl.Answered.IsZero() {
			answered++
		}
	}
	if superseded != 2 || answered != 1 {
		t.Errorf("%d superseded, %d answered, want 2 and 1: %+v", superseded, answered, ts)
	}
}

// TestRecordsThatLeaveAreForgotten: a reload without the record drops its timelines and its
// series.
func TestRecordsThatLeaveAreForgotten(t *testing.T) {
	k, snap := setup(t)
	change(k, snap, "192.0.2.1", health.Down, time.Now())
	query(snap, dns.TypeA)
	waitTimelines(t, k, 1)
	empty, err := catalog.Build(nil, health.NewManager(health.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	k.Configure(func() *catalog.Snapshot { return empty }, nil)
	if got := k.Timelines("", 0); len(got) != 0 {
		t.Errorf("timelines of a record that left: %+v", got)
	}
	if promtest.CollectAndCount(failoverTarget) != 0 {
		t.Error("the target series of a record that left stays")
	}
}
