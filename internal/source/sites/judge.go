package sites

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/meridian-gslb/meridian/internal/published"
	"github.com/meridian-gslb/meridian/internal/source"
)

// judgeLocked returns the verdict on every other site's backend of the plan that this site
// can judge: not those of a site never heard from, nor of records not read from it yet.
func (f *Fleet) judgeLocked(now time.Time) []source.Verdict {
	out := make([]source.Verdict, 0, len(f.plan.remote))
	for _, b := range f.plan.remote {
		s := f.sites[b.site]
		if s == nil || !s.heard() {
			continue
		}
		targets, read := s.targets[b.record]
		if !read {
			continue
		}
		threshold := f.opts.SplitBrainThreshold
		if b.threshold > 0 {
			threshold = b.threshold
		}
		listed, stale := slices.Contains(targets, b.ip), s.silentFor(now, threshold)
		reason := fmt.Sprintf("in site %s's localtargets", s.name)
		if !listed {
			reason = "not " + reason
		}
		if stale {
			reason += " when last read; " + staleReason(s, now, threshold)
		}
		out = append(out, source.Verdict{Key: b.key, Status: published.Status(!stale, listed), Reason: reason})
	}
	return out
}

// staleReason says why s is stale for a split-brain threshold.
func staleReason(s *site, now time.Time, threshold time.Duration) string {
	return fmt.Sprintf("site %s is stale: its heartbeat has not changed for %s (split_brain_threshold %s)",
		s.name, now.Sub(s.lastAdvance).Round(time.Second), threshold)
}

// fmtAddrs is the comparable form of a placeholder's targets.
func fmtAddrs(addrs []netip.Addr) string { return fmt.Sprint(addrs) }
