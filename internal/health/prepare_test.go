package health

import (
	"fmt"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/health/probe"
)

// TestPreparedBackendsAreSyncsOwn syncs the same specs into two managers, one given every spec
// through Prepare first: each backend is the same in both (status, reasons, the machines of
// its checks, its report, its per-check statistics), seeded or not, external or not. A
// prepared backend that no longer fits its spec (a passive spec that Sync gives a check, as
// acceptPassive does) is dropped for a new one, and one that Sync keeps from before is not
// replaced.
func TestPreparedBackendsAreSyncsOwn(t *testing.T) {
	silent := &scriptedProber{} // never answers within the test: nothing but Sync sets a status
	check := func(key string) *probe.Compiled {
		return &probe.Compiled{Prober: silent, Type: "test", Timeout: time.Second, Key: key}
	}
	specs := func() []Spec {
		one := spec("one", silent, "check-one", time.Hour)
		two := spec("two", silent, "check-two-a", time.Hour)
		two.Checks = append(two.Checks, check("check-two-b"))
		two.Rise, two.Fall, two.Capacity = 3, 2, 4
		seeded := spec("seeded", silent, "check-seeded", time.Hour)
		stale := Spec{Key: "stale", Record: "www.example.org.", Backend: "stale", External: true, Rise: 1, Fall: 1}
		external := spec("external", silent, "check-external", time.Hour)
		external.External = true
		measured := spec("measured", silent, "check-measured", time.Hour)
		measured.External, measured.MeasureOnly = true, true
		// changed was prepared without checks: Sync sees it with one, as a passive spec's.
		changed := Spec{Key: "changed", Record: "www.example.org.", Backend: "changed", Rise: 1, Fall: 1, Interval: time.Hour}
		return []Spec{one, two, seeded, stale, external, measured, changed}
	}
	seed := map[string]Status{"seeded": Up, "stale": Stale}
	sync := func(m *Manager, prepare bool) {
		s := specs()
		if prepare {
			for i := range s {
				m.Prepare(&s[i])
			}
		}
		s[len(s)-1].Checks = []*probe.Compiled{check("check-changed")}
		m.Sync(s, nil)
	}
	plain := NewManager(Options{Log: testLog{}, CheckStats: true, Seed: seed})
	prepared := NewManager(Options{Log: testLog{}, CheckStats: true, Seed: seed})
	sync(plain, false)
	sync(prepared, true)
	for _, s := range specs() {
		want, got := describeBackend(plain, s.Key), describeBackend(prepared, s.Key)
		if got != want {
			t.Errorf("%s prepared: %s\nwant (not prepared): %s", s.Key, got, want)
		}
	}
	if got := describeBackend(prepared, "seeded"); got[:len("up restored")] != "up restored" {
		t.Errorf("the seeded backend: %s", got)
	}

	// A second Sync keeps the backends whose checks are the same: a prepared one is dropped.
	kept := backendOf(prepared, "one")
	s := specs()
	prepared.Prepare(&s[0])
	prepared.Sync(s[:1], nil)
	if backendOf(prepared, "one") != kept {
		t.Error("a prepared backend replaced the one Sync keeps")
	}
}

// describeBackend returns what m's backend of key is, apart from its pointers.
func describeBackend(m *Manager, key string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.backendLocked(key)
	if b == nil {
		return "none"
	}
	out := fmt.Sprintf("%s %s external=%v measureOnly=%v capacity=%v word=%s", b.status, b.details.reason,
		b.external, b.measureOnly, b.capacity(), b.state.Status())
	if r := b.report(); r != nil {
		out += fmt.Sprintf(" report=%s/%s", r.status, r.reason)
	}
	for _, sub := range b.subscriptions() {
		out += fmt.Sprintf(" [%s %+v stats=%v mine=%v]", sub.job.check[:], sub.machine, sub.stats != nil, sub.backend == b)
	}
	return out
}

// backendOf returns m's backend of key.
func backendOf(m *Manager, key string) *backend {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.backendLocked(key)
}
