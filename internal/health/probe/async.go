package probe

import (
	"net/netip"
	"time"
)

// asyncStarter is a Prober that can also run on the poller, without a goroutine. startAsync
// returns false when this probe cannot (a host name to resolve, TLS), and otherwise calls done
// exactly once, from the poller's goroutine.
type asyncStarter interface {
	startAsync(p *Poller, sources []netip.Addr, deadline time.Time, done func(Result)) bool
}

// Run runs one probe of pr on the poller, bounded by deadline, when pr can run there: then it
// calls done exactly once, from the poller's goroutine, and returns true. It returns false,
// and never calls done, for a probe that needs a goroutine of its own (TLS, redirects, host
// names, the protocols without a poller exchange): run its Probe instead.
func (p *Poller) Run(pr Prober, deadline time.Time, done func(Result)) bool {
	as, ok := pr.(asyncStarter)
	return ok && as.startAsync(p, nil, deadline, done)
}
