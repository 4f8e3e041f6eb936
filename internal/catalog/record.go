package catalog

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/policy"
	"github.com/meridian-gslb/meridian/internal/published"
)

// Family is an address family of answers: IPv4 (A) or IPv6 (AAAA).
type Family int

// The address families, usable as array indexes.
const (
	IPv4 Family = iota
	IPv6
)

// FamilyOf returns the family asked for by a query type, and false for other types.
func FamilyOf(qtype uint16) (Family, bool) {
	switch qtype {
	case dns.TypeA:
		return IPv4, true
	case dns.TypeAAAA:
		return IPv6, true
	}
	return 0, false
}

// Record is one compiled GSLB record.
type Record struct {
	Config   *config.Record
	Zone     *Zone
	Backends []*Backend
	// extra is what the fail-specific and last-known-good fallbacks answer from, and the
	// localtargets answers of a record that publishes; nil for the other records, the most
	// common case.
	extra *recordExtra

	// Queried is set by queries of the record; the health scheduler reads and clears it to
	// probe records nobody asks for less often.
	Queried atomic.Bool

	counter   atomic.Uint64 // roundrobin rotation, kept across health changes
	view      atomic.Pointer[View]
	refreshMu sync.Mutex  // serialises writers of view; never taken by queries
	ramp      *time.Timer // refreshes the record while a backend ramps (slowstart.go); under refreshMu

	// counts are the query counters of CountAnswer and CountSelected, allocated at the first
	// count: only CoreDNS-GSLB's metrics count, and most records of a big zone are never
	// asked for, so most records never carry them (about 300 bytes a record and 70 a
	// backend). An allocation of their own (of a size class that neither the records, their
	// views nor their backends have), the counters that every query writes are kept apart
	// from what queries read.
	counts atomic.Pointer[queryCounts]
}

// recordExtra are the answers only some records have: what a record with the fail-specific or
// last-known-good fallback answers from while it is down, and the localtargets answers of a
// record that publishes.
type recordExtra struct {
	// ips are the fail-specific addresses, prebuilt as A and AAAA records by family.
	ips [2][]dns.RR
	// cname is the fail-specific CNAME, or nil.
	cname *dns.CNAME
	// lastGood is, per family, the backends that were healthy the last time any was, for the
	// last-known-good fallback; Refresh keeps it, under the record's refreshMu.
	lastGood [2][]*Backend
	// published is, by the backend's index in Record.Backends, its address named
	// localtargets-<record>: for the backends of this site of a record that publishes
	// (config.Record.Publish) that have an address; nil for the others.
	published []dns.RR
}

// publishedRR returns the localtargets answer of the record's backend i, or nil.
func (r *Record) publishedRR(i int) dns.RR {
	if r.extra == nil || i >= len(r.extra.published) {
		return nil
	}
	return r.extra.published[i]
}

// FallbackIPs returns the fail-specific addresses of family f, prebuilt as A or AAAA records;
// nil when there are none.
func (r *Record) FallbackIPs(f Family) []dns.RR {
	if r.extra == nil {
		return nil
	}
	return r.extra.ips[f]
}

// FallbackCNAME returns the fail-specific CNAME, or nil.
func (r *Record) FallbackCNAME() *dns.CNAME {
	if r.extra == nil {
		return nil
	}
	return r.extra.cname
}

// queryCounts are the counters of one record that queries write.
type queryCounts struct {
	answered [2]resolutions  // by failed: answered, answered with the fail-closed rcode
	selected []atomic.Uint64 // by the backend's index in Record.Backends: answers carrying it
}

// queryCounts returns the record's counters, allocating them at the first call.
func (r *Record) queryCounts() *queryCounts {
	if c := r.counts.Load(); c != nil {
		return c
	}
	c := &queryCounts{selected: make([]atomic.Uint64, len(r.Backends))}
	if r.counts.CompareAndSwap(nil, c) {
		return c
	}
	return r.counts.Load()
}

// resolutionBounds are the upper bounds of the resolution histogram: health.CheckBuckets
// (Prometheus's default buckets, CoreDNS-GSLB's), as durations.
var resolutionBounds = func() (b [11]time.Duration) {
	secs := health.CheckBuckets()
	if len(secs) != len(b) {
		panic("catalog: the resolution buckets are not health.CheckBuckets")
	}
	for i, s := range secs {
		b[i] = time.Duration(s * float64(time.Second))
	}
	return b
}()

