// Package source defines the two kinds of input that the engine merges into the snapshot that
// queries read:
//
//   - BackendSets: which records a zone has and which backends each record has. The YAML zone
//     files (package files); the records' discovery blocks: HTTP lists, Consul services,
//     SVCB/HTTPS records (package discovery); Kubernetes objects (package kubernetes); the
//     other sites' backends, read from their Meridians (package sites) or from their
//     heartbeats in the operator's DNS (package heartbeats).
//   - Verdicts: what state the backends an input judges are in, reported to the block's
//     health manager (a Reporter) as a status and a reason. The sites and heartbeats sources
//     judge the other sites' backends by what those sites published; the Kubernetes source
//     judges objects' addresses by their readiness. The manager is the one store of health
//     words that the query path reads: it also holds the verdicts of the local probes and,
//     through its coordinator, of the Redis fleet, and the state file seeds it at start.
//
// An input may be both, and it may also publish what the block serves (package publish): the
// Kubernetes source writes the Gslb resources' status, the heartbeats source writes this
// site's heartbeat.
//
// No input is ever called on the query path: the engine calls Merge when it builds a snapshot,
// and inputs call back (Watch's changed, or the Reporter) when they have something new.
//
// # Adding an input
//
//  1. Write one package, internal/source/<name>, with one type for the input. It reads the
//     options it needs from config.Options and nothing else of the engine. As a source of
//     backend sets it implements BackendSets, or has a method Source() BackendSets that gives
//     each Corefile load a view of its own (for inputs that outlive a reload). As a source of
//     verdicts it takes a Reporter (or MeasureReporter) when it is made, reports through it,
//     and implements Verdicts. With background work it has Start and Stop: Start runs when
//     the server starts (CoreDNS's OnStartup), never while the Corefile is read.
//  2. Add one row to the engine's constructor table (internal/engine/components.go): its name,
//     its roles, whether it outlives a Corefile reload and which options restart it, when the
//     options want it, how to build it, and what it is told after each load.
//  3. Add its options: config.Options and their defaults (internal/config), the Corefile
//     option table (plugin/gslb), docs/configuration.md with its row in "What survives a
//     reload".
//
// The engine's TestEveryInputIsRegistered fails until the package has its row and the row's
// roles match what the type implements; TestReloadRulesAreDocumented until the documentation
// names what restarts it.
package source

import (
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// Role is what an input gives the engine; an input may have several.
type Role uint8

// The roles of an input.
const (
	// RoleBackendSets: the input adds or changes records and backends (BackendSets).
	RoleBackendSets Role = 1 << iota
	// RoleVerdicts: the input judges the health of some backends (Verdicts).
	RoleVerdicts
	// RolePublisher: the input also writes what the block serves outward (package publish).
	RolePublisher
)

// BackendSets is a source of backend sets.
type BackendSets interface {
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

// Verdicts is a source of health verdicts: it reports the status of each backend it judges to
// the Reporter it was made with, whenever that status changes. ReportAll reports every current
// one again; the engine calls it after each snapshot's backends reached the health manager,
// whose new ones start unknown.
type Verdicts interface {
	ReportAll()
}

// Logger is where sources report what they cannot act on. CoreDNS's plugin logger is one.
type Logger interface {
	Infof(format string, args ...any)
	Warningf(format string, args ...any)
}

// Reporter takes a source's verdicts on the backends whose health it reports
// (config.Backend.External): health.Manager is one. key is the backend's key
// (config.BackendKey); reason says why, naming who judged.
type Reporter interface {
	Report(key string, st health.Status, reason string) bool
}

// MeasureReporter is a Reporter that also takes the RTTs that other vantage sites measured of
// a backend, by site (the sites source, with measure_remote): health.Manager is one.
type MeasureReporter interface {
	Reporter
	ReportRTTs(key string, rtts map[string]time.Duration) bool
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
