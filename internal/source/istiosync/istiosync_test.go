package istiosync

import (
	"strings"
	"testing"
)

// proxy builds a Proxy with the states of LDS, RDS, CDS and EDS.
func proxy(lds, rds, cds, eds State) Proxy {
	return Proxy{States: [...]State{LDS: lds, RDS: rds, CDS: cds, EDS: eds}}
}

// synced is a Proxy with all four types synced.
var synced = proxy(Synced, Synced, Synced, Synced)

// TestSynced checks that only a proxy with all four types synced is, and that the reason names
// the first type, in the order LDS, RDS, CDS, EDS, that is not.
func TestSynced(t *testing.T) {
	tests := []struct {
		name   string
		p      Proxy
		want   bool
		reason string
	}{
		{"all synced", synced, true, "LDS, RDS, CDS and EDS synced"},
		{"zero", Proxy{}, false, "LDS MISSING"},
		{"RDS stale", proxy(Synced, Stale, Synced, Synced), false, "RDS STALE"},
		{"first of two", proxy(Synced, Synced, NotSent, Error), false, "CDS NOT_SENT"},
		{"EDS unknown", proxy(Synced, Synced, Synced, Unknown), false, "EDS UNKNOWN"},
		{"verbatim state", proxy(Synced, Synced, Synced, "synced"), false, "EDS synced"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := tt.p.Synced()
			if got != tt.want || reason != tt.reason {
				t.Errorf("Synced() = %v, %q; want %v, %q", got, reason, tt.want, tt.reason)
			}
		})
	}
}

// TestJudge checks that every pod must be known to istiod and synced, that the reason names
// the first pod that is not, and that no pods at all is not synced.
func TestJudge(t *testing.T) {
	status := map[string]Proxy{
		"gw-a.istio-system": synced,
		"gw-b.istio-system": synced,
		"gw-c.istio-system": proxy(Synced, Stale, Synced, Synced),
	}
	tests := []struct {
		name   string
		status map[string]Proxy
		pods   []string
		want   bool
		reason string
	}{
		{"no pods", status, nil, false, "no ready gateway pod"},
		{"all synced", status, []string{"gw-a.istio-system", "gw-b.istio-system"}, true, "all gateway pods (2)"},
		{"one stale", status, []string{"gw-a.istio-system", "gw-c.istio-system"}, false, "pod gw-c.istio-system: RDS STALE"},
		{"unknown pod", status, []string{"gw-a.istio-system", "gw-d.istio-system", "gw-c.istio-system"}, false, "no sync status for pod gw-d.istio-system"},
		{"other namespace", status, []string{"gw-a.default"}, false, "no sync status for pod gw-a.default"},
		{"no status", nil, []string{"gw-a.istio-system"}, false, "no sync status for pod gw-a.istio-system"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := Judge(tt.status, tt.pods)
			if got != tt.want || !strings.Contains(reason, tt.reason) {
				t.Errorf("Judge() = %v, %q; want %v, containing %q", got, reason, tt.want, tt.reason)
			}
		})
	}
}

// TestTypeString checks the names of the types, and of a value out of range.
func TestTypeString(t *testing.T) {
	var names []string
	for _, typ := range []Type{LDS, RDS, CDS, EDS, 7} {
		names = append(names, typ.String())
	}
	if got, want := strings.Join(names, " "), "LDS RDS CDS EDS Type(7)"; got != want {
		t.Errorf("names %q, want %q", got, want)
	}
}

// TestMerge checks that the status of several replicas lists every proxy of each, and that a
// proxy two replicas list takes, per type, the best state either gives.
func TestMerge(t *testing.T) {
	stale := proxy(Synced, Stale, Synced, Synced)
	moved := proxy(Synced, Stale, Synced, Stale)
	half := proxy(Missing, Synced, Missing, NotSent)
	got := Merge(
		map[string]Proxy{"a.ns": synced, "c.ns": moved},
		map[string]Proxy{"b.ns": stale, "c.ns": half},
		nil,
	)
	want := map[string]Proxy{"a.ns": synced, "b.ns": stale, "c.ns": proxy(Synced, Synced, Synced, Stale)}
	if len(got) != len(want) {
		t.Fatalf("Merge() = %v, want %v", got, want)
	}
	for id, p := range want {
		if got[id] != p {
			t.Errorf("%s: %v, want %v", id, got[id], p)
		}
	}
}
