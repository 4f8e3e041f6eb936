package testutil

import "runtime"

// LiveHeap returns the bytes of live heap after two collections (the second frees what
// sync.Pools held until the first), for the benchmarks that report the memory a structure keeps.
func LiveHeap() float64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc)
}
