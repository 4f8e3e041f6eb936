package sites

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/published"
)

const rttYAML = `
records:
  app.gslb.example.com.:
    mode: chain
    chain: [rtt]
    backends:
      - {address: 10.1.0.1, site: eu, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.2.0.1, site: us, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {site: ap, healthchecks: [{type: tcp, params: {port: 80}}]}
  local.gslb.example.com.:
    mode: chain
    chain: [rtt, weighted]
    backends:
      - {address: 10.9.0.1, location: sa, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.9.0.2, healthchecks: [{type: tcp, params: {port: 80}}]}
  weighted.gslb.example.com.:
    mode: weighted
    backends:
      - {address: 10.1.0.2, site: eu, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.2.0.2, site: us, healthchecks: [{type: tcp, params: {port: 80}}]}
`

// TestMergeMeasureRemote: with measure_remote, the records that steer by RTT publish their
// RTTs, their other sites' backends (written and learned) are measured only, and the plan reads
// every such record's RTTs and knows the sites their backends name; the other records, and
// every record without measure_remote, are as before.
func TestMergeMeasureRemote(t *testing.T) {
	z := mustZone(t, rttYAML)
	learned := func(site, record string) []netip.Addr {
		if site == "ap" && record == "app.gslb.example.com." {
			return []netip.Addr{netip.MustParseAddr("10.3.0.1")}
		}
		return nil
	}
	for _, measure := range []bool{true, false} {
		t.Run(fmt.Sprint("measure=", measure), func(t *testing.T) {
			out, p := merge([]*config.Zone{z}, "eu", measure, learned)
			var got []string
			for _, r := range out[0].Records {
				got = append(got, fmt.Sprintf("%s publish_rtt=%v", r.Name, r.PublishRTT))
				for _, b := range r.Backends {
					got = append(got, fmt.Sprintf("  %s measure_only=%v remote=%v", b.Address, b.MeasureOnly, b.Remote))
				}
			}
			want := []string{
				fmt.Sprintf("app.gslb.example.com. publish_rtt=%v", measure),
				"  10.1.0.1 measure_only=false remote=false",
				fmt.Sprintf("  10.2.0.1 measure_only=%v remote=true", measure),
				fmt.Sprintf("  10.3.0.1 measure_only=%v remote=true", measure),
				fmt.Sprintf("local.gslb.example.com. publish_rtt=%v", measure),
				"  10.9.0.1 measure_only=false remote=false",
				"  10.9.0.2 measure_only=false remote=false",
				"weighted.gslb.example.com. publish_rtt=false",
				"  10.1.0.2 measure_only=false remote=false",
				"  10.2.0.2 measure_only=false remote=true",
			}
			if !slices.Equal(got, want) {
				t.Errorf("merged\n%s\nwant\n%s", fmtLines(got), fmtLines(want))
			}
			var measured []string
			for _, b := range p.measured {
				measured = append(measured, b.key)
			}
			wantRTTs, wantMeasured, wantSites := []string(nil), []string(nil), []string{"ap", "us"}
			if measure {
				wantRTTs = []string{"app.gslb.example.com.", "local.gslb.example.com."}
				wantMeasured = []string{"app.gslb.example.com.|10.1.0.1|0", "app.gslb.example.com.|10.2.0.1|0", "app.gslb.example.com.|10.3.0.1|0",
					"local.gslb.example.com.|10.9.0.1|0", "local.gslb.example.com.|10.9.0.2|0"}
				wantSites = []string{"ap", "sa", "us"}
			}
			if !slices.Equal(p.rtts, wantRTTs) || !slices.Equal(measured, wantMeasured) || !slices.Equal(p.sites(), wantSites) {
				t.Errorf("plan: rtts %v measured %v sites %v\nwant rtts %v measured %v sites %v", p.rtts, measured, p.sites(), wantRTTs, wantMeasured, wantSites)
			}
		})
	}
}

func fmtLines(lines []string) string {
	out := ""
	for _, l := range lines {
		out += l + "\n"
	}
	return out
}

// rttRecorder is a MeasureReporter that keeps the last RTTs by site of each key.
type rttRecorder struct {
	recorder
	rtts map[string]map[string]time.Duration
}

