package catalog

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// BenchmarkLiveHeapPerRecord parses 100,000 records of bench/bigzone.sh's plain zone (failover,
// two backends without checks) and builds their catalog, and reports the live heap each takes
// per record, after a collection: what a big zone's configuration and catalog keep, apart from
// the garbage of the load. Run it once:
//
//	go test -run XXX -bench LiveHeapPerRecord -benchtime 1x ./internal/catalog
func BenchmarkLiveHeapPerRecord(b *testing.B) {
	const n = 100000
	var zone strings.Builder
	zone.WriteString("records:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&zone, "  n%06d.bench.test.: {mode: failover, backends: [{address: 192.0.2.%d, priority: 1}, {address: 198.51.100.%d, priority: 2}]}\n", i, i%250+1, i%250+1)
	}
	data := []byte(zone.String())
	live := testutil.LiveHeap
	for b.Loop() {
		before := live()
		z := testutil.ParseBenchZone(b, data)
		parsed := live()
		s, err := Build([]*config.Zone{z}, states{})
		if err != nil {
			b.Fatal(err)
		}
		built := live()
		b.ReportMetric((parsed-before)/n, "config-B/record")
		b.ReportMetric((built-parsed)/n, "catalog-B/record")
		runtime.KeepAlive(s)
	}
	runtime.KeepAlive(data)
}