// resolutions is the histogram of one result's address answers: each answer counted once, in
// the first bucket whose bound is not below the time its selection took (the last one counts
// the longer ones), and the sum of those times.
type resolutions struct {
	buckets [len(resolutionBounds) + 1]atomic.Uint64
	nanos   atomic.Uint64
}

// observe counts one answer whose selection took d.
func (h *resolutions) observe(d time.Duration) {
	i := 0
	for i < len(resolutionBounds) && d > resolutionBounds[i] {
		i++
	}
	h.buckets[i].Add(1)
	h.nanos.Add(uint64(max(d, 0)))
}

// count returns the answers counted.
func (h *resolutions) count() uint64 {
	var n uint64
	for i := range h.buckets {
		n += h.buckets[i].Load()
	}
	return n
}

// add adds o's counts to h.
func (h *resolutions) add(o *resolutions) {
	for i := range h.buckets {
		h.buckets[i].Add(o.buckets[i].Load())
	}
	h.nanos.Add(o.nanos.Load())
}

// Backend is one compiled backend of a record.
type Backend struct {
	Config *config.Backend
	// record is the record the backend is of, whose name its Key starts with.
	record *Record
	// State is the backend's health state: unprobedState, shared, for the backends that are
	// never probed and count as up (alwaysUp).
	State *health.State
	// override is the operator's Override of the configured enable flag.
	override atomic.Int32
	// index is the backend's place in its record's Backends, where its counter of
	// Record.CountSelected is. It sits beside override: a big zone holds many backends, and
	// padding after either would cost 8 bytes a backend.
	index int32
	// drainAt is when a scheduled drain of the backend starts, in Unix nanoseconds; 0 for none.
	drainAt atomic.Int64
}

// CountAnswer counts one address answer of the record, whose selection took d: failed when
// fail-closed answered with its rcode. Two atomic adds (and, the first time, the counters'
// allocation): the query path calls it.
func (r *Record) CountAnswer(failed bool, d time.Duration) {
	i := 0
	if failed {
		i = 1
	}
	r.queryCounts().answered[i].observe(d)
}

// Answers returns the counts of CountAnswer: answered, and failed.
func (r *Record) Answers() (answered, failed uint64) {
	c := r.counts.Load()
	if c == nil {
		return 0, 0
	}
	return c.answered[0].count(), c.answered[1].count()
}

// Resolutions returns the histogram of the answers that failed or not: the count of each
// bucket of health.CheckBuckets (not cumulative; one more counts the longer ones), and the sum
// of the selection times in seconds.
func (r *Record) Resolutions(failed bool) (buckets []uint64, seconds float64) {
	var h *resolutions
	if c := r.counts.Load(); c == nil {
		h = &resolutions{}
	} else if h = &c.answered[0]; failed {
		h = &c.answered[1]
	}
	buckets = make([]uint64, len(h.buckets))
	for i := range h.buckets {
		buckets[i] = h.buckets[i].Load()
	}
	return buckets, time.Duration(h.nanos.Load()).Seconds()
}

// CountSelected counts one address answer of the record that carried b, one of its backends.
func (r *Record) CountSelected(b *Backend) {
	if c := r.queryCounts(); int(b.index) < len(c.selected) && r.Backends[b.index] == b {
		c.selected[b.index].Add(1)
	}
}

// Selected returns the count of CountSelected for b, one of the record's backends.
func (r *Record) Selected(b *Backend) uint64 {
	if c := r.counts.Load(); c != nil && int(b.index) < len(c.selected) && r.Backends[b.index] == b {
		return c.selected[b.index].Load()
	}
	return 0
}

