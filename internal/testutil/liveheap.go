package testutil

import (
	"runtime"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
)

// LiveHeap returns the bytes of live heap after two collections (the second frees what
// sync.Pools held until the first), for the benchmarks that report the memory a structure keeps.
func LiveHeap() float64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc)
}

// ParseBenchZone parses data as the zone file zone.yml of the zone bench.test., the zone of the
// bench/ scripts, and fails tb if it does not parse.
func ParseBenchZone(tb testing.TB, data []byte) *config.Zone {
	tb.Helper()
	z, err := config.ParseZone("zone.yml", data, "bench.test.", nil, 1)
	if err != nil {
		tb.Fatal(err)
	}
	return z
}
