package engine

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// mixedZone returns bench/bigzone.sh's mixed zone of n records: 16 in 20 failover with two
// backends and the tcp profile's check, 3 in 20 weighted with three backends and the http
// profile's, 1 in 20 roundrobin with two backends and an inline tcp check; and how many
// backends it probes.
func mixedZone(n int) ([]byte, int) {
	var zone strings.Builder
	zone.WriteString("healthcheck_profiles:\n  tcp9: {type: tcp, params: {port: 9}}\n  web: {type: http, params: {port: 9, uri: /healthz}}\n")
	zone.WriteString("defaults:\n  scrape_interval: 60s\n  record_ttl: 30\nrecords:\n")
	backends := 0
	for i := 1; i <= n; i++ {
		a, b := i/250%250, i%250+1
		fmt.Fprintf(&zone, "  n%06d.bench.test.:\n", i)
		switch {
		case i%20 < 16:
			zone.WriteString("    mode: failover\n    backends:\n")
			fmt.Fprintf(&zone, "      - {address: 127.1.%d.%d, priority: 1, healthchecks: [tcp9]}\n", a, b)
			fmt.Fprintf(&zone, "      - {address: 127.2.%d.%d, priority: 2, healthchecks: [tcp9]}\n", a, b)
			backends += 2
		case i%20 < 19:
			zone.WriteString("    mode: weighted\n    backends:\n")
			for j := 1; j <= 3; j++ {
				fmt.Fprintf(&zone, "      - {address: 127.%d.%d.%d, weight: %d, country: US, healthchecks: [web]}\n", j+2, a, b, j)
			}
			backends += 3
		default:
			zone.WriteString("    mode: roundrobin\n    backends:\n")
			for j := 6; j <= 7; j++ {
				fmt.Fprintf(&zone, "      - address: 127.%d.%d.%d\n        healthchecks: [{type: tcp, params: {port: 9, timeout: 2s}}]\n", j, a, b)
			}
			backends += 2
		}
	}
	return []byte(zone.String()), backends
}

// checksZone returns bench/health.sh's zone of n checks of type typ (tcp or http): n/3
// records of three backends, each with a check of its own (a distinct uri or send payload)
// on one of 200 ports.
func checksZone(n int, typ string) ([]byte, int) {
	var zone strings.Builder
	zone.WriteString("records:\n")
	for r := range n / 3 {
		fmt.Fprintf(&zone, "  r%d.bench.test.:\n    scrape_interval: 10s\n    scrape_timeout: 5s\n    scrape_retries: 0\n    backends:\n", r)
		for b := range 3 {
			i := r*3 + b
			params := fmt.Sprintf("{port: %d, send: \"c%d\", expect: pong}", 20000+i%200, i)
			if typ == "http" {
				params = fmt.Sprintf("{port: %d, enable_tls: false, uri: /c%d}", 20000+i%200, i)
			}
			fmt.Fprintf(&zone, "      - {address: 127.0.0.1, port: %d, healthchecks: [{type: %s, params: %s}]}\n", 10000+i, typ, params)
		}
	}
	return []byte(zone.String()), n / 3 * 3
}

// BenchmarkLiveHeapMixedZone loads bench/bigzone.sh's mixed zone of 100,000 records (230,000
// probed backends) through the steps of a load and reports the live heap each step keeps,
// after a collection: the configuration and the catalog per record, the compiled checks
// (health.Spec and probers), the health manager's backends and jobs, the records' views and
// the dashboard's histories per probed backend. Run it once:
//
//	go test -run XXX -bench LiveHeapMixedZone -benchtime 1x ./internal/engine
func BenchmarkLiveHeapMixedZone(b *testing.B) {
	const n = 100000
	data, probed := mixedZone(n)
	liveHeapOfLoad(b, data, n, probed)
}

// BenchmarkLiveHeapChecks is BenchmarkLiveHeapMixedZone with bench/health.sh's zones of 30,000
// checks, one http and one tcp.
func BenchmarkLiveHeapChecks(b *testing.B) {
	for _, typ := range []string{"tcp", "http"} {
		b.Run(typ, func(b *testing.B) {
			data, probed := checksZone(30000, typ)
			liveHeapOfLoad(b, data, probed/3, probed)
		})
	}
}

// liveHeapOfLoad reports the live heap of the steps of a load of the zone data of n records
// and probed backends.
func liveHeapOfLoad(b *testing.B, data []byte, n, probed int) {
	live := testutil.LiveHeap
	for b.Loop() {
		before := live()
		z := testutil.ParseBenchZone(b, data)
		parsed := live()
		m := health.NewManager(health.Options{})
		snap, err := catalog.BuildUnviewed([]*config.Zone{z}, m)
		if err != nil {
			b.Fatal(err)
		}
		built := live()
		ps, err := compileProbes(snap)
		if err != nil {
			b.Fatal(err)
		}
		compiled := live()
		ps.sync(m)
		ps = nil // the engine keeps none, nor does the manager
		synced := live()
		for _, r := range snap.Records() {
			r.Refresh()
		}
		viewed := live()
		m.SetHistory(true)
		mustProbes(b, snap).sync(m)
		histories := live()
		b.ReportMetric((parsed-before)/float64(n), "config-B/record")
		b.ReportMetric((built-parsed)/float64(n), "catalog-B/record")
		b.ReportMetric((viewed-synced)/float64(n), "views-B/record")
		b.ReportMetric((compiled-built)/float64(probed), "checks-B/backend")
		b.ReportMetric((synced-built)/float64(probed), "health-B/backend")
		b.ReportMetric((histories-viewed)/min(float64(probed), health.DefaultMaxHistories), "history-B/backend")
		b.ReportMetric((histories-before)/1e6, "total-MB")
		runtime.KeepAlive(snap)
		m.Stop()
	}
	runtime.KeepAlive(data)
}

// mustProbes returns the compiled checks of snap.
func mustProbes(b *testing.B, snap *catalog.Snapshot) *probeSet {
	ps, err := compileProbes(snap)
	if err != nil {
		b.Fatal(err)
	}
	return ps
}

// BenchmarkLoadMixedZone runs the steps of a load of bench/bigzone.sh's mixed zone of 100,000
// records (parse, build, compile the checks, Sync, the first views), for its CPU profile:
//
//	go test -run XXX -bench LoadMixedZone -benchtime 3x -cpuprofile /tmp/cpu.pprof ./internal/engine
func BenchmarkLoadMixedZone(b *testing.B) {
	data, _ := mixedZone(100000)
	b.ReportAllocs()
	for b.Loop() {
		z := testutil.ParseBenchZone(b, data)
		m := health.NewManager(health.Options{History: true})
		snap, err := catalog.BuildUnviewed([]*config.Zone{z}, m)
		if err != nil {
			b.Fatal(err)
		}
		mustProbes(b, snap).sync(m)
		refreshAll(snap.Records())
		m.Stop()
	}
}
