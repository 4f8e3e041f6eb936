package engine

import (
	"net/netip"

	"github.com/meridian-gslb/meridian/internal/answerlog"
	"github.com/meridian-gslb/meridian/internal/canary"
	"github.com/meridian-gslb/meridian/internal/cgmetrics"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/drill"
	"github.com/meridian-gslb/meridian/internal/notify"
	"github.com/meridian-gslb/meridian/internal/publish/externaldns"
	"github.com/meridian-gslb/meridian/internal/publish/resigner"
	"github.com/meridian-gslb/meridian/internal/published"
	"github.com/meridian-gslb/meridian/internal/shares"
	"github.com/meridian-gslb/meridian/internal/shift"
	"github.com/meridian-gslb/meridian/internal/source"
	"github.com/meridian-gslb/meridian/internal/source/discovery"
	"github.com/meridian-gslb/meridian/internal/source/files"
	"github.com/meridian-gslb/meridian/internal/source/heartbeats"
	"github.com/meridian-gslb/meridian/internal/source/kubernetes"
	"github.com/meridian-gslb/meridian/internal/source/sites"
	"github.com/meridian-gslb/meridian/internal/timeline"
	"github.com/meridian-gslb/meridian/internal/traces"
)

// components is the constructor table: every input and publisher a gslb block may have, each
// built from the block's options by its row, in the order the sources of backend sets merge.
// The engine's code names none of them; TestEveryInputIsRegistered checks that every package
// under internal/source has its row, and that each row's roles are what its type implements.
//
// Adding an input or a publisher is one package, one row here and its options (see package
// source's documentation).
var components = []component{
	row(component{
		name: "zone files", roles: source.RoleBackendSets,
		on: always,
	}, func(b *blockEnv) *files.Zones { return files.New(b.opts) }, nil),

	// The last good sets of the records' discovery blocks outlive reloads, so that a new load
	// starts from them and their backends keep their health; each load fetches with its own
	// view (discovery.Memory.Source).
	row(component{
		name: "discovery", roles: source.RoleBackendSets,
		on: always, survives: true,
	}, func(*blockEnv) *discovery.Memory { return discovery.NewMemory() }, nil),

	// Before heartbeats and sites: what the Kubernetes objects stand for is other sites'
	// placeholders too.
	row(component{
		name: "kubernetes", roles: source.RoleBackendSets | source.RoleVerdicts | source.RolePublisher,
		on: always, survives: true,
		restart:        func(o config.Options) any { return o.Kubernetes },
		restartOptions: "kubernetes (every option of its block)",
		check: func(zones []*config.Zone, o config.Options) ([]*config.Zone, error) {
			return kubernetes.Check(zones, o.Kubernetes) // what the objects stand for is read at run time: nothing yet
		},
	}, func(b *blockEnv) *kubernetes.Watcher {
		return kubernetes.NewWatcher(b.opts.Kubernetes, b.manager, b.log)
	}, func(w *kubernetes.Watcher, e *Engine) {
		w.Configure(e.opts.Sites.Site, e.Snapshot)
	}),

	// Before sites: it notes the other sites' backends before the placeholders are expanded.
	row(component{
		name: "heartbeats", roles: source.RoleBackendSets | source.RoleVerdicts | source.RolePublisher,
		on:       func(o config.Options) bool { return o.Heartbeats.Enabled() },
		survives: true,
		restart:  func(o config.Options) any { return o.Sites.Site }, restartOptions: "site",
		check: func(zones []*config.Zone, o config.Options) ([]*config.Zone, error) {
			return heartbeats.NewKeeper(o.Sites.Site, o.Heartbeats, nil, nil).Source().Merge(zones)
		},
	}, func(b *blockEnv) *heartbeats.Keeper {
		return heartbeats.NewKeeper(b.opts.Sites.Site, b.opts.Heartbeats, b.manager, b.log)
	}, func(k *heartbeats.Keeper, e *Engine) {
		k.Configure(e.opts.Heartbeats, e.opts.ZoneOrigins(), func() ([]netip.Addr, int) { return heartbeats.Summary(e.Snapshot()) }, e.log)
		k.KeepDS(e.parentDS)
	}),

	row(component{
		name: "sites", roles: source.RoleBackendSets | source.RoleVerdicts,
		on:       func(o config.Options) bool { return o.Sites.Enabled() },
		survives: true,
		restart:  func(o config.Options) any { return o.Sites.Site }, restartOptions: "site",
		check: func(zones []*config.Zone, o config.Options) ([]*config.Zone, error) {
			// What the placeholders stand for is learned at run time: none yet.
			zones, _ = sites.NewFleet(o.Sites, nil, nil).Source().Merge(zones)
			return zones, nil
		},
	}, func(b *blockEnv) *sites.Fleet {
		return sites.NewFleet(b.opts.Sites, b.manager, b.log)
	}, func(f *sites.Fleet, e *Engine) {
		f.Configure(e.opts.Sites, e.log)
	}),

	// The delegation through ExternalDNS: each round it reads the block's zones, the
	// ZoneDelegations the Kubernetes watcher holds and what the sites fleet knows of the other
	// clusters, and writes the DNSEndpoints.
	row(component{
		name: "delegation through externaldns", roles: source.RolePublisher,
		on:       func(o config.Options) bool { return o.Kubernetes.ExternalDNS.Enabled() },
		survives: true,
		restart:  func(o config.Options) any { return o.Kubernetes }, restartOptions: "kubernetes (every option of its block)",
	}, func(b *blockEnv) *externaldns.Keeper {
		return externaldns.New(b.opts.Kubernetes)
	}, func(d *externaldns.Keeper, e *Engine) {
		var view func() published.View
		if f, ok := instanceOf[*sites.Fleet](e); ok {
			view = f.View
		}
		kube, _ := instanceOf[*kubernetes.Watcher](e)
		opts, site, origins := e.opts.Kubernetes.ExternalDNS, e.opts.Sites.Site, e.opts.ZoneOrigins()
		d.Configure(opts, func() externaldns.State {
			return externaldns.StateOf(site, opts, origins, view, kube.ZoneDelegations())
		}, e.log)
	}),

	// The webhooks belong to the health manager, whose transitions they send; a reload that
	// changes their options replaces the notifier without a restart.
	row(component{
		name: "webhooks", roles: source.RolePublisher,
		on: always, survives: true,
	}, func(b *blockEnv) *notify.Webhooks {
		return notify.NewWebhooks(b.instance)
	}, func(w *notify.Webhooks, e *Engine) {
		w.Configure(e.opts.Webhooks, e.opts.Sites.Site, e.log)
	}),

	// The failover timelines follow the health manager's transitions to the first answers.
	row(component{
		name: "failover timelines", roles: source.RolePublisher,
		on: always, survives: true,
	}, func(*blockEnv) *timeline.Keeper { return timeline.New() }, func(k *timeline.Keeper, e *Engine) {
		k.Configure(e.Snapshot, e.fleet())
	}),

	// Where traffic goes: samples the records' traffic counts (which traffic_shares has the
	// answers count) into the last hour; it keeps it across reloads.
	row(component{
		name: "traffic shares", roles: source.RolePublisher,
		on: func(o config.Options) bool { return o.TrafficShares }, survives: true,
	}, func(*blockEnv) *shares.Keeper { return shares.New() }, func(k *shares.Keeper, e *Engine) {
		k.Configure(e.Snapshot)
	}),

	// The OpenTelemetry traces: the process's tracer provider while a block asks for it.
	row(component{
		name: "traces", roles: source.RolePublisher,
		on:       func(o config.Options) bool { return o.Traces.Endpoint != "" },
		survives: true,
		restart:  func(o config.Options) any { return o.Traces }, restartOptions: "traces_endpoint, traces_insecure, traces_service",
	}, func(b *blockEnv) *traces.Exporter { return traces.New(b.opts.Traces, b.log) }, nil),

	// The fast path's answer log: the adapter attaches the server block's dnstap plugins to it
	// (Engine.AnswerLog) and hands it the fast path's answers; the plugin chain's are the
	// dnstap plugins' own.
	row(component{
		name: "answer log", roles: source.RolePublisher,
		on: func(o config.Options) bool { return o.AnswerLog.Enable && o.FastPath.Enable },
	}, func(b *blockEnv) *answerlog.Log { return answerlog.New(b.opts.AnswerLog) }, nil),

	// The signer's rounds: the due signatures of the zones that dnssec blocks sign, made again
	// off the query path, and their metrics. Each load has its own, with its own keys.
	row(component{
		name: "dnssec", roles: source.RolePublisher,
		on: func(o config.Options) bool { return len(o.DNSSEC) > 0 },
	}, func(b *blockEnv) *resigner.Resigner { return resigner.New(b.log) }, func(r *resigner.Resigner, e *Engine) {
		r.Configure(e.Snapshot, signerList(e.signers))
	}),

	// The drills: what-if runs on a schedule, reported to the webhooks; a live drill drains
	// through the admin API (the drain guard on). Their last reports outlive reloads.
	row(component{
		name: "drills", roles: source.RolePublisher,
		on:       func(o config.Options) bool { return len(o.Safety.Drills) > 0 },
		survives: true,
	}, func(*blockEnv) *drill.Runner { return drill.NewRunner() }, func(d *drill.Runner, e *Engine) {
		d.Configure(e.opts, e.Snapshot, e.changer(), e.reportDrill, e.log)
	}),

	// The staged shifts' controller: it reads their signals and writes their steps and
	// rollbacks through the admin API, where the shifts are made (without it, it has nothing to
	// do); their weights are applied with the overrides.
	row(component{
		name: "shifts", roles: source.RolePublisher,
		on: always, survives: true,
	}, func(*blockEnv) *shift.Controller { return shift.NewController() }, func(c *shift.Controller, e *Engine) {
		c.Configure(e.shiftSetup())
	}),

	// The canaries: resolvers and parent servers asked what they answer, against this
	// instance's answers; mismatches go to the metrics, the API and the webhooks.
	row(component{
		name: "canaries", roles: source.RolePublisher,
		on:       func(o config.Options) bool { return o.Safety.Canary.Enabled() },
		survives: true,
	}, func(*blockEnv) *canary.Runner { return canary.NewRunner() }, func(r *canary.Runner, e *Engine) {
		r.Configure(e.canarySetup())
	}),

	row(component{
		name: "coredns-gslb metrics", roles: source.RolePublisher,
		on: func(o config.Options) bool { return o.CoreDNSGSLBMetrics },
	}, newCGMetrics, func(m *cgmetrics.Member, e *Engine) {
		m.Configure(e.opts.ZoneOrigins(), e.Snapshot)
	}),
}

// always is the on of the components every block has.
func always(config.Options) bool { return true }

// newCGMetrics returns the CoreDNS-GSLB metrics publisher of a block, over its health manager's
// check statistics.
func newCGMetrics(b *blockEnv) *cgmetrics.Member { return cgmetrics.NewMember(b.manager.CheckStats) }
