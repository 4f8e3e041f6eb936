package source

import "testing"

// TestWatchers: Call calls every callback added and not removed, once each.
func TestWatchers(t *testing.T) {
	var w Watchers
	w.Call() // none: nothing to do
	calls := map[string]int{}
	w.Add(func() { calls["a"]++ })
	remove := w.Add(func() { calls["b"]++ })
	w.Call()
	remove()
	w.Call()
	if calls["a"] != 2 || calls["b"] != 1 {
		t.Errorf("calls %v, want a twice and b once", calls)
	}
}
