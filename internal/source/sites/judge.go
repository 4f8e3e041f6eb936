package sites

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/source"
)

// Status is the status of another site's backend from what its site published, the rule of
// the sites' transports (peers and heartbeats): while the site is fresh, up when it lists the
// backend and down otherwise; once it is stale, stale when it last listed the backend (served
// only when nothing else is) and down otherwise.
func Status(fresh, listed bool) health.Status {
	switch {
	case fresh && listed:
		return health.Up
	case !fresh && listed:
		return health.Stale
	}
	return health.Down
}

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
		out = append(out, source.Verdict{Key: b.key, Status: Status(!stale, listed), Reason: reason})
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
