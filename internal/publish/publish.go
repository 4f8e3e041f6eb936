// Package publish defines the third kind of component of a gslb block, beside its two kinds of
// input (package source): publishers, which read what the block serves and how its backends'
// health changes, and write it outward. Each is one package:
//
//   - the state file (package statefile's Writer): every backend's health, for the next start;
//   - webhooks (package notify's Webhooks): transitions and override changes, as signed JSON;
//   - this site's heartbeat and the parent's delegation in the operator's DNS (package
//     heartbeats' Keeper, also an input);
//   - the status of k8gb's Gslb resources (package kubernetes' Watcher, also an input);
//   - NOTIFY to the zones' secondaries when a transfer would carry something new (package
//     axfr's Notifier);
//   - CoreDNS-GSLB's compatibility metrics (package cgmetrics);
//   - the fast path's answer log, written to the server block's dnstap plugins (package
//     answerlog).
//
// A publisher reads the snapshot its block serves through a Served function, and the health
// transitions through a Transition method (the engine subscribes every publisher that has one
// to its block's health manager); it never runs on the query path and never blocks a
// transition.
//
// # Adding a publisher
//
// Write one package with one type implementing Publisher, taking what it reads when it is
// made or configured, and add one row to the engine's constructor table
// (internal/engine/components.go) with its options; the recipe of package source applies, the
// role being source.RolePublisher.
package publish

import (
	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/health"
)

// Publisher is an output of a gslb block.
type Publisher interface {
	// Name names the publisher in logs and errors.
	Name() string
	// Start starts writing outward. The engine calls it when the server starts (CoreDNS's
	// OnStartup), never while a Corefile is read: making a publisher starts no goroutine.
	Start()
	// Stop stops writing, after a last write where the publisher has one due. It is safe to
	// call more than once and without Start.
	Stop()
}

// Served returns the snapshot that a block serves now; nil before its first load.
type Served func() *catalog.Snapshot

// TransitionPublisher is a Publisher told of every health transition of its block's backends.
// Transition must not block: it runs in the health manager.
type TransitionPublisher interface {
	Publisher
	Transition(tr health.Transition)
}
