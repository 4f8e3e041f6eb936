package sites

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/meridian-gslb/meridian/internal/health"
)

// verdict is the status of one other site's backend, and why.
type verdict struct {
	key    string
	status health.Status
	reason string
}

// judgeLocked returns the verdict on every other site's backend of the plan that this site
// can judge: not those of a site never heard from, nor of records not read from it yet.
func (f *Fleet) judgeLocked(now time.Time) []verdict {
	out := make([]verdict, 0, len(f.plan.remote))
	for _, b := range f.plan.remote {
		s := f.sites[b.site]
		if s == nil || !s.heard() {
			continue
		}
		targets, read := s.targets[b.record]
		if !read {
			continue
		}
		listed := slices.Contains(targets, b.ip)
		v := verdict{key: b.key}
		switch {
		case f.staleLocked(s, now) && listed:
			v.status, v.reason = health.Stale, f.staleReason(s, now)
		case f.staleLocked(s, now):
			v.status, v.reason = health.Down, fmt.Sprintf("not in site %s's localtargets when last read; %s", s.name, f.staleReason(s, now))
		case listed:
			v.status, v.reason = health.Up, fmt.Sprintf("in site %s's localtargets", s.name)
		default:
			v.status, v.reason = health.Down, fmt.Sprintf("not in site %s's localtargets", s.name)
		}
		out = append(out, v)
	}
	return out
}

// staleReason says why s is stale.
func (f *Fleet) staleReason(s *site, now time.Time) string {
	return fmt.Sprintf("site %s is stale: its heartbeat has not changed for %s (split_brain_threshold %s)",
		s.name, now.Sub(s.lastAdvance).Round(time.Second), f.opts.SplitBrainThreshold)
}

// fmtAddrs is the comparable form of a placeholder's targets.
func fmtAddrs(addrs []netip.Addr) string { return fmt.Sprint(addrs) }