// CarryCounts adds the query counts of old's records and backends to those of s with the same
// name and key, so that a reload does not reset them, and each record's last-known-good
// backends. Queries that old answers after the call are not carried.
func (s *Snapshot) CarryCounts(old *Snapshot) {
	if old == nil {
		return
	}
	records := make(map[string]*Record, len(old.records))
	selected := make(map[string]uint64) // by backend key, the counts that are not 0
	for _, r := range old.records {
		records[r.Name()] = r
		for _, b := range r.Backends {
			if n := r.Selected(b); n > 0 {
				selected[b.Key()] = n
			}
		}
	}
	for _, r := range s.records {
		if o := records[r.Name()]; o != nil {
			if oc := o.counts.Load(); oc != nil {
				c := r.queryCounts()
				c.answered[0].add(&oc.answered[0])
				c.answered[1].add(&oc.answered[1])
			}
			r.carryLastGood(o)
		}
		if len(selected) > 0 {
			r.carrySelected(selected)
		}
	}
}

// carrySelected adds to the counts of CountSelected of r's backends those of selected, by key.
func (r *Record) carrySelected(selected map[string]uint64) {
	var buf [128]byte
	for _, b := range r.Backends {
		if n := selected[string(b.AppendKey(buf[:0]))]; n > 0 {
			r.queryCounts().selected[b.index].Add(n)
		}
	}
}

// carryLastGood gives r, when none of its backends was healthy yet, the last-known-good
// backends of o, its previous version, that r still has; and refreshes r when that changed
// its answer.
func (r *Record) carryLastGood(o *Record) {
	if r.extra == nil || o.extra == nil {
		return // one of them has no last-known-good backends to carry or to take
	}
	r.refreshMu.Lock()
	carried := false
	for f := range r.extra.lastGood {
		if len(r.extra.lastGood[f]) > 0 {
			continue
		}
		o.refreshMu.Lock()
		old := o.extra.lastGood[f]
		o.refreshMu.Unlock()
		for _, ob := range old {
			if i := slices.IndexFunc(r.Backends, func(b *Backend) bool { return sameKey(b, ob) }); i >= 0 {
				r.extra.lastGood[f] = append(r.extra.lastGood[f], r.Backends[i])
				carried = true
			}
		}
	}
	r.refreshMu.Unlock()
	if carried {
		r.Refresh()
	}
}

// Override is an operator's decision on a backend that takes precedence over the enable flag
// of its configuration, without editing the file (admin API, drains).
type Override int32

// The overrides.
const (
	// NoOverride serves the backend as its configuration says.
	NoOverride Override = iota
	// ForceEnable serves the backend even when its configuration disables it.
	ForceEnable
	// ForceDisable never serves the backend (disabled or drained).
	ForceDisable
	// ForceUp serves the backend as healthy whatever its probes say (and even when its
	// configuration disables it): the operator knows it works.
	ForceUp
)

// SetOverride sets the backend's override and reports whether it changed. Call the record's
// Refresh afterwards for answers to follow.
func (b *Backend) SetOverride(o Override) bool {
	return Override(b.override.Swap(int32(o))) != o
}

// SetDrainAt sets when a scheduled drain of the backend starts (the zero time for none), and
// reports whether it changed. Before that instant the backend is served as its override and
// health say, but from one record_ttl before it the record's answers carry the drain TTL (see
// View.TTL). Call the record's Refresh afterwards, and again at the instants of NextTTLChange.
func (b *Backend) SetDrainAt(t time.Time) bool {
	var n int64
	if !t.IsZero() {
		n = t.UnixNano()
	}
	return b.drainAt.Swap(n) != n
}

