package sites

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/published"
	"github.com/meridian-gslb/meridian/internal/source"
)

func mustZone(t *testing.T, yaml string) *config.Zone {
	t.Helper()
	z, err := config.ParseZone("gslb.example.com.yml", []byte(yaml), "gslb.example.com.", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

const sitesYAML = `
records:
  app.gslb.example.com.:
    mode: weighted
    backends:
      - {address: 10.1.0.1, site: eu, weight: 1, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.2.0.1, site: us, weight: 1, location: us-east, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {site: ap, weight: 6, country: JP}
  plain.gslb.example.com.:
    backends: [{address: 10.1.0.9}]
  names.gslb.example.com.:
    backends: [{address: www.example.net.}]
`

// TestMerge marks other sites' backends remote, replaces a placeholder by what its site
// published (sharing its weight and keeping its settings), publishes the records with this
// site's backends, makes a backend's site its location tag unless it has one, and plans what
// to read from whom; the input zones are left unchanged.
func TestMerge(t *testing.T) {
	z := mustZone(t, sitesYAML)
	learned := map[string][]netip.Addr{"ap|app.gslb.example.com.": {netip.MustParseAddr("10.3.0.1"), netip.MustParseAddr("10.3.0.2"), netip.MustParseAddr("2001:db8::3")}}
	out, p := merge([]*config.Zone{z}, "eu", false, func(site, record string) []netip.Addr { return learned[site+"|"+record] })

	if z.Records[0].Publish || len(z.Records[0].Backends) != 3 || z.Records[0].Backends[1].Remote {
		t.Fatalf("merge changed its input: %+v", z.Records[0])
	}
	recs := map[string]config.Record{}
	for _, r := range out[0].Records {
		recs[r.Name] = r
	}
	app := recs["app.gslb.example.com."]
	if !app.Publish || !recs["plain.gslb.example.com."].Publish || recs["names.gslb.example.com."].Publish {
		t.Errorf("publish: app %v plain %v names %v, want true true false", app.Publish, recs["plain.gslb.example.com."].Publish, recs["names.gslb.example.com."].Publish)
	}
	type got struct {
		addr              string
		remote            bool
		weight, share     int
		country, location string
	}
	var backends []got
	for _, b := range app.Backends {
		backends = append(backends, got{b.Address, b.Remote, int(b.Weight), b.Share(), b.Labels().Country, b.Labels().Location})
	}
	want := []got{
		{"10.1.0.1", false, 1, 0, "", "eu"},
		{"10.2.0.1", true, 1, 0, "", "us-east"},
		{"10.3.0.1", true, 6, 2, "JP", "ap"},
		{"10.3.0.2", true, 6, 2, "JP", "ap"},
		{"2001:db8::3", true, 6, 1, "JP", "ap"},
	}
	if !slices.Equal(backends, want) {
		t.Errorf("backends\n got %v\nwant %v", backends, want)
	}
	if got := p.sites(); !slices.Equal(got, []string{"ap", "us"}) {
		t.Errorf("sites read: %v", got)
	}
	wantReads := map[string][]read{
		"us": {{"app.gslb.example.com.", []uint16{dns.TypeA}}},
		"ap": {{"app.gslb.example.com.", []uint16{dns.TypeA, dns.TypeAAAA}}},
	}
	if !slices.Equal(p.zones, []string{"gslb.example.com."}) || fmt.Sprint(p.reads) != fmt.Sprint(wantReads) {
		t.Errorf("plan zones %v reads %v, want reads %v", p.zones, p.reads, wantReads)
	}
	if len(p.remote) != 4 || p.remote[0].key != "app.gslb.example.com.|10.2.0.1|0" || p.remote[0].learned || !p.remote[1].learned {
		t.Errorf("remote backends: %+v", p.remote)
	}
}

// recorder is a Reporter that keeps the last verdict of each key.
type recorder map[string]health.Status

func (r recorder) Report(key string, st health.Status, _ string) bool { r[key] = st; return true }

// ReportRTTs implements source.MeasureReporter, ignoring the RTTs.
func (recorder) ReportRTTs(string, map[string]time.Duration) bool { return true }

// TestFreshnessAndVerdicts drives a fleet's rounds with what peers answered (no network: the
// exchanges are tested in exchange_test.go and end to end in cmd/meridian) and checks the
// verdicts: listed is up, unlisted down, a site whose heartbeat stops changing goes stale only
// once the threshold has passed since it first failed to confirm, and comes back on a new
// heartbeat; a peer whose heartbeat names this site is left out.
func TestFreshnessAndVerdicts(t *testing.T) {
	rec := recorder{}
	f := NewFleet(config.SitesOptions{Site: "eu", Peers: []string{"127.0.0.1:1"}, PeerInterval: time.Second, SplitBrainThreshold: 10 * time.Second}, rec, nopLog{})
	z := mustZone(t, sitesYAML)
	long := z.Records[0] // the same record with a threshold of its own (a Gslb's splitBrainThresholdSeconds)
	long.Name = "long.gslb.example.com."
	settings := *long.Settings() // shared with the first record: change a copy
	settings.SplitBrainThreshold = 20 * time.Second
	long.SetSettings(settings)
	z.Records = append(z.Records, long)
	if _, err := f.Source().Merge([]*config.Zone{z}); err != nil {
		t.Fatal(err)
	}
	const key, longKey = "app.gslb.example.com.|10.2.0.1|0", "long.gslb.example.com.|10.2.0.1|0"
	t0 := time.Unix(1000, 0)
	hb := func(seq uint64) *published.Heartbeat {
		return &published.Heartbeat{Site: "us", Seq: seq, Boot: "0123456789abcdef"}
	}
	us := func(at time.Time, h *published.Heartbeat, targets ...string) readout {
		r := readout{addr: "127.0.0.1:1", at: at, heartbeat: h}
		if h != nil {
			r.site = "us"
			r.targets = map[string][]netip.Addr{"app.gslb.example.com.": nil, "long.gslb.example.com.": nil}
			for _, a := range targets {
				for name := range r.targets {
					r.targets[name] = append(r.targets[name], netip.MustParseAddr(a))
				}
			}
		}
		return r
	}
	steps := []struct {
		name       string
		read       readout
		at         time.Time
		want, long health.Status
	}{
		{"listed", us(t0, hb(1), "10.2.0.1"), t0, health.Up, health.Up},
		{"unlisted", us(t0.Add(time.Second), hb(2)), t0.Add(time.Second), health.Down, health.Down},
		{"listed again", us(t0.Add(2*time.Second), hb(3), "10.2.0.1"), t0.Add(2 * time.Second), health.Up, health.Up},
		{"unchanged within the grace", us(t0.Add(3*time.Second), hb(3), "10.2.0.1"), t0.Add(3 * time.Second), health.Up, health.Up},
		{"silent from 5s", us(t0.Add(5*time.Second), nil), t0.Add(5 * time.Second), health.Up, health.Up},
		{"silent, threshold not reached", us(t0.Add(14*time.Second), nil), t0.Add(14 * time.Second), health.Up, health.Up},
		{"silent for the threshold", us(t0.Add(15*time.Second), nil), t0.Add(15 * time.Second), health.Stale, health.Up},
		{"silent for the record's threshold", us(t0.Add(25*time.Second), nil), t0.Add(25 * time.Second), health.Stale, health.Stale},
		{"frozen heartbeat stays stale", us(t0.Add(26*time.Second), hb(3), "10.2.0.1"), t0.Add(26 * time.Second), health.Stale, health.Stale},
		{"new boot rejoins", us(t0.Add(27*time.Second), &published.Heartbeat{Site: "us", Seq: 1, Boot: "fedcba9876543210"}, "10.2.0.1"), t0.Add(27 * time.Second), health.Up, health.Up},
	}
	for _, s := range steps {
		f.mu.Lock()
		f.applyLocked([]readout{s.read}, []string{s.read.addr}, s.at)
		verdicts := f.judgeLocked(s.at)
		f.mu.Unlock()
		source.Report(rec, verdicts)
		if rec[key] != s.want || rec[longKey] != s.long {
			t.Fatalf("%s: %s and %s (the record's own threshold), want %s and %s", s.name, rec[key], rec[longKey], s.want, s.long)
		}
	}

	// A peer whose heartbeat names this site is this site (or a sibling): it judges nothing.
	f.mu.Lock()
	f.applyLocked([]readout{{addr: "127.0.0.2:1", at: t0, site: "eu", heartbeat: &published.Heartbeat{Site: "eu", Boot: "0123456789abcdef"}}}, nil, t0)
	self := f.peers["127.0.0.2:1"].self
	_, known := f.sites["eu"]
	f.mu.Unlock()
	if !self || known {
		t.Errorf("a peer of this site: self %v, known as another site %v", self, known)
	}
}

type nopLog struct{}

func (nopLog) Infof(string, ...any)    {}
func (nopLog) Warningf(string, ...any) {}

// countLog counts warnings.
type countLog struct{ warnings int }

func (*countLog) Infof(string, ...any)      {}
func (l *countLog) Warningf(string, ...any) { l.warnings++ }

// TestClockSkewIsLoggedOnce: a peer whose clock is off by more than half the threshold is
// logged once until it is back, and its freshness does not depend on it.
func TestClockSkewIsLoggedOnce(t *testing.T) {
	log := &countLog{}
	f := NewFleet(config.SitesOptions{Site: "eu", SplitBrainThreshold: 10 * time.Second}, recorder{}, log)
	s := f.siteLocked("us")
	now := time.Unix(1000, 0)
	for i, tt := range []struct {
		skew     time.Duration
		warnings int
	}{{time.Second, 0}, {-6 * time.Second, 1}, {-7 * time.Second, 1}, {0, 1}, {time.Minute, 2}} {
		f.checkSkewLocked(s, published.Heartbeat{Time: now.Add(-tt.skew)}, now)
		if log.warnings != tt.warnings {
			t.Fatalf("step %d (skew %s): %d warnings, want %d", i, tt.skew, log.warnings, tt.warnings)
		}
	}
}