func (r *rttRecorder) ReportRTTs(key string, rtts map[string]time.Duration) bool {
	r.rtts[key] = rtts
	return true
}

// TestRTTsBySite drives a fleet's rounds with the RTTs two sites published and checks what it
// reports, by backend: each site's RTT to it, the first of an address measured twice; none
// from a site that went stale; and none at all for a backend whose record no longer steers by
// RTT after a merge.
func TestRTTsBySite(t *testing.T) {
	rec := &rttRecorder{recorder: recorder{}, rtts: map[string]map[string]time.Duration{}}
	f := NewFleet(config.SitesOptions{Site: "eu", Peers: []string{"127.0.0.1:1", "127.0.0.2:1"}, PeerInterval: time.Second, SplitBrainThreshold: 10 * time.Second, MeasureRemote: true}, rec, nopLog{})
	z := mustZone(t, rttYAML)
	if _, err := f.Source().Merge([]*config.Zone{z}); err != nil {
		t.Fatal(err)
	}
	const eu, us, local = "app.gslb.example.com.|10.1.0.1|0", "app.gslb.example.com.|10.2.0.1|0", "local.gslb.example.com.|10.9.0.1|0"
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	peer := func(addr, site string, seq uint64, at time.Time, rtts map[string]map[netip.Addr]time.Duration) readout {
		return readout{addr: addr, site: site, at: at, heartbeat: &published.Heartbeat{Site: site, Seq: seq, Boot: "0123456789abcdef"}, rtts: rtts}
	}
	a := netip.MustParseAddr
	t0 := time.Unix(1000, 0)
	round := func(at time.Time, reads ...readout) {
		f.mu.Lock()
		f.applyLocked(reads, []string{"127.0.0.1:1", "127.0.0.2:1"}, at)
		rtts := f.rttsLocked(at)
		f.mu.Unlock()
		f.report(nil, rtts)
	}
	check := func(step string, want map[string]map[string]time.Duration) {
		t.Helper()
		for key, w := range want {
			if got := rec.rtts[key]; !maps.Equal(got, w) {
				t.Errorf("%s: %s: RTTs by site %v, want %v", step, key, got, w)
			}
		}
	}

	round(t0,
		peer("127.0.0.1:1", "us", 1, t0, map[string]map[netip.Addr]time.Duration{
			"app.gslb.example.com.":   {a("10.1.0.1"): ms(80), a("10.2.0.1"): ms(2)},
			"local.gslb.example.com.": {a("10.9.0.1"): ms(5)},
		}),
		peer("127.0.0.2:1", "ap", 1, t0, map[string]map[netip.Addr]time.Duration{
			"app.gslb.example.com.": {a("10.1.0.1"): ms(150)},
		}))
	check("both sites", map[string]map[string]time.Duration{
		eu: {"us": ms(80), "ap": ms(150)}, us: {"us": ms(2)}, local: {"us": ms(5)},
	})

	// ap falls silent: its RTTs leave once it is stale, not before; us keeps answering.
	round(t0.Add(2*time.Second), peer("127.0.0.1:1", "us", 2, t0.Add(2*time.Second), nil), readout{addr: "127.0.0.2:1", at: t0.Add(2 * time.Second)})
	check("ap silent", map[string]map[string]time.Duration{eu: {"us": ms(80), "ap": ms(150)}})
	at := t0.Add(13 * time.Second)
	round(at, peer("127.0.0.1:1", "us", 3, at, nil), readout{addr: "127.0.0.2:1", at: at})
	check("ap stale", map[string]map[string]time.Duration{eu: {"us": ms(80)}, us: {"us": ms(2)}})

	// Without measure_remote, nothing is read, and what was reported is taken back.
	f.Configure(config.SitesOptions{Site: "eu", Peers: []string{"127.0.0.1:1"}, PeerInterval: time.Second, SplitBrainThreshold: 10 * time.Second}, nopLog{})
	if _, err := f.Source().Merge([]*config.Zone{z}); err != nil {
		t.Fatal(err)
	}
	round(at)
	check("measure_remote off", map[string]map[string]time.Duration{eu: nil, us: nil, local: nil})
	if len(rec.rtts) != 4 { // ap published no targets: its placeholder stands for none
		t.Errorf("reported %d backends, want the 4 measured: %v", len(rec.rtts), rec.rtts)
	}
}