// DrainAt returns when a scheduled drain of the backend starts, or the zero time.
func (b *Backend) DrainAt() time.Time {
	if n := b.drainAt.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// Override returns the backend's current override.
func (b *Backend) Override() Override { return Override(b.override.Load()) }

// Enabled reports whether the backend may be served: its configuration's enable flag, unless
// an override says otherwise, or a scheduled drain started (SetDrainAt).
func (b *Backend) Enabled() bool {
	if at := b.drainAt.Load(); at != 0 && time.Now().UnixNano() >= at {
		return false // a scheduled drain started: drained, whatever the override says yet
	}
	switch b.Override() {
	case ForceEnable, ForceUp:
		return true
	case ForceDisable:
		return false
	}
	return b.Config.Enable
}

// Healthy reports whether the backend is enabled and up, or forced up (ForceUp).
func (b *Backend) Healthy() bool {
	return b.Enabled() && (b.Override() == ForceUp || b.alwaysUp() || b.State.Status() == health.Up)
}

// servable reports whether a refresh serves the backend: it is healthy, or stale when the
// family serves its stale backends (see View.Degraded).
func (b *Backend) servable(stale bool) bool {
	return b.Healthy() || stale && b.Enabled() && b.Status() == health.Stale
}

// Status returns the backend's health status, Up for backends that are never probed.
func (b *Backend) Status() health.Status {
	if b.alwaysUp() {
		return health.Up
	}
	return b.State.Status()
}

// alwaysUp reports whether the backend is never probed and counts as up: its state is the
// shared unprobedState (a flag beside it would make every backend 8 bytes larger).
func (b *Backend) alwaysUp() bool { return b.State == unprobedState }

// inFamily reports whether the backend can answer a query of family f. Host-name backends
// (answered as CNAME) serve both families.
func (b *Backend) inFamily(f Family) bool {
	ip := b.Config.IP
	return !ip.IsValid() || (f == IPv4) == ip.Is4()
}

// View is a record's candidate sets at one moment of health: what the query path selects from.
type View struct {
	// Healthy holds, per family, the healthy and enabled backends in the order of Sets.
	Healthy [2][]*Backend
	// Sets are the mode's prepared selections over Healthy.
	Sets [2]*policy.Set
	// Enabled holds, per family, every enabled backend (the fail-open answer).
	Enabled [2][]*Backend
	// Configured tells, per family, whether the record has any backend of it at all.
	Configured [2]bool
	// AnyHealthy is set when some backend of the record, of either family, is healthy.
	AnyHealthy bool
	// Degraded tells, per family, that no backend of it is healthy and its stale ones (other
	// sites' targets not confirmed for the split-brain threshold) are served instead: a stale
	// answer beats an empty one.
	Degraded [2]bool
	// Failover tells, per family, that the failover mode answers from a worse priority than
	// the best of the record's enabled backends.
	Failover [2]bool
	// TTL is, per family, the TTL of the record's answers (its fallback answers included),
	// and TTLReason why: record_ttl while healthy, degraded_ttl while degraded, the drain TTL
	// ahead of a scheduled drain (see ChooseTTL).
	TTL       [2]uint32
	TTLReason [2]TTLReason
	// extra is what only some records' views have, nil when there is none of it (read it
	// with Extra): most records of a big zone have none, and a view of each is kept.
	extra *ViewExtra
}

// ViewExtra is the part of a view that only the records of some modes, fallbacks and
// deployments have.
type ViewExtra struct {
	// Chains are, for mode chain, per family, the chain prepared over Healthy (in its order);
	// nil for the other modes.
	Chains [2]*policy.Chain
	// Geo holds, for the geo modes, per family, the selection table over every backend of the
	// family, healthy or not (so that an explanation can say why one was skipped), in the
	// order of GeoBackends. It is nil for the other modes.
	Geo         [2]*policy.GeoTable
	GeoBackends [2][]*Backend
	// Published holds, per family, the localtargets-<record> answer: the healthy backends of
	// this site, for the other sites (config.Record.Publish).
	Published [2][]dns.RR
	// PublishedRTTs is the localrtt-<record> answer: this site's RTT to each of the record's
	// backends, for the other sites (config.Record.PublishRTT); nil otherwise.
	PublishedRTTs []dns.RR
	// LastGood holds, per family, the backends that were healthy the last time any was, still
	// enabled: the last-known-good fallback's answer (empty until one ever was, and for the
	// other fallback policies).
	LastGood [2][]*Backend
	// NextTTLChange is the next instant at which the TTL changes by time alone (a scheduled
	// drain's lead-in or one of its steps); zero for none. The record must be refreshed then.
	NextTTLChange time.Time
}

// noExtra is the extra part of the views that have none.
var noExtra ViewExtra

// Extra returns the part of the view that only some records have: the zero ViewExtra, shared,
// when it has none. It must not be modified.
func (v *View) Extra() *ViewExtra {
	if v.extra == nil {
		return &noExtra
	}
	return v.extra
}

// empty reports whether x holds nothing.
func (x *ViewExtra) empty() bool {
	for f := range 2 {
		if x.Chains[f] != nil || x.Geo[f] != nil || len(x.GeoBackends[f]) > 0 || len(x.Published[f]) > 0 || len(x.LastGood[f]) > 0 {
			return false
		}
	}
	return len(x.PublishedRTTs) == 0 && x.NextTTLChange.IsZero()
}

// Key returns the backend's BackendKey. A backend does not keep it (a big zone has hundreds
// of thousands): a probed backend's is its health state's (health.State.Key, the health
// manager's string), an unprobed backend's is made on each call. AppendKey makes it without
// allocating.
func (b *Backend) Key() string {
	if key := b.State.Key(); key != "" {
		return key
	}
	return config.BackendKey(b.record.Name(), b.Config)
}

// AppendKey appends the backend's BackendKey to dst.
func (b *Backend) AppendKey(dst []byte) []byte {
	return config.AppendBackendKey(dst, b.record.Name(), b.Config)
}

// FallbackApplies reports whether family f must be answered by the fallback policy: no backend
// of f is healthy, and either the record has backends of f or the whole record is down. A
// family the record does not serve stays NODATA while the other family is healthy.
func (v *View) FallbackApplies(f Family) bool {
	return len(v.Healthy[f]) == 0 && (v.Configured[f] || !v.AnyHealthy)
}

// inOrder returns healthy in the selection set's order: enabled itself when that is the same
// backends in the same order (every enabled backend healthy, the set in configuration order,
// the common case), so that the view keeps one slice for both; a new slice otherwise. A
// view's slices are never written once it is published.
func inOrder(healthy []*Backend, order []int, enabled []*Backend) []*Backend {
	same := len(order) == len(enabled)
	for i := 0; same && i < len(order); i++ {
		same = healthy[order[i]] == enabled[i]
	}
	if same {
		return slices.Clip(enabled)
	}
	out := make([]*Backend, len(order))
	for i, idx := range order {
		out[i] = healthy[idx]
	}
	return out
}

// run returns list, backends of the record in their order, as a subslice of Backends when it
// is a run of them (most views list every backend of a family, and a big zone keeps a view of
// each record), else as a copy; nil when list is empty.
func (r *Record) run(list []*Backend) []*Backend {
	if len(list) == 0 {
		return nil
	}
	if i, j := int(list[0].index), int(list[0].index)+len(list); j <= len(r.Backends) && slices.Equal(r.Backends[i:j], list) {
		return r.Backends[i:j:j]
	}
	return slices.Clone(list)
}

// sameKey reports whether a and b have the same BackendKey, without making either.
func sameKey(a, b *Backend) bool {
	var x, y [128]byte
	return string(a.AppendKey(x[:0])) == string(b.AppendKey(y[:0]))
}

// unprobedState is the health state of every backend that is never probed (alwaysUp): nothing
// writes it, so they share one instead of a state each in the health source, and it is how
// they are told apart.
var unprobedState = &health.State{}

func newRecord(z *Zone, rc *config.Record, hs HealthSource) *Record {
	r := &Record{Config: rc, Zone: z, Backends: make([]*Backend, 0, len(rc.Backends))}
	backends := make([]Backend, len(rc.Backends)) // one allocation for the record's backends
	for i := range rc.Backends {
		bc := &rc.Backends[i]
		b := &backends[i]
		*b = Backend{Config: bc, record: r, index: int32(i), State: unprobedState}
		if bc.Probed() {
			b.State = hs.State(config.BackendKey(rc.Name, bc)) // the health source keeps the key
		}
		if rc.Publish && !bc.Remote && bc.IP.IsValid() {
			if r.extra == nil {
				r.extra = &recordExtra{published: make([]dns.RR, len(rc.Backends))}
			}
			r.extra.published[i] = addressRR(published.LocalTargetsPrefix+rc.Name, rc.TTL, bc)
		}
		r.Backends = append(r.Backends, b)
	}
	fb := &rc.Settings().Fallback
	if m := fb.Mode; m != config.FallbackFailSpecific && m != config.FallbackLastKnownGood {
		return r
	}
	if r.extra == nil {
		r.extra = &recordExtra{}
	}
	for _, ip := range fb.IPs {
		f := IPv6
		if ip.Is4() {
			f = IPv4
		}
		r.extra.ips[f] = append(r.extra.ips[f], addressRR(rc.Name, rc.TTL, &config.Backend{IP: ip}))
	}
	if fb.CNAME != "" {
		r.extra.cname = &dns.CNAME{Hdr: header(rc.Name, dns.TypeCNAME, rc.TTL), Target: fb.CNAME}
	}
	return r
}

func header(name string, rrtype uint16, ttl uint32) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: rrtype, Class: dns.ClassINET, Ttl: ttl}
}

