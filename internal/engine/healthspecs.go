package engine

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"net"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/health/probe"
	"github.com/meridian-gslb/meridian/internal/parts"
)

// probeSet is the compiled health checks of the probed backends of a snapshot: backends with
// checks that are neither assume_healthy nor passive, and enabled by their configuration or by
// an operator's override. Backends an operator disabled (drained) are still probed, so that
// their health is known before they are enabled again. Passive backends get a spec without
// checks: in cluster mode their results come from the fleet. External backends (a source
// reports their health) get Spec.External: other sites' backends (remote: the sites source
// reports what their site publishes, and their checks are their own site's to run) without
// checks, unless this site measures their RTT (config.Backend.MeasureOnly: with checks that
// only measure); the others, such as a Kubernetes Service's addresses, with their checks too,
// which must pass as well as the report.
//
// It keeps the compiled checks only: the health manager is given the backends' specs one at a
// time (specs), made from the snapshot, so that a load never holds a spec for each of hundreds
// of thousands of backends at once (the manager keeps none either).
type probeSet struct {
	snap   *catalog.Snapshot
	checks []*probe.Compiled // the checks of the backends checked here, in order
	n      int               // how many backends get a spec
}

// compileProbes compiles the health checks of snap's probed backends. Errors name the check's
// file position, each once, in the order of the backends.
//
// The records are compiled in parts on every core (compileParts); all have finished when it
// returns.
func compileProbes(snap *catalog.Snapshot) (*probeSet, error) {
	return compileProbesOn(snap, runtime.GOMAXPROCS(0))
}

// compileProbesOn is compileProbes in at most cores parts.
func compileProbesOn(snap *catalog.Snapshot, cores int) (*probeSet, error) {
	ps := &probeSet{snap: snap}
	recs := snap.Records()
	ends := make([]int, len(recs)) // ends[i]: how many checks the records up to i have
	nc := 0
	for i, rec := range recs {
		for _, b := range rec.Backends {
			if specified(b) {
				ps.n++
				if checkedHere(b.Config) {
					nc += len(b.Config.Checks().HealthChecks)
				}
			}
		}
		ends[i] = nc
	}
	ps.checks = make([]*probe.Compiled, nc)
	errs := compileParts(recs, ends, ps.checks, max(1, min(cores, nc/minPart)))
	if len(errs) > 0 {
		ps.release()
		return nil, errors.Join(errs...)
	}
	return ps, nil
}

// minPart is the fewest checks that a part of a load's compiling (compileParts) has: fewer
// are compiled sooner than a goroutine starts.
const minPart = 4096

// compileParts compiles the checks of recs into checks, in order (ends: how many checks the
// records up to each have), in n parts of about as many checks each (parts.Run), each with a
// Compiler of NewCompilers. It returns the errors, each once, in the order of the backends.
func compileParts(recs []*catalog.Record, ends []int, checks []*probe.Compiled, n int) []error {
	compilers := probe.NewCompilers(n)
	bounds := make([]int, n+1) // part i compiles recs[bounds[i]:bounds[i+1]]
	for i := 1; i < n; i++ {   // a part ends with the record whose checks reach its share
		bounds[i] = bounds[i-1] + sort.SearchInts(ends[bounds[i-1]:], i*len(checks)/n) + 1
	}
	bounds[n] = len(recs)
	errs := make([][]error, n)
	parts.Run(n, func(i int) {
		from, start := bounds[i], 0 // the part's first record and first check
		if from > 0 {
			start = ends[from-1]
		}
		errs[i] = compileRecords(compilers[i], recs[from:bounds[i+1]], checks[start:])
	})
	var all []error
	for _, part := range errs {
		all = appendNew(all, part...)
	}
	return all
}

// compileRecords compiles the checks of recs' probed backends with compiler into checks, in
// order. It returns the errors, each once.
func compileRecords(compiler *probe.Compiler, recs []*catalog.Record, checks []*probe.Compiled) []error {
	var errs []error
	k := 0
	for _, rec := range recs {
		rc := rec.Config
		for _, b := range rec.Backends {
			bc := b.Config
			if !specified(b) || !checkedHere(bc) {
				continue
			}
			hcs := bc.Checks()
			target := probe.Target{Host: hostOf(bc), IP: bc.IP, Port: bc.Port, Record: rec.Name(), Priority: int(bc.Priority)}
			for _, hc := range hcs.HealthChecks {
				c, err := compiler.Compile(hc, target, cmp.Or(hcs.Timeout, rc.Settings().ScrapeTimeout))
				if err != nil {
					errs = appendNew(errs, err) // once, for the addresses of one Kubernetes object
				}
				checks[k] = c // nil for a check that failed
				k++
			}
		}
	}
	return errs
}

// appendNew appends to errs those of more whose text errs does not have yet.
func appendNew(errs []error, more ...error) []error {
	for _, err := range more {
		if !slices.ContainsFunc(errs, func(e error) bool { return e.Error() == err.Error() }) {
			errs = append(errs, err)
		}
	}
	return errs
}

