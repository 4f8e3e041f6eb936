// Package source defines the two kinds of input that the engine merges into the snapshot that
// queries read:
//
//   - Backends: backend sets, which records a zone has and which backends each record has.
//     Today the YAML zone files (package files) and the records' discovery blocks: HTTP lists,
//     Consul services, SVCB/HTTPS records (package discovery); Kubernetes Services' LoadBalancer
//     addresses (package kubernetes); remote sites' localtargets.
//   - Verdicts: health verdicts, what state each backend is in. Today the health manager, which
//     holds local probes and, through its coordinator, the Redis fleet in lock, none or quorum
//     mode and passive agents, and which the state file (package statefile) seeds at start;
//     the sources that judge backends without probing them (sites, heartbeats, Kubernetes
//     readiness) report their Verdicts to it, as a Reporter.
//
// A new input is one package implementing one of the two, registered in the engine; neither
// the CoreDNS adapter nor the query path changes, and no source is ever called on the query
// path: the engine calls them when it builds a snapshot, and they call back when they have
// something new.
package source

import (
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// Backends is a source of backend sets.
type Backends interface {
	// Name names the source in logs and errors: "zone files", "kubernetes", "site eu".
	Name() string
	// Merge returns zones with the source's records and backends merged in, from what the
	// source has read last; the engine calls the sources in order, each with what the ones
	// before it returned (the first with nil), whenever it builds a snapshot. Merge must not
	// wait on the network: a source that fetches does so in the background and merges its
	// last good set. An error keeps the current snapshot serving.
	Merge(zones []*config.Zone) ([]*config.Zone, error)
	// Watch starts following the source, calling changed (from a goroutine of the source)
	// whenever Merge would return something new, until stop is called. The engine calls it
	// when the server starts.
	Watch(changed func(), log Logger) (stop func(), err error)
}

// Verdicts is a source of health verdicts. It holds one health word per backend key, which the
// catalog's backends read on the query path, and keeps it up to date for the backends it
// judges. health.Manager is one.
type Verdicts interface {
	// State returns the health word of the backend with key, the same word for the same key
	// for as long as the source lives.
	State(key string) *health.State
	// Sync hands the source the backends of a new snapshot to judge (specs) and the keys of
	// every backend of it (keep), whose words it keeps; the words of other keys may go.
	Sync(specs []health.Spec, keep map[string]bool)
	// Start starts judging; Stop ends it. Both may be called more than once.
	Start()
	Stop()
}

// Logger is where sources report what they cannot act on. CoreDNS's plugin logger is one.
type Logger interface {
	Infof(format string, args ...any)
	Warningf(format string, args ...any)
}

// Reporter takes a source's verdicts on the backends whose health it reports
// (config.Backend.External): health.Manager is one. key is the backend's catalog key; reason
// says why, naming who judged.
type Reporter interface {
	Report(key string, st health.Status, reason string) bool
}

// MeasureReporter is a Reporter that also takes the RTTs that other vantage sites measured of
// a backend, by site (the sites source, with measure_remote): health.Manager is one.
type MeasureReporter interface {
	Reporter
	ReportRTTs(key string, rtts map[string]time.Duration) bool
}

// Judge is a source that reports Verdicts on the backends it judges. ReportAll reports every
// current one again; the engine calls it after each snapshot's backends reached the health
// manager, whose new ones start unknown.
type Judge interface {
	ReportAll()
}

// Verdict is a source's status of one backend, and why.
type Verdict struct {
	Key    string
	Status health.Status
	Reason string
}

// Report hands verdicts to r.
func Report(r Reporter, verdicts []Verdict) {
	for _, v := range verdicts {
		r.Report(v.Key, v.Status, v.Reason)
	}
}