func addressRR(name string, ttl uint32, b *config.Backend) dns.RR {
	switch {
	case !b.IP.IsValid():
		return &dns.CNAME{Hdr: header(name, dns.TypeCNAME, ttl), Target: b.Address}
	case b.IP.Is4():
		rr := &aRecord{}
		rr.ip = b.IP.As4()
		rr.A = dns.A{Hdr: header(name, dns.TypeA, ttl), A: rr.ip[:]}
		return &rr.A
	default:
		rr := &aaaaRecord{}
		rr.ip = b.IP.As16()
		rr.AAAA = dns.AAAA{Hdr: header(name, dns.TypeAAAA, ttl), AAAA: rr.ip[:]}
		return &rr.AAAA
	}
}

// aRecord and aaaaRecord are an address record and the bytes of its address, made in one
// allocation.
type (
	aRecord struct {
		dns.A
		ip [4]byte
	}
	aaaaRecord struct {
		dns.AAAA
		ip [16]byte
	}
)

// NewRR returns the backend's answer record for owner (its record's name when empty) with
// ttl: a *dns.A or *dns.AAAA for an address, a *dns.CNAME for a host name. It is made anew
// for each answer (one allocation), rather than kept for every backend of a big zone.
func (b *Backend) NewRR(owner string, ttl uint32) dns.RR {
	if owner == "" {
		owner = b.record.Name()
	}
	return addressRR(owner, ttl, b.Config)
}

