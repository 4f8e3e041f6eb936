package rrl

import (
	"math/rand/v2"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/config"
)

// Outcome is how a response was counted.
type Outcome uint8

// The outcomes, the decision label of the metric.
const (
	// Allowed: under its limit.
	Allowed Outcome = iota
	// Dropped: over its limit, not sent.
	Dropped
	// Slipped: over its limit, sent truncated (or BADCOOKIE).
	Slipped
	// LoggedOnly: over its limit with log-only set: sent, and counted here.
	LoggedOnly
	// Exempt: the client is in an exempt network.
	Exempt
	// Cookie: the client sent a valid server cookie, which proves its address: not limited.
	Cookie
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"allowed", "dropped", "slipped", "log_only", "exempt", "cookie"}

// stripes spread the counts over cache lines, so that the loops of several processors
// counting at once do not take the same line from each other at every query.
const stripes = 16

// counts are the process's decisions, by stripe, kind and outcome, each stripe padded to its
// own cache lines.
type counts struct {
	c [stripes]struct {
		n [numKinds][numOutcomes]atomic.Uint64
		_ [64]byte
	}
	desc *prometheus.Desc
}

// decisions is the collector of every limiter's decisions, in the default registry that
// CoreDNS's prometheus plugin serves.
var decisions = &counts{desc: prometheus.NewDesc(
	prometheus.BuildFQName(config.MetricsNamespace, config.MetricsSubsystem, "rrl_responses_total"),
	"UDP responses through response rate limiting, by kind and decision (allowed, dropped, slipped, log_only, exempt, cookie).",
	[]string{"kind", "decision"}, nil)}

func init() { prometheus.MustRegister(decisions) }

// count adds one response of kind k with outcome o.
func count(k Kind, o Outcome) {
	// The stripe is random (the runtime's generator of the thread: no shared state), not
	// counted round robin, which would make every query write one shared word.
	decisions.c[rand.Uint32N(stripes)].n[k][o].Add(1)
}

// Count adds one response of kind k with outcome o, for the decisions taken before a limiter
// is asked (a valid cookie).
func Count(k Kind, o Outcome) { count(k, o) }

// Describe implements prometheus.Collector.
func (c *counts) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector: the sums over the stripes. Every series exists from
// the start.
func (c *counts) Collect(ch chan<- prometheus.Metric) {
	for k := range numKinds {
		for o := range numOutcomes {
			var n uint64
			for i := range c.c {
				n += c.c[i].n[k][o].Load()
			}
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n), kindNames[k], outcomeNames[o])
		}
	}
}
