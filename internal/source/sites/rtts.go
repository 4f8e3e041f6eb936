package sites

import (
	"maps"
	"slices"
	"time"
)

// rttReport is the RTTs by site of one backend, for source.MeasureReporter.ReportRTTs.
type rttReport struct {
	key  string
	rtts map[string]time.Duration
}

// rttsLocked returns, for every backend whose RTTs the plan reads (measure_remote), the RTT
// to it that each other site published when last read, by site: not those of a site stale
// for the block's split-brain threshold (a site cut off measures nothing worth steering by).
// A backend that was reported before and is read no more is reported with none.
func (f *Fleet) rttsLocked(now time.Time) []rttReport {
	reported := make(map[string]bool, len(f.plan.measured))
	out := make([]rttReport, 0, len(f.plan.measured)+len(f.rttsReported))
	for _, b := range f.plan.measured {
		var rtts map[string]time.Duration
		for name, s := range f.sites {
			if name == f.opts.Site || f.staleLocked(s, now) {
				continue
			}
			if rtt := s.rtts[b.record][b.ip]; rtt > 0 {
				if rtts == nil {
					rtts = map[string]time.Duration{}
				}
				rtts[name] = rtt
			}
		}
		reported[b.key] = true
		out = append(out, rttReport{key: b.key, rtts: rtts})
	}
	for _, key := range slices.Sorted(maps.Keys(f.rttsReported)) {
		if !reported[key] {
			out = append(out, rttReport{key: key})
		}
	}
	f.rttsReported = reported
	return out
}