// IsAddressOf reports whether the backend answers an address record of family f: it is an
// address (not a host name) of that family.
func (b *Backend) IsAddressOf(f Family) bool {
	return b.Config.IP.IsValid() && b.Config.IP.Is4() == (f == IPv4)
}

// Name returns the record's name: its configuration's (a copy of its own took 16 bytes a
// record).
func (r *Record) Name() string { return r.Config.Name }

// MarkQueried notes that the record was queried. It writes only when the flag is clear, so
// that queries on every core do not contend for the cache line.
func (r *Record) MarkQueried() {
	if !r.Queried.Load() {
		r.Queried.Store(true)
	}
}

// View returns the record's current candidate sets. It never blocks.
func (r *Record) View() *View { return r.view.Load() }

// Refresh rebuilds the record's candidate sets from the current health words and publishes
// them. Call it after any of the record's backends changed state.
func (r *Record) Refresh() {
	r.refreshMu.Lock()
	defer r.refreshMu.Unlock()
	v := &View{}
	var x ViewExtra
	now := time.Now()
	var rampNext time.Time // the next step of a slow start, zero when none ramps
	for f := IPv4; f <= IPv6; f++ {
		stale := r.onlyStale(f)
		v.Degraded[f] = stale
		// The family's backends are gathered on the stack (most records have a few), and only
		// what the view keeps is copied to the heap.
		var healthyBuf, enabledBuf [4]*Backend
		var candsBuf [4]policy.Candidate
		healthy, enabled, cands := healthyBuf[:0], enabledBuf[:0], candsBuf[:0]
		for _, b := range r.Backends {
			if !b.inFamily(f) {
				continue
			}
			v.Configured[f] = true
			if !b.Enabled() {
				continue
			}
			enabled = append(enabled, b)
			if rr := r.publishedRR(int(b.index)); rr != nil && b.Healthy() {
				x.Published[f] = append(x.Published[f], rr)
			}
			if b.servable(stale) {
				healthy = append(healthy, b)
				cands = append(cands, policy.Candidate{
					Priority: int(b.Config.Priority),
					Weight:   int(b.Config.Weight),
					Addr:     b.Config.IP,
					Host:     b.Config.Address,
					Share:    b.Config.Share(),
					RTT:      b.State.RTT(),
					Load:     b.RelativeLoad(),
					Vantages: b.State.VantageRTTs(),
				})
			}
		}
		v.Enabled[f] = r.run(enabled)
		var next time.Time
		if healthy, cands, next = r.slowStart(now, healthy, cands); !next.IsZero() && (rampNext.IsZero() || next.Before(rampNext)) {
			rampNext = next
		}
		if policy.IsGeo(r.Config.Mode) {
			x.Geo[f], x.GeoBackends[f] = r.geoTable(f, stale)
		}
		set := policy.Prepare(r.Config.Mode, cands, policy.OptionsOf(r.Config), &r.counter)
		v.Failover[f] = r.Config.Mode == config.ModeFailover && len(healthy) > 0 &&
			(bestPriority(healthy) > bestPriority(v.Enabled[f]) || set.SkippedGroups())
		v.Sets[f] = set
		v.AnyHealthy = v.AnyHealthy || len(healthy) > 0
		v.Healthy[f] = inOrder(healthy, set.Order, v.Enabled[f])
		if r.Config.Mode == config.ModeChain {
			x.Chains[f] = r.chain(v.Healthy[f], cands, set.Order)
		}
		if r.Config.Settings().Fallback.Mode == config.FallbackLastKnownGood {
			if len(healthy) > 0 {
				r.extra.lastGood[f] = v.Healthy[f]
			}
			x.LastGood[f] = slices.DeleteFunc(slices.Clone(r.extra.lastGood[f]), func(b *Backend) bool { return !b.Enabled() })
		}
		r.chooseTTL(v, &x, f, now)
	}
	if x.PublishedRTTs = r.publishedRTTs(); !x.empty() {
		extra := x // x itself stays on the stack
		v.extra = &extra
	}
	r.view.Store(v)
	r.Zone.changes.Add(1)
	r.scheduleRamp(now, rampNext)
}

