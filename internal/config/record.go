package config

import (
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// recordKeys are the keys of a record; all but backends may also be set under defaults.
var recordKeys = []string{"mode", "record_ttl", "degraded_ttl", "drain_ttl", "failover_target", "owner", "description",
	"scrape_interval", "scrape_timeout", "scrape_retries", "fallback_policy", "alpn", "hash_order", "hash_prefix_v4",
	"hash_prefix_v6", "min_healthy", "slow_start", "chain", "max_answers", "rtt_tolerance", "max_load", "drain_guard", "discovery", "kubernetes", "backends"}

// defaultKeys are the record keys that defaults may set: all but discovery, kubernetes and
// backends.
var defaultKeys = recordKeys[:len(recordKeys)-3]

// recordAliases are other spellings of record keys: the name CoreDNS-GSLB documents, and
// whether it is deprecated there (a warning asks to rename it).
var recordAliases = map[string]struct {
	key        string
	deprecated bool
}{
	"failover_policy": {"fallback_policy", true},
	"svcb_alpn":       {"alpn", false},
}

// opt is a record setting that the record or the defaults may set.
type opt[T any] struct {
	v         T
	set       bool
	inherited bool // taken from defaults
	pos       Position
	path      string
}

func (o *opt[T]) put(v T, pos Position, path string) {
	*o = opt[T]{v: v, set: true, pos: pos, path: path}
}

func (o *opt[T]) inherit(d opt[T]) {
	if !o.set && d.set {
		*o = d
		o.inherited = true
	}
}

func (o opt[T]) or(def T) T {
	if o.set {
		return o.v
	}
	return def
}

// recordOpts are the settings of a record other than its backends.
type recordOpts struct {
	mode               opt[Mode]
	ttl                opt[uint32]
	degradedTTL        opt[uint32]
	drainTTL           opt[uint32]
	failoverTarget     opt[time.Duration]
	owner, description opt[string]
	interval, timeout  opt[time.Duration]
	retries            opt[int]
	fallback           opt[Fallback]
	alpn               opt[[]string]
	hashOrder          opt[HashOrder]
	hashV4, hashV6     opt[int]
	minHealthy         opt[int]
	chain              opt[[]ChainStep]
	maxAnswers         opt[int]
	rttTolerance       opt[Tolerance]
	maxLoad            opt[float64]
	slowStart          opt[time.Duration]
	guard              opt[DrainGuard]
}

// inherit fills the settings the record leaves unset from the defaults (a shallow merge).
func (o *recordOpts) inherit(d recordOpts) {
	o.mode.inherit(d.mode)
	o.ttl.inherit(d.ttl)
	o.degradedTTL.inherit(d.degradedTTL)
	o.drainTTL.inherit(d.drainTTL)
	o.failoverTarget.inherit(d.failoverTarget)
	o.owner.inherit(d.owner)
	o.description.inherit(d.description)
	o.interval.inherit(d.interval)
	o.timeout.inherit(d.timeout)
	o.retries.inherit(d.retries)
	o.fallback.inherit(d.fallback)
	o.alpn.inherit(d.alpn)
	o.hashOrder.inherit(d.hashOrder)
	o.hashV4.inherit(d.hashV4)
	o.hashV6.inherit(d.hashV6)
	o.minHealthy.inherit(d.minHealthy)
	o.chain.inherit(d.chain)
	o.maxAnswers.inherit(d.maxAnswers)
	o.rttTolerance.inherit(d.rttTolerance)
	o.maxLoad.inherit(d.maxLoad)
	o.slowStart.inherit(d.slowStart)
	o.guard.inherit(d.guard)
}

// opt parses one record setting into o; it reports false for a key that is not a setting.
func (p *parser) opt(o *recordOpts, e entry, path string) bool {
	kpath := child(path, e.key)
	pos := p.Pos(YAMLResolve(e.v))
	key := e.key
	if a, ok := recordAliases[key]; ok {
		key = a.key
		if a.deprecated {
			p.WarnAt(p.Pos(e.k), kpath, "%s is deprecated: rename it %s", e.key, a.key)
		}
	}
	if o.isSet(key) {
		p.Errorf(e.k, kpath, "%s is set twice (as %s and as %s): keep one", key, key, aliasOf(key))
		return true
	}
	switch key {
	case "mode":
		if s, ok := p.str(e.v, kpath); ok {
			if m, err := ParseMode(s); err != nil {
				p.Errorf(YAMLResolve(e.v), kpath, "%v", err)
			} else {
				o.mode.put(m, pos, kpath)
			}
		}
	case "record_ttl":
		if v, ok := p.integer(e.v, kpath, 0, math.MaxInt32); ok {
			o.ttl.put(uint32(v), pos, kpath)
		}
	case "degraded_ttl":
		if v, ok := p.integer(e.v, kpath, 0, math.MaxInt32); ok {
			o.degradedTTL.put(uint32(v), pos, kpath)
		}
	case "drain_ttl":
		if v, ok := p.integer(e.v, kpath, 0, math.MaxInt32); ok {
			o.drainTTL.put(uint32(v), pos, kpath)
		}
	case "failover_target":
		if d, ok := p.duration(e.v, kpath); ok {
			o.failoverTarget.put(d, pos, kpath)
		}
	case "owner":
		if s, ok := p.str(e.v, kpath); ok {
			o.owner.put(s, pos, kpath)
		}
	case "description":
		if s, ok := p.str(e.v, kpath); ok {
			o.description.put(s, pos, kpath)
		}
	case "scrape_interval":
		if d, ok := p.duration(e.v, kpath); ok {
			o.interval.put(d, pos, kpath)
		}
	case "scrape_timeout":
		if d, ok := p.duration(e.v, kpath); ok {
			o.timeout.put(d, pos, kpath)
		}
	case "scrape_retries":
		if v, ok := p.integer(e.v, kpath, 0, math.MaxInt32); ok {
			o.retries.put(int(v), pos, kpath)
		}
	case "fallback_policy":
		if f, ok := p.fallback(e.v, kpath); ok {
			o.fallback.put(f, pos, kpath)
		}
	case "alpn":
		if l, ok := p.alpn(e.v, kpath); ok {
			o.alpn.put(l, pos, kpath)
		}
	case "hash_order":
		if s, ok := p.str(e.v, kpath); ok {
			if h := HashOrder(strings.ToLower(s)); slices.Contains(hashOrders, string(h)) {
				o.hashOrder.put(h, pos, kpath)
			} else {
				p.Errorf(e.v, kpath, "%v", unknownChoice("hash order", s, hashOrders))
			}
		}
	case "chain":
		if steps, ok := p.chainSteps(e.v, kpath); ok {
			o.chain.put(steps, pos, kpath)
		}
	case "max_answers":
		if v, ok := p.integer(e.v, kpath, 0, 64); ok {
			o.maxAnswers.put(int(v), pos, kpath)
		}
	case "rtt_tolerance":
		if s, ok := p.str(e.v, kpath); ok {
			if t, err := ParseTolerance(s); err != nil {
				p.Errorf(YAMLResolve(e.v), kpath, "%v", err)
			} else {
				o.rttTolerance.put(t, pos, kpath)
			}
		}
	case "max_load":
		if v, ok := p.number(e.v, kpath, 0, 1e6); ok {
			o.maxLoad.put(v, pos, kpath)
		}
	case "hash_prefix_v4", "hash_prefix_v6":
		dst, bits := &o.hashV4, 32
		if key == "hash_prefix_v6" {
			dst, bits = &o.hashV6, 128
		}
		if v, ok := p.integer(e.v, kpath, 0, int64(bits)); ok {
			dst.put(int(v), pos, kpath)
		}
	case "min_healthy":
		if v, ok := p.integer(e.v, kpath, 1, math.MaxInt32); ok {
			o.minHealthy.put(int(v), pos, kpath)
		}
	case "slow_start":
		if d, ok := p.slowStart(e.v, kpath); ok {
			o.slowStart.put(d, pos, kpath)
		}
	case "drain_guard":
		if g, ok := p.drainGuard(e.v, kpath); ok {
			o.guard.put(g, pos, kpath)
		}
	default:
		return false
	}
	return true
}

// SlowStartModes are the modes whose selection slow_start ramps.
var SlowStartModes = []Mode{ModeWeighted, ModeRoundRobin, ModeChain}

// slowStart parses slow_start: a duration, or 0 for off.
func (p *parser) slowStart(n *yaml.Node, path string) (time.Duration, bool) {
	if s := YAMLResolve(n); s.Kind == yaml.ScalarNode && strings.TrimSpace(s.Value) == "0" {
		return 0, true
	}
	return p.duration(n, path)
}

var hashOrders = []string{string(HashOrderAddress), string(HashOrderText)}

// onlyWith reports a setting the record itself writes (not its defaults) for a mode other than
// the ones it applies to.
func onlyWith[T any](p *parser, o opt[T], key string, got Mode, modes ...Mode) {
	if o.set && !o.inherited && !slices.Contains(modes, got) {
		names := make([]string, len(modes))
		for i, m := range modes {
			names[i] = string(m)
		}
		p.ErrorAt(o.pos, o.path, "%s only applies with mode %s, not %s", key, strings.Join(names, " or "), got)
	}
}

// isSet reports whether the setting key (a record key, not an alias) was already parsed
// into o: the only way that happens within one mapping is a key and its alias both written.
func (o *recordOpts) isSet(key string) bool {
	switch key {
	case "fallback_policy":
		return o.fallback.set
	case "alpn":
		return o.alpn.set
	}
	return false
}

// aliasOf returns the alias of a record key, for messages.
func aliasOf(key string) string {
	for alias, a := range recordAliases {
		if a.key == key {
			return alias
		}
	}
	return key
}

func (p *parser) alpn(n *yaml.Node, path string) ([]string, bool) {
	l, ok := p.strList(n, path)
	for i, s := range l {
		if len(s) > 255 {
			p.Errorf(YAMLResolve(n).Content[i], index(path, i), "an ALPN protocol id is at most 255 bytes long")
			ok = false
		}
	}
	return l, ok
}

// scrapeTimes returns the effective scrape interval and timeout. A timeout longer than the
// interval is reported once, where it is written: under the record, or under defaults.
func (p *parser) scrapeTimes(o *recordOpts) (time.Duration, time.Duration) {
	interval := o.interval.or(DefaultScrapeInterval)
	if !o.timeout.set {
		return interval, min(DefaultScrapeTimeout, interval)
	}
	timeout := o.timeout.v
	if timeout > interval {
		switch {
		case !o.timeout.inherited:
			p.ErrorAt(o.timeout.pos, o.timeout.path, "scrape_timeout %v is longer than scrape_interval %v", timeout, interval)
		case o.interval.set && !o.interval.inherited:
			p.ErrorAt(o.interval.pos, o.interval.path, "scrape_interval %v is shorter than scrape_timeout %v set in defaults", interval, timeout)
		}
	}
	return interval, timeout
}

// lowTTLs checks degraded_ttl and drain_ttl against the record's record_ttl ttl, where they
// are written (the record, or defaults), and returns them as Record holds them: nil when not
// set.
func (p *parser) lowTTLs(o *recordOpts, ttl uint32) (degraded, drain *uint32) {
	return p.lowTTL(o.degradedTTL, "degraded_ttl", ttl, ": a degraded answer must not be cached longer than a healthy one"),
		p.lowTTL(o.drainTTL, "drain_ttl", ttl, "")
}

// lowTTL is lowTTLs for the setting o, written under key; note ends its message.
func (p *parser) lowTTL(o opt[uint32], key string, ttl uint32, note string) *uint32 {
	if !o.set {
		return nil
	}
	if o.v > ttl {
		p.ErrorAt(o.pos, o.path, "%s %d is above record_ttl %d%s", key, o.v, ttl, note)
	}
	v := o.v
	return &v
}

// defaults parses the defaults mapping: record settings merged under every record.
func (p *parser) defaults(n *yaml.Node) recordOpts {
	const path = "defaults"
	var o recordOpts
	for _, e := range p.entries(n, path) {
		switch {
		case YAMLIsNull(e.v):
		case e.key == "backends":
			p.Errorf(e.k, child(path, e.key), "backends have no defaults; list them under each record")
		case e.key == "discovery", e.key == "kubernetes":
			p.Errorf(e.k, child(path, e.key), "%s has no defaults; set it under each record", e.key)
		case !p.opt(&o, e, path):
			p.unknownKey(e, path, defaultKeys)
		}
	}
	p.scrapeTimes(&o)
	return o
}

// records parses the records of n into z. first holds the line of every record name seen so
// far, across the chunks of a file parsed in parts.
func (p *parser) records(z *Zone, n *yaml.Node, defs recordOpts, profiles profileSet, first map[string]int) {
	list := p.entries(n, "records")
	for _, e := range list {
		name := CanonicalName(e.key)
		valid := true
		if err := checkName(name, true); err != nil {
			p.Errorf(e.k, recordPath(e.key), "invalid record name %q: %v", e.key, err)
			valid = false
		} else if !inZone(name, z.Origin) {
			p.Errorf(e.k, recordPath(e.key), "%s is outside zone %s", name, z.Origin)
			valid = false
		} else if line, dup := first[name]; dup {
			p.Errorf(e.k, recordPath(e.key), "duplicate record %s (first at line %d)", name, line)
			valid = false
		}
		errs := p.Len()
		rec := p.quietRecord(name, e, defs, profiles)
		if valid {
			first[name] = e.k.Line
			z.Records = append(z.Records, rec)
			if p.chunked {
				p.walked = append(p.walked, walkedRecord{key: e.key, pos: p.Pos(e.k), errs: errs})
			}
		}
	}
}

// recordPath returns the path of the record written under key.
func recordPath(key string) string { return "records[" + strconv.Quote(key) + "]" }

// quietRecord is record without the paths of the record's fields, which only its problems
// name: when the record has none (nor warnings), none is made (for bench/bigzone.sh's mixed
// zone of 100,000 records, 83 MB in 1.4 million allocations). A record with problems is parsed
// again, with its paths, once what the first walk recorded is forgotten.
func (p *parser) quietRecord(name string, e entry, defs recordOpts, profiles profileSet) Record {
	m := p.mark()
	rec := p.record(name, e, noPath, defs, profiles)
	if !p.recordedSince(m) {
		return rec
	}
	p.rollback(m)
	return p.record(name, e, recordPath(e.key), defs, profiles)
}

// addBackend appends b, parsed from item at path, to rec's backends when ok and when no backend
// before it has its address (or site, or Kubernetes object) and port: first holds those of the
// backends before it. A backend with none of them (its errors recorded) is left out.
func (p *parser) addBackend(rec *Record, first map[backendID]*yaml.Node, b *Backend, ok bool, item *yaml.Node, path string) {
	if b.Address == "" && b.Site() == "" && b.Kubernetes() == nil {
		return
	}
	id := backendID{name: b.Address, port: b.Port}
	switch {
	case b.IP.IsValid():
		id.ip, id.name = b.IP, ""
	case b.IsPlaceholder():
		id.name = "site " + b.Site()
	case b.IsKubernetes():
		id.name = "kubernetes " + b.Kubernetes().Key()
	}
	if f := first[id]; f != nil {
		p.Errorf(YAMLResolve(item), path, "duplicate backend %s (first at line %d)", id, f.Line)
		return
	}
	first[id] = YAMLResolve(item)
	if ok {
		rec.Backends = append(rec.Backends, *b)
	}
}

// backendID is what tells the backends of a record apart: the address, else the host name,
// the site ("site " and its name) or the Kubernetes object ("kubernetes " and its key); and
// the port.
type backendID struct {
	ip   netip.Addr
	name string
	port uint16
}

// String returns id as messages name it: "192.0.2.1 port 80".
func (id backendID) String() string {
	key := id.name
	if id.ip.IsValid() {
		key = id.ip.String()
	}
	if id.port != 0 {
		key += " port " + strconv.Itoa(int(id.port))
	}
	return key
}

// backendIDs returns the parser's map for a record's addBackend, empty. It is reused from
// record to record, unless a record with many backends grew it.
func (p *parser) backendIDs() map[backendID]*yaml.Node {
	if p.seenBackends == nil || len(p.seenBackends) > 8 {
		p.seenBackends = make(map[backendID]*yaml.Node)
	} else {
		clear(p.seenBackends)
	}
	return p.seenBackends
}

// shareLast returns v as a part a record keeps out of line (its Steering, its Settings): *last,
// the previous record's, when it is the same (the records of a zone mostly keep its defaults,
// and each would otherwise keep a copy); else a copy of v, which becomes *last.
func shareLast[T any](last **T, v T, equal func(a, b *T) bool) *T {
	if *last == nil || !equal(*last, &v) {
		own := v // only a new one goes to the heap
		*last = &own
	}
	return *last
}

// record parses one record; its problems are recorded, and its name was checked by the caller.
func (p *parser) record(name string, e entry, path string, defs recordOpts, profiles profileSet) Record {
	var o recordOpts
	var backends, discovery, kube *yaml.Node
	for _, f := range p.entries(e.v, path) {
		switch {
		case YAMLIsNull(f.v):
		case f.key == "backends":
			backends = f.v
		case f.key == "discovery":
			discovery = f.v
		case f.key == "kubernetes":
			kube = f.v
		case !p.opt(&o, f, path):
			p.unknownKey(f, path, recordKeys)
		}
	}
	o.inherit(defs)
	rec := Record{
		Name: name,
		Pos:  p.Pos(e.k),
		Mode: o.mode.or(ModeFailover),
		TTL:  o.ttl.or(DefaultRecordTTL),
	}
	settings := Settings{
		Owner:          o.owner.or(""),
		Description:    o.description.or(""),
		ScrapeRetries:  o.retries.or(DefaultScrapeRetries),
		Fallback:       o.fallback.or(Fallback{Mode: FallbackFailOpen}),
		ALPN:           o.alpn.or(nil),
		FailoverTarget: o.failoverTarget.or(0),
		Guard:          o.guard.or(DrainGuard{}),
	}
	steering := Steering{
		HashOrder:  o.hashOrder.or(HashOrderAddress),
		HashPrefix: HashPrefix{V4: o.hashV4.or(DefaultHashPrefixV4), V6: o.hashV6.or(DefaultHashPrefixV6)},
		MinHealthy: o.minHealthy.or(DefaultMinHealthy),
		SlowStart:  o.slowStart.or(0),
	}
	if o.slowStart.set && !o.slowStart.inherited && o.slowStart.v > 0 && !slices.Contains(SlowStartModes, rec.Mode) {
		p.ErrorAt(o.slowStart.pos, o.slowStart.path, "slow_start only applies with mode weighted, roundrobin or chain, not %s", rec.Mode)
	}
	settings.DegradedTTL, settings.DrainTTL = p.lowTTLs(&o, rec.TTL)
	onlyWith(p, o.hashOrder, "hash_order", rec.Mode, ModeIPHash)
	onlyWith(p, o.hashV4, "hash_prefix_v4", rec.Mode, ModeConsistentHash, ModeChain)
	onlyWith(p, o.hashV6, "hash_prefix_v6", rec.Mode, ModeConsistentHash, ModeChain)
	onlyWith(p, o.minHealthy, "min_healthy", rec.Mode, ModeFailover, ModeChain)
	p.chainOptions(&steering, rec.Mode, &o, e, path)
	rec.steering = shareLast(&p.steering, steering, (*Steering).equal)
	settings.ScrapeInterval, settings.ScrapeTimeout = p.scrapeTimes(&o)
	rec.settings = shareLast(&p.settings, settings, (*Settings).equal)
	if settings.Fallback.CNAME == name {
		p.Errorf(e.k, child(path, "fallback_policy.fallback_cname"), "the fallback CNAME %s is the record itself", name)
	}
	if discovery != nil {
		rec.Discovery = p.discovery(discovery, child(path, "discovery"), settings.ScrapeInterval, profiles)
	}
	bpath := child(path, "backends")
	items := p.items(backends, bpath)
	var kubeBackends []Backend
	if kube != nil {
		kubeBackends = p.recordKubernetes(kube, child(path, "kubernetes"))
	}
	if len(items) == 0 && discovery == nil && kube == nil {
		at := e.k
		if backends != nil {
			at = YAMLResolve(backends)
		}
		p.Errorf(at, bpath, "a record needs at least one backend")
	}
	first := p.backendIDs()
	rec.Backends = make([]Backend, 0, len(items)+len(kubeBackends)) // kept for the configuration's life: no slack
	for i, item := range items {
		ipath := index(bpath, i)
		b, ok := p.backend(item, ipath, profiles, settings.ScrapeInterval)
		if b.IsPlaceholder() && len(b.Checks().HealthChecks) > 0 && !rec.SteersByRTT() {
			// A chain's rtt step has its targets measured with them (measure_remote).
			p.Errorf(item, child(ipath, "healthchecks"), "a backend without an address stands for what site %s publishes: it has nothing to probe here (unless the record steers by RTT: mode chain with an rtt step, where they measure its targets with measure_remote)", b.Site())
		}
		p.addBackend(&rec, first, &b, ok, item, ipath)
	}
	for i := range kubeBackends {
		p.addBackend(&rec, first, &kubeBackends[i], true, kube, child(path, "kubernetes"))
	}
	return rec
}
