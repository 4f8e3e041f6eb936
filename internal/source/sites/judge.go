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
	key, site string
	status    health.Status
	reason    string
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
		v := verdict{key: b.key, site: b.site}
		switch {
		case f.staleLocked(s, now) && listed:
			v.status, v.reason = health.Stale, f.staleReason(s, now)
		case f.staleLocked(s, now):
			v.status, v.reason = health.Down, "not in its localtargets when last read; "+f.staleReason(s, now)
		case listed:
			v.status, v.reason = health.Up, "in its localtargets"
		default:
			v.status, v.reason = health.Down, "not in its localtargets"
		}
		out = append(out, v)
	}
	return out
}

// staleReason says why s is stale.
func (f *Fleet) staleReason(s *site, now time.Time) string {
	return fmt.Sprintf("the site is stale: its heartbeat has not changed for %s (split_brain_threshold %s)",
		now.Sub(s.lastAdvance).Round(time.Second), f.opts.SplitBrainThreshold)
}

// fmtAddrs is the comparable form of a placeholder's targets.
func fmtAddrs(addrs []netip.Addr) string { return fmt.Sprint(addrs) }
