package istiosync

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

// TestDamper checks the health a Damper returns for sequences of checks of one key: down at
// once on a failed check, up again after Recovery (3) synced checks in a row, and a first
// check that decides alone.
func TestDamper(t *testing.T) {
	const T, F = true, false
	tests := []struct {
		name    string
		checks  []bool
		healthy []bool
	}{
		{"first synced is healthy at once", []bool{T, T}, []bool{T, T}},
		{"first not synced needs 3", []bool{F, T, T, T}, []bool{F, F, F, T}},
		{"fails at once", []bool{T, F, F}, []bool{T, F, F}},
		{"3 to recover", []bool{T, F, T, T, T, T}, []bool{T, F, F, F, T, T}},
		{"a failure restarts the count", []bool{T, F, T, T, F, T, T, T}, []bool{T, F, F, F, F, F, F, T}},
		{"fails again after recovering", []bool{F, T, T, T, F}, []bool{F, F, F, T, F}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Damper
			var got []bool
			for _, c := range tt.checks {
				got = append(got, d.Observe("istio-system/gw", c))
			}
			if !slices.Equal(got, tt.healthy) {
				t.Errorf("checks %v: healthy %v, want %v", tt.checks, got, tt.healthy)
			}
		})
	}
}

// TestDamperKeys checks that keys are damped apart, and that a forgotten key starts afresh
// while a kept one keeps its count.
func TestDamperKeys(t *testing.T) {
	var d Damper
	d.Observe("a", false)
	if !d.Observe("b", true) {
		t.Fatal("b's first synced check: unhealthy")
	}
	if d.Observe("a", true) {
		t.Fatal("a healthy after one synced check following a failure")
	}
	d.Observe("c", false)
	d.Forget(func(key string) bool { return key == "c" })
	if !d.Observe("a", true) {
		t.Error("a forgotten: its next synced check is not a first one")
	}
	if d.Observe("c", true) {
		t.Error("c kept: healthy after one synced check following a failure")
	}
}

// TestDamperConcurrent observes keys from several goroutines, for the race detector.
func TestDamperConcurrent(t *testing.T) {
	var d Damper
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			key := fmt.Sprint("ns/gw-", g)
			for i := range 2 * Recovery {
				d.Observe(key, i%2 == 0)
			}
			d.Forget(func(string) bool { return true })
		})
	}
	wg.Wait()
	for g := range 4 {
		if d.Observe(fmt.Sprint("ns/gw-", g), true) {
			t.Errorf("gw-%d healthy after alternating checks and one synced", g)
		}
	}
}
