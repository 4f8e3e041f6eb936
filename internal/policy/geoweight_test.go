package policy_test

import (
	"math"
	"slices"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/policy"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestGeoGroupWeights checks the choice inside the group a geo step decides for: every
// candidate of it while the record's weights are equal, one by weight when they differ.
func TestGeoGroupWeights(t *testing.T) {
	src := testutil.World(t, "country")
	fr := func(w, share int) policy.GeoCandidate {
		return policy.GeoCandidate{Healthy: true, Country: "FR", Weight: w, Share: share}
	}
	us := policy.GeoCandidate{Healthy: true, Country: "US", Weight: 1}
	tests := []struct {
		name  string
		mode  config.Mode
		cands []policy.GeoCandidate
		// want are the answers' shares of the runs by candidate; an answer of several when nil.
		want  []float64
		whole []int
	}{
		{"equal weights answer the whole group", config.ModeGeoIP, []policy.GeoCandidate{fr(1, 0), fr(1, 0), us}, nil, []int{0, 1}},
		{"0 counts as 1", config.ModeGeoIP, []policy.GeoCandidate{fr(0, 0), fr(1, 0), us}, nil, []int{0, 1}},
		{"unequal weights answer one", config.ModeGeoIP, []policy.GeoCandidate{fr(3, 0), fr(1, 0), us}, []float64{0.75, 0.25, 0}, nil},
		{"unequal weights elsewhere in the record", config.ModeGeoIP, []policy.GeoCandidate{fr(1, 0), fr(1, 0), {Healthy: true, Country: "US", Weight: 5}}, []float64{0.5, 0.5, 0}, nil},
		{"shares divide", config.ModeGeoIPAffinity, []policy.GeoCandidate{fr(2, 2), fr(2, 2), fr(2, 0), {Healthy: true, Country: "US", Weight: 1}}, []float64{0.25, 0.25, 0.5, 0}, nil},
	}
	const runs = 8000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := policy.PrepareGeo(tt.mode, tt.cands)
			loc := testutil.Lookup(src, "192.0.2.1")
			if tt.want == nil {
				if got, _ := table.Select(src, loc, nil); !slices.Equal(got, tt.whole) {
					t.Errorf("Select = %v, want %v", got, tt.whole)
				}
				return
			}
			counts := make([]int, len(tt.cands))
			for range runs {
				got, _ := table.Select(src, loc, nil)
				if len(got) != 1 {
					t.Fatalf("Select = %v, want one answer", got)
				}
				counts[got[0]]++
			}
			for i, w := range tt.want {
				if got := float64(counts[i]) / runs; math.Abs(got-w) > 0.03 {
					t.Errorf("candidate %d answered %.3f of the runs, want %.3f: %v", i, got, w, counts)
				}
			}
			ex := table.Explain(src, loc)
			if last := ex.Steps[len(ex.Steps)-1]; last.Stage != "weight" || !slices.Equal(last.Matched, ex.Picks) {
				t.Errorf("the last step is %q matching %v, want weight matching %v\n%s", last.Stage, last.Matched, ex.Picks, ex)
			}
		})
	}
}

func TestGeoGroupWeightsDoNotAllocate(t *testing.T) {
	src := testutil.World(t, "country")
	table := policy.PrepareGeo(config.ModeGeoIP, []policy.GeoCandidate{
		{Healthy: true, Country: "FR", Weight: 3}, {Healthy: true, Country: "FR", Weight: 1}})
	loc := testutil.Lookup(src, "192.0.2.1")
	var buf [4]int
	if n := testing.AllocsPerRun(100, func() { _, _ = table.Select(src, loc, buf[:0]) }); n != 0 {
		t.Errorf("Select: %v allocations", n)
	}
}
