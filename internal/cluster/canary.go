package cluster

// The vantage self-check of quorum mode: an instance connects to a few canaries (its peers,
// stable services of the operator) from its probe sources. When most of them fail, the fault is
// more likely its own network path than every canary at once: the instance is isolated, its
// votes count in no verdict, and it follows the others' verdicts.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/health/probe"
)

// canaryTimeout returns how long one canary connection may take: half the canary interval, at
// most the Redis dial timeout.
func canaryTimeout(interval time.Duration) time.Duration { return min(interval/2, dialTimeout) }

// watchCanaries checks the canaries every redis_canary_interval until the client closes.
func (c *Client) watchCanaries() {
	defer c.wg.Done()
	ticker := time.NewTicker(c.opts.Quorum.CanaryInterval)
	defer ticker.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-ticker.C:
			c.checkCanaries()
		}
	}
}

// checkCanaries connects to every canary at once, from this instance's probe sources, and
// isolates the instance when more than half of them fail; the instance is no longer isolated
// once at least half of them answer. Changes are logged.
func (c *Client) checkCanaries() {
	canaries := c.opts.Quorum.Canaries
	timeout := canaryTimeout(c.opts.Quorum.CanaryInterval)
	dialer := probe.SourceDialer(c.opts.ProbeSources, timeout)
	errs := make([]error, len(canaries))
	var wg sync.WaitGroup
	for i, addr := range canaries {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(c.ctx, timeout)
			defer cancel()
			conn, err := dialer.DialContext(ctx, "tcp", addr)
			if err == nil {
				_ = conn.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if c.ctx.Err() != nil {
		return
	}
	var failed []string
	for i, err := range errs {
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", canaries[i], err))
		}
	}
	c.mu.Lock()
	canariesFailedGauge.Add(float64(len(failed) - c.canariesFailed))
	c.canariesFailed = len(failed)
	c.mu.Unlock()
	isolated := 2*len(failed) > len(canaries)
	if c.isolated.Swap(isolated) == isolated {
		return
	}
	if isolated {
		isolatedGauge.Inc()
		c.log.Warningf("quorum: this instance is isolated: %d of %d canaries failed (%s): its votes count in no verdict, it follows the other instances'",
			len(failed), len(canaries), strings.Join(failed, "; "))
		return
	}
	isolatedGauge.Dec()
	c.log.Infof("quorum: this instance is no longer isolated: %d of %d canaries answer", len(canaries)-len(failed), len(canaries))
}

// dropCanaryGauges takes this client's share out of the canary gauges, when it closes.
func (c *Client) dropCanaryGauges() {
	c.mu.Lock()
	canariesFailedGauge.Sub(float64(c.canariesFailed))
	c.canariesFailed = 0
	c.mu.Unlock()
	if c.isolated.Swap(false) {
		isolatedGauge.Dec()
	}
}