// chain prepares the record's chain over healthy, the family's healthy backends in the set's
// order, whose candidates are cands in the order given to policy.Prepare (order maps one to the
// other).
func (r *Record) chain(healthy []*Backend, cands []policy.Candidate, order []int) *policy.Chain {
	ordered := make([]policy.Candidate, len(order))
	geoCands := make([]policy.GeoCandidate, len(order))
	for i, idx := range order {
		ordered[i] = cands[idx]
		geoCands[i] = geoCandidate(healthy[i], true)
	}
	s := r.Config.Steering()
	return policy.PrepareChain(policy.ChainOptions{Steps: s.Chain, MaxAnswers: s.MaxAnswers, RTTTolerance: s.RTTTolerance, MaxLoad: s.MaxLoad, HashPrefix: s.HashPrefix, MinHealthy: s.MinHealthy},
		ordered, geoCands, &r.counter)
}

// onlyStale reports whether no enabled backend of family f is healthy and some are stale.
func (r *Record) onlyStale(f Family) bool {
	stale := false
	for _, b := range r.Backends {
		if !b.inFamily(f) || !b.Enabled() {
			continue
		}
		if b.Healthy() {
			return false
		}
		stale = stale || b.Status() == health.Stale
	}
	return stale
}

// bestPriority returns the best (lowest) priority of backends, which must not be empty.
func bestPriority(backends []*Backend) int {
	best := backends[0].Config.Priority
	for _, b := range backends[1:] {
		best = min(best, b.Config.Priority)
	}
	return int(best)
}

// geoTable prepares the geo modes' table over the record's backends of family f, serving its
// stale backends when stale is set.
func (r *Record) geoTable(f Family, stale bool) (*policy.GeoTable, []*Backend) {
	var backends []*Backend
	var cands []policy.GeoCandidate
	for _, b := range r.Backends {
		if !b.inFamily(f) {
			continue
		}
		backends = append(backends, b)
		cands = append(cands, geoCandidate(b, b.servable(stale)))
	}
	return policy.PrepareGeo(r.Config.Mode, cands), backends
}

// geoCandidate returns b as the geo modes see it, healthy or not.
func geoCandidate(b *Backend, healthy bool) policy.GeoCandidate {
	c, l := b.Config, b.Config.Labels()
	return policy.GeoCandidate{
		Healthy:     healthy,
		Priority:    int(c.Priority),
		Weight:      int(c.Weight),
		Share:       c.Share(),
		Country:     l.Country,
		Subdivision: l.Subdivision,
		City:        l.City,
		Continent:   l.Continent,
		Location:    l.Location,
		ASN:         l.ASN,
		Lat:         l.Latitude,
		Lon:         l.Longitude,
		HasCoords:   l.HasCoords,
	}
}
