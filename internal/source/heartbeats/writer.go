package heartbeats

import (
	"context"
	"net/netip"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/exchange"
)

// attemptsPerRound bounds the updates one zone gets in a round: the first and two retries.
// Writes are so rate limited to three an interval, whatever fails.
const attemptsPerRound = 3

// firstBackoff is the wait before the first retry (an eighth of the interval when that is
// shorter); each retry waits twice as long.
const firstBackoff = 250 * time.Millisecond

// writer is this site's heartbeat in one zone.
type writer struct {
	kind string
	zone config.HeartbeatZone
	// written is the time the last successful write carried.
	written time.Time
	// healing is set while the heartbeat is dated ahead (self-heal); it ends after two rounds
	// in a row wrote.
	healing   bool
	wroteLast bool
	// lastErr is the last error logged, so that one cause is logged once.
	lastErr string
	// own is the site's heartbeat as the zone's server last returned it.
	own   Record
	ownOK bool
}

// write writes this site's heartbeat into w's zone: at the current time, or up to
// self_heal_interval ahead when the heartbeat the zone holds is older than healAfter while the
// site is healthy (its writes are failing: refused, dropped or throttled).
func (k *Keeper) write(ctx context.Context, w *writer, reader *exchange.Client, u updater, up []netip.Addr, total int) {
	k.mu.Lock()
	opts, site := k.opts, k.site
	healthyFor := k.healthyFor(w.kind)
	k.mu.Unlock()
	own, ownOK := readRecord(ctx, reader, w.zone, site)
	now := time.Now()
	k.mu.Lock()
	w.own, w.ownOK = own, ownOK
	vouched := w.written // what the zone holds: as read back, or as last written
	if ownOK {
		vouched = own.Time
	}
	if len(up) > 0 && now.Sub(vouched) > healAfter(healthyFor, opts.Interval) && !w.healing && !vouched.IsZero() {
		w.healing = true
		k.log.Warningf("heartbeats: this site's %s heartbeat in %s is %s old while the site is healthy: dating it up to %s ahead (self-heal)",
			w.kind, w.zone.Zone, now.Sub(vouched).Round(time.Second), opts.SelfHeal)
	}
	rec := Record{Site: site, Region: opts.Region, Time: now, Up: up, Total: total}
	if w.healing {
		rec.Time = now.Add(opts.SelfHeal)
	}
	if d := opts.Delegation; d != nil {
		rec.NS, rec.Glue = d.NS, d.Glue
	}
	k.mu.Unlock()

	m := replaceTXT(w.zone.Zone, Name(site, w.zone.Zone), rec.TXT())
	ctx, span := otel.Tracer("meridian/heartbeats").Start(ctx, "rfc2136 update",
		trace.WithAttributes(attribute.String("gslb.zone", w.zone.Zone), attribute.String("gslb.kind", w.kind)))
	defer span.End()
	var res outcome
	var err error
	backoff := min(firstBackoff, opts.Interval/8)
	for attempt := 0; attempt < attemptsPerRound; attempt++ {
		if attempt > 0 && !sleep(ctx, backoff) {
			return
		}
		backoff *= 2
		res, err = u.send(ctx, w.zone.Servers, m)
		countUpdate(w.kind, res)
		if err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil {
		w.wroteLast = false
		if msg := err.Error(); msg != w.lastErr {
			k.log.Warningf("heartbeats: writing this site's %s heartbeat: %v", w.kind, err)
			w.lastErr = msg
		}
		return
	}
	if w.lastErr != "" {
		k.log.Infof("heartbeats: this site's %s heartbeat is written again", w.kind)
		w.lastErr = ""
	}
	w.written = rec.Time
	if w.healing && w.wroteLast {
		w.healing = false // writes pass again: back to the current time from the next round
	}
	w.wroteLast = true
}

// healAfter is how old a healthy site's heartbeat may be in a zone before the site heals it:
// one and a half intervals (a round's writes all failed), or a quarter of the zone's healthy
// duration when that is longer, so that most of the duration is left for a dated write to
// pass before the other sites see the heartbeat stale (15 s of 30 with the defaults).
func healAfter(healthy, interval time.Duration) time.Duration {
	return max(interval*3/2, healthy/4)
}

// sleep waits d, and reports false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