// release frees what the compiled checks hold, for a set that is not given to a manager.
func (ps *probeSet) release() {
	for _, c := range ps.checks {
		if c != nil { // a check that failed to compile
			probe.Release(c.Prober)
		}
	}
}

// sync gives the health manager m the backends of ps: their specs, and the keys of the
// snapshot's other backends whose health words m keeps (keptKeys). When m probes nothing yet
// (a server's start), every spec gets a new backend, which the goroutine that makes the specs
// prepares too (health.Manager.Prepare); a reload keeps most backends, and prepares none.
func (ps *probeSet) sync(m *health.Manager) {
	var prepare func(*health.Spec)
	if m.Backends() == 0 {
		prepare = m.Prepare
	}
	m.SyncSeq(ps.n, specsAhead(ps.n, ps.specs(), prepare), keptKeys(ps.snap))
}

// specs yields the spec of each backend of ps, in order. The spec is reused for the next one:
// its receiver keeps nothing of it but copies.
func (ps *probeSet) specs() iter.Seq[*health.Spec] {
	return func(yield func(*health.Spec) bool) {
		var spec health.Spec
		k := 0 // the first check of the next backend checked here, in ps.checks
		for _, rec := range ps.snap.Records() {
			rc := rec.Config
			refresh := rec.Refresh // one method value for the record's specs, not two per backend
			for _, b := range rec.Backends {
				bc := b.Config
				if !specified(b) {
					continue
				}
				name := hostOf(bc)
				if bc.Port != 0 {
					name = net.JoinHostPort(name, strconv.Itoa(int(bc.Port)))
				}
				checks := bc.Checks()
				spec = health.Spec{
					Key: b.Key(), State: b.State, Record: rec.Name(), Backend: name,
					Rise: checks.Rise, Fall: checks.Fall,
					Interval: rc.Settings().ScrapeInterval, Retries: rc.Settings().ScrapeRetries,
					Activity:    &rec.Activity,
					OnChange:    refresh,
					OnMeasure:   refresh, // RTT and load: the answers change, not the health others see
					Capacity:    checks.Capacity,
					Passive:     bc.Passive,
					External:    bc.External,
					MeasureOnly: bc.MeasureOnly,
				}
				if checkedHere(bc) {
					n := len(checks.HealthChecks)
					spec.Checks = ps.checks[k : k+n : k+n]
					k += n
				}
				if !yield(&spec) {
					return
				}
			}
		}
	}
}

// hostOf returns the host of the probes of bc: its address as netip spells it (one spelling
// however the file wrote it) or its host name without the trailing dot. The configuration's
// own string is returned when it is that spelling: the parser gives repeated addresses one
// string, which the health manager then keeps as the backend's name instead of a copy.
func hostOf(bc *config.Backend) string {
	if !bc.IP.IsValid() {
		return strings.TrimSuffix(bc.Address, ".")
	}
	var buf [64]byte
	if string(bc.IP.AppendTo(buf[:0])) == bc.Address {
		return bc.Address
	}
	return bc.IP.String()
}

// keptKeys returns the keys of the backends of snap whose health words the manager must keep
// although Sync may give them no backend: the probed ones that get no spec (disabled ones,
// whose words the catalog holds) and the passive ones (a manager without a fleet ignores
// them). The words of the backends Sync is given stay without being named (see
// health.Manager.SyncSeq), so that a load of hundreds of thousands of probed backends makes no
// map of their keys: the map is nil when no backend needs it.
func keptKeys(snap *catalog.Snapshot) map[string]bool {
	var keep map[string]bool
	for _, rec := range snap.Records() {
		for _, b := range rec.Backends {
			if b.Config.Probed() && (b.Config.Passive || !specified(b)) {
				if keep == nil {
					keep = make(map[string]bool)
				}
				keep[b.Key()] = true
			}
		}
	}
	return keep
}

// checkedHere reports whether the checks of a specified backend b run here: not passive (the
// fleet reports its results), and not another site's (that site runs them) unless this site
// measures it.
func checkedHere(b *config.Backend) bool { return !b.Passive && !(b.Remote && !b.MeasureOnly) }

// specified reports whether b gets a health spec: it is to be served at all, and its
// configuration has it probed (or reported by a source).
func specified(b *catalog.Backend) bool { return enabledOrForced(b) && b.Config.Probed() }

// enabledOrForced reports whether b's configuration or its override asks for it to be served
// at all; whether its health is probed is the configuration's Probed.
func enabledOrForced(b *catalog.Backend) bool {
	return b.Config.Enable || b.Override() == catalog.ForceEnable || b.Override() == catalog.ForceUp
}

// checkPlaceholders reports the backends that stand for what a site publishes (a site and no
// address) left in zones: the block names no site of its own, so no source replaced them.
func checkPlaceholders(zones []*config.Zone) error {
	var errs []error
	for _, z := range zones {
		for _, r := range z.Records {
			for _, b := range r.Backends {
				if b.IsPlaceholder() {
					errs = append(errs, fmt.Errorf("%s: backend of %s: site %s without an address stands for what that site publishes, which needs this block's own site (the site and peers options)", b.Pos, r.Name, b.Site()))
				}
			}
		}
	}
	return errors.Join(errs...)
}
