// Package config turns the Corefile options of a gslb block and its YAML zone files into one
// validated, immutable description of what Meridian serves. Every error names the file, line,
// column and field path it is about; nothing here knows about DNS serving or CoreDNS.
package config

import (
	"net/netip"
	"slices"
	"time"
	"unique"
)

// Defaults applied when neither the YAML file nor the Corefile sets a value.
const (
	DefaultRecordTTL = 30
	// DefaultDrainTTL is the TTL, in seconds, of a record's answers in the record_ttl before a
	// scheduled drain of one of its backends, unless drain_ttl says otherwise.
	DefaultDrainTTL                  = 5
	DefaultScrapeInterval            = 10 * time.Second
	DefaultScrapeTimeout             = 5 * time.Second
	DefaultScrapeRetries             = 1
	DefaultRise                      = 2
	DefaultFall                      = 3
	DefaultPriority                  = 0
	DefaultWeight                    = 1
	DefaultCapacity                  = 1.0
	DefaultMaxStaggerStart           = 120 * time.Second
	DefaultBatchSizeStart            = 100
	DefaultResolutionIdleTimeout     = 3600 * time.Second
	DefaultHealthcheckIdleMultiplier = 10
	// DefaultStatePersistPath is where the state file lives unless state_persist_path says
	// otherwise: CoreDNS-GSLB's path, so that a migrated instance finds its file.
	DefaultStatePersistPath     = "/var/lib/coredns-gslb/state.json"
	DefaultStatePersistInterval = 30 * time.Second
	DefaultStateMaxAge          = 60 * time.Second
)

// Defaults of the consistent-hash and failover record settings.
const (
	// DefaultHashPrefixV4 and DefaultHashPrefixV6 are the client prefix lengths consistent-hash
	// hashes: a /24 and a /56, the networks a client's neighbours share.
	DefaultHashPrefixV4 = 24
	DefaultHashPrefixV6 = 56
	// DefaultMinHealthy is how many healthy backends a priority group needs to be served.
	DefaultMinHealthy = 1
)

// Mode is a record's backend selection mode.
type Mode string

// The selection modes a record may use.
const (
	ModeFailover       Mode = "failover"
	ModeRoundRobin     Mode = "roundrobin"
	ModeRandom         Mode = "random"
	ModeWeighted       Mode = "weighted"
	ModeIPHash         Mode = "ip-hash"
	ModeConsistentHash Mode = "consistent-hash"
	ModeGeoIP          Mode = "geoip"
	ModeGeoIPAffinity  Mode = "geoip_affinity"
	// ModeChain runs the record's chain of steps (Record.Chain).
	ModeChain Mode = "chain"
)

// Modes lists every valid mode, in the order the documentation presents them.
var Modes = []Mode{ModeFailover, ModeRoundRobin, ModeRandom, ModeWeighted, ModeIPHash, ModeConsistentHash, ModeGeoIP, ModeGeoIPAffinity, ModeChain}

// Position is a place in a configuration file. Its file's name is a unique.Handle, pointer
// sized: every record, backend and check of a big zone has a position, and a string there took
// 8 bytes more of each.
type Position struct {
	file   unique.Handle[string] // the zero Handle when the file is unknown
	Line   int32
	Column int32
}

// At returns the position at line and column (1-based; 0 when unknown) of the file called file.
func At(file string, line, column int) Position {
	p := Position{Line: int32(line), Column: int32(column)} // a file has fewer lines than that
	if file != "" {
		p.file = unique.Make(file)
	}
	return p
}

// InFile returns the position of the file called file as a whole.
func InFile(file string) Position { return At(file, 0, 0) }

// File returns the name of the position's file, empty when unknown.
func (p Position) File() string {
	if p.file == (unique.Handle[string]{}) {
		return ""
	}
	return p.file.Value()
}

// ZoneSource names the YAML file that holds a zone's records.
type ZoneSource struct {
	Origin string // canonical: lower case, fully qualified
	File   string
}

// Zone is one loaded and validated zone file.
type Zone struct {
	Origin string // canonical: lower case, fully qualified
	File   string
	SOA    SOA
	NS     []string // fully qualified name server names, lower case
	// Records are sorted by name.
	Records []Record
	// Static are the zone's other records (static:), in file order, checked against each
	// other and the records.
	Static []StaticRR
	// Warnings are what the file says that loads but should be changed, such as a deprecated
	// spelling, each with its file:line:col and field. The zone serves the same with or
	// without them; the engine logs them when it loads the zone.
	Warnings ErrorList
}

// SOA is the zone's start of authority. Fields absent from the file hold generated values.
type SOA struct {
	TTL     uint32
	MName   string
	RName   string
	Serial  uint32
	Refresh uint32
	Retry   uint32
	Expire  uint32
	Minimum uint32
}

// Record is one GSLB name with its backends.
type Record struct {
	Name string // canonical FQDN; may start with "*." for a wildcard
	Pos  Position
	Mode Mode
	// settings are the record's TTLs beyond record_ttl, failover target, scrape timing,
	// fallback policy, ALPN, split-brain threshold, drain guard, owner and description; read them with
	// Settings. The parser shares one among the records that have the same.
	settings *Settings
	// steering is how the record picks among its healthy backends beyond its mode; read it
	// with Steering. The parser shares one among the records that have the same.
	steering *Steering
	Backends []Backend
	// Discovery, when set, is where more backends of the record are read from at run time.
	Discovery *Discovery
	TTL       uint32
	// Publish is set by the sites source on the records that have backends of this site:
	// their healthy ones are served as localtargets-<name> for the other sites.
	Publish bool
	// PublishRTT is set by the sites source, with measure_remote, on the records that steer by
	// RTT (SteersByRTT): this site's RTT to each of their backends is served as
	// localrtt-<name> for the other sites, which read it to steer the clients near this site.
	PublishRTT bool
}

// Steering is how a record picks among its healthy backends beyond its mode: the chain's steps
// and their tuning, ip-hash's order and the client prefix the hashes take, failover's minimum of
// healthy backends, and slow start. Most records of a zone have the same, the zone's defaults.
type Steering struct {
	// HashOrder is how ip-hash orders the healthy backends before the modulo.
	HashOrder HashOrder
	// Chain is the steps of mode chain, without the implicit health step; MaxAnswers caps
	// its answer (0: every candidate left); RTTTolerance and MaxLoad tune its rtt and load
	// steps.
	Chain        []ChainStep
	MaxAnswers   int
	RTTTolerance Tolerance
	MaxLoad      float64
	// SlowStart is how long a backend that comes back up takes to reach its full weight in
	// the weighted, roundrobin and chain modes (slow_start:); 0, the default, is off.
	SlowStart time.Duration
	// HashPrefix is the client prefix consistent-hash hashes (hash_prefix_v4, hash_prefix_v6).
	HashPrefix HashPrefix
	// MinHealthy is how many healthy backends a priority group of failover needs to be
	// served; a group with fewer counts as down (min_healthy).
	MinHealthy int
	// ZeroWeightIdle: in weighted, a weight of 0 takes no traffic while a backend with a
	// positive one is healthy (k8gb's rule; its Gslbs set it); else 0 counts as 1 (zone files).
	ZeroWeightIdle bool
}

// orShared returns p, the part a record or backend keeps out of line, or none, the shared zero
// part, when it has none.
func orShared[T any](p, none *T) *T {
	if p == nil {
		return none
	}
	return p
}

// noSteering is the steering of the records that were given none: every setting zero.
var noSteering Steering

// Steering returns how the record steers: the zero Steering when it was given none. The
// result may be shared with other records, and must not be modified: use SetSteering.
func (r *Record) Steering() *Steering {
	return orShared(r.steering, &noSteering)
}

// SetSteering gives the record the steering s.
func (r *Record) SetSteering(s Steering) { r.steering = &s }

// equal reports whether s and o are the same settings.
func (s *Steering) equal(o *Steering) bool {
	return s.HashOrder == o.HashOrder && slices.Equal(s.Chain, o.Chain) && s.MaxAnswers == o.MaxAnswers &&
		s.RTTTolerance == o.RTTTolerance && s.MaxLoad == o.MaxLoad && s.SlowStart == o.SlowStart &&
		s.HashPrefix == o.HashPrefix && s.MinHealthy == o.MinHealthy && s.ZeroWeightIdle == o.ZeroWeightIdle
}

// Settings are the settings of a record that most records of a zone take from its defaults:
// a record keeps them out of line, shared with the records that have the same (Record.Settings).
type Settings struct {
	// DegradedTTL is degraded_ttl, the TTL of the record's answers while it is degraded (a
	// backend down, a failover, stale or fallback answers); nil when not set: TTL. Read it
	// with Record.DegradedAnswerTTL.
	DegradedTTL *uint32
	// DrainTTL is drain_ttl, the TTL of the record's answers before a scheduled drain of one
	// of its backends; nil when not set. Read it with Record.DrainAnswerTTL.
	DrainTTL *uint32
	// FailoverTarget is the longest time the record may send clients to a dead backend
	// (failover_target); 0 when the record sets no target.
	FailoverTarget time.Duration
	Owner          string
	Description    string
	ScrapeInterval time.Duration
	ScrapeTimeout  time.Duration
	ScrapeRetries  int
	Fallback       Fallback
	// ALPN is the alpn value of HTTPS/SVCB answers; empty means none is sent.
	ALPN []string
	// SplitBrainThreshold, when not 0, is how long the other sites' backends of this record
	// stay fresh after their site fell silent, in place of the block's split_brain_threshold
	// (peers mode): a k8gb Gslb's splitBrainThresholdSeconds.
	SplitBrainThreshold time.Duration
	// Guard is the record's drain guard (drain_guard); the zero DrainGuard for none.
	Guard DrainGuard
}

// noSettings are the settings of the records that were given none: every setting zero.
var noSettings Settings

// Settings returns the record's settings: the zero Settings when it was given none. The
// result may be shared with other records, and must not be modified: use SetSettings.
func (r *Record) Settings() *Settings {
	return orShared(r.settings, &noSettings)
}

// SetSettings gives the record the settings s.
func (r *Record) SetSettings(s Settings) { r.settings = &s }

// equal reports whether s and o are the same settings.
func (s *Settings) equal(o *Settings) bool {
	return equalTTL(s.DegradedTTL, o.DegradedTTL) && equalTTL(s.DrainTTL, o.DrainTTL) &&
		s.FailoverTarget == o.FailoverTarget && s.Owner == o.Owner && s.Description == o.Description &&
		s.ScrapeInterval == o.ScrapeInterval && s.ScrapeTimeout == o.ScrapeTimeout &&
		s.ScrapeRetries == o.ScrapeRetries && s.Fallback.equal(&o.Fallback) && slices.Equal(s.ALPN, o.ALPN) &&
		s.SplitBrainThreshold == o.SplitBrainThreshold && s.Guard == o.Guard
}

// equalTTL reports whether a and b are both unset or both set to the same TTL.
func equalTTL(a, b *uint32) bool {
	return a == b || a != nil && b != nil && *a == *b
}

// DegradedAnswerTTL returns the TTL of the record's degraded answers: degraded_ttl, else
// record_ttl; never above record_ttl.
func (r *Record) DegradedAnswerTTL() uint32 {
	t := r.Settings().DegradedTTL
	if t == nil {
		return r.TTL
	}
	return min(*t, r.TTL)
}

// DrainAnswerTTL returns the TTL of the record's answers in the record_ttl before a scheduled
// drain: drain_ttl, else DefaultDrainTTL; never above DegradedAnswerTTL.
func (r *Record) DrainAnswerTTL() uint32 {
	d := uint32(DefaultDrainTTL)
	if t := r.Settings().DrainTTL; t != nil {
		d = *t
	}
	return min(d, r.DegradedAnswerTTL())
}

// HashOrder is the order ip-hash puts a record's healthy backends in before it takes the
// client's hash modulo their number.
type HashOrder string

// The ip-hash orders.
const (
	// HashOrderAddress sorts IP addresses by value, then host names alphabetically (default).
	HashOrderAddress HashOrder = "address"
	// HashOrderText sorts the addresses as written, as text: the order of CoreDNS-GSLB, so
	// that every client keeps the backend CoreDNS-GSLB gave it.
	HashOrderText HashOrder = "text"
)

// HashPrefix is how many leading bits of the client address consistent-hash keeps, by the
// client's family: clients in one network of that length get the same backend.
type HashPrefix struct {
	V4 int // 0 to 32
	V6 int // 0 to 128
}

// Backend is one site of a record.
type Backend struct {
	Pos      Position
	Address  string     // as written, canonical for host names (lower case, fully qualified)
	IP       netip.Addr // valid when Address is an IP address
	Priority int32
	Weight   int32
	// labels are the backend's tags, description and geo fields, nil when it has none (the
	// most common case): read them with Labels, set them with SetLabels.
	labels *Labels

	// checks are how the backend's health is checked, shared by the backends whose checks are
	// the same (most use a profile, or none); nil for a backend made without any (not parsed):
	// read them with Checks, set them with SetChecks.
	checks *Checks
	// origin is the site the backend is in, the Kubernetes Service it stands for and the share
	// of a target learned for a placeholder, nil when it has none of them (the most common
	// case): read them with Site, Kubernetes, Share and Origin, set them with SetOrigin.
	origin *Origin

	// The small fields last, together: a big zone holds many backends, and padding between
	// them cost 24 bytes a backend.

	Port          uint16 // 0 when not set
	Enable        bool
	AssumeHealthy bool
	Passive       bool
	// External is set by a source on the backends whose health it reports rather than this
	// instance probes: the sites and heartbeats sources on other sites' backends (from what
	// those sites publish), the Kubernetes source on a Service's addresses (from its
	// readiness).
	External bool
	// Remote is set by the sites source on the backends of other sites (External too): this
	// site neither publishes them nor counts them as its own.
	Remote bool
	// MeasureOnly is set by the sites source, with measure_remote, on the other sites' backends
	// of the records that steer by RTT: this site probes them with their checks for their RTT
	// and load alone; their health stays what their site publishes.
	MeasureOnly bool
}

// Labels are what an operator says about a backend beyond how to reach and weigh it: its tags
// and description, and where it is for the geo modes. Most backends of a big zone have none, so
// a Backend keeps them out of line.
type Labels struct {
	Tags        []string
	Description string

	Country     string
	Subdivision string
	City        string
	Continent   string
	ASN         uint32
	Location    string
	Latitude    float64
	Longitude   float64
	HasCoords   bool
}

// Labels returns a copy of the backend's labels (the zero Labels when it has none).
func (b *Backend) Labels() Labels {
	if b.labels == nil {
		return Labels{}
	}
	return *b.labels
}

// empty reports whether l says nothing.
func (l *Labels) empty() bool {
	return len(l.Tags) == 0 && l.Description == "" && l.Country == "" && l.Subdivision == "" &&
		l.City == "" && l.Continent == "" && l.ASN == 0 && l.Location == "" && !l.HasCoords &&
		l.Latitude == 0 && l.Longitude == 0
}

// equal reports whether l and o say the same.
func (l *Labels) equal(o *Labels) bool {
	return slices.Equal(l.Tags, o.Tags) && l.Description == o.Description && l.Country == o.Country &&
		l.Subdivision == o.Subdivision && l.City == o.City && l.Continent == o.Continent && l.ASN == o.ASN &&
		l.Location == o.Location && l.Latitude == o.Latitude && l.Longitude == o.Longitude && l.HasCoords == o.HasCoords
}

// SetLabels replaces the backend's labels by l. Copies of a backend made before share the
// labels they had: each keeps its own from then on.
func (b *Backend) SetLabels(l Labels) {
	if l.empty() {
		b.labels = nil
		return
	}
	own := l // only labels that say something go to the heap
	b.labels = &own
}

// Checks are how a backend's health and load are checked.
type Checks struct {
	HealthChecks []HealthCheck
	// Capacity is the load at which the backend is full (capacity:, DefaultCapacity when not
	// set; 0 counts as DefaultCapacity): the load its checks read (an http check's metric, a
	// lua check's number) divided by it is the relative load the load steering reads, 1 being
	// full. It is here rather than in Backend because only checks read a load.
	Capacity float64
	// Timeout bounds each probe of the backend's checks in place of the record's
	// scrape_timeout; 0 when not set. A check's own timeout parameter still wins.
	Timeout time.Duration
	Rise    int
	Fall    int
	// LocalInterval is how often the site's own (local) balancer checks the servers behind
	// the backend (local_interval), when the operator declares it; 0 when not. Nothing is
	// probed by it: meridian check compares it with scrape_interval (package lint).
	LocalInterval time.Duration
}

// noChecks are the checks of a backend that was given none.
var noChecks Checks

// Checks returns how the backend's health is checked: the zero Checks when it was given none.
// The result may be shared with other backends, and must not be modified: use SetChecks.
func (b *Backend) Checks() *Checks {
	return orShared(b.checks, &noChecks)
}

// SetChecks gives the backend the checks c.
func (b *Backend) SetChecks(c Checks) { b.checks = &c }

// WithChecks returns a copy of b with the checks c: for a backend written as a literal.
func (b Backend) WithChecks(c Checks) Backend {
	b.SetChecks(c)
	return b
}

// equal reports whether c and o are the same checks: the same check (from the same profile,
// or written at the same place) in the same order, with the same timeout, thresholds and
// capacity.
func (c *Checks) equal(o *Checks) bool {
	return c.Timeout == o.Timeout && c.Rise == o.Rise && c.Fall == o.Fall && c.Capacity == o.Capacity && c.LocalInterval == o.LocalInterval &&
		slices.EqualFunc(c.HealthChecks, o.HealthChecks, func(a, b HealthCheck) bool {
			return a.Pos == b.Pos && a.Profile == b.Profile && a.Type == b.Type && a.Rise == b.Rise &&
				a.Fall == b.Fall && a.Params.Identity() == b.Params.Identity()
		})
}

// Origin is where a backend comes from, beyond its address.
type Origin struct {
	// Site is the site the backend is in (site:), empty for a backend of no site in
	// particular. A backend with a site and no address is a placeholder: it stands for the
	// targets that site publishes (the k8gb form, see docs/sites.md).
	Site string
	// Kubernetes, when set, names the Service the backend stands for (kubernetes:): it has
	// no address, and the Kubernetes source replaces it by the Service's LoadBalancer
	// addresses.
	Kubernetes *KubernetesRef
	// Share is, on a target that the sites source learned for a placeholder, the number of
	// targets the placeholder's weight is shared among (the site's weight); 0 otherwise.
	Share int
}

// Origin returns a copy of the backend's origin (the zero Origin when it has none).
func (b *Backend) Origin() Origin {
	if b.origin == nil {
		return Origin{}
	}
	return *b.origin
}

// SetOrigin replaces the backend's origin by o. Copies of a backend made before keep the
// origin they had.
func (b *Backend) SetOrigin(o Origin) {
	if o == (Origin{}) {
		b.origin = nil
		return
	}
	own := o // only an origin that says something goes to the heap
	b.origin = &own
}

// WithOrigin returns a copy of b with the origin o: for a backend written as a literal.
func (b Backend) WithOrigin(o Origin) Backend {
	b.SetOrigin(o)
	return b
}

// SetShare sets the share of a target that a source learned for a placeholder (Origin.Share),
// keeping the rest of its origin.
func (b *Backend) SetShare(n int) {
	o := b.Origin()
	o.Share = n
	b.SetOrigin(o)
}

// Site is the site the backend is in (Origin.Site).
func (b *Backend) Site() string { return b.Origin().Site }

// Kubernetes is the Service the backend stands for (Origin.Kubernetes), or nil.
func (b *Backend) Kubernetes() *KubernetesRef { return b.Origin().Kubernetes }

// Share is the share of a target that the sites source learned (Origin.Share).
func (b *Backend) Share() int { return b.Origin().Share }

// IsPlaceholder reports whether the backend stands for what its site publishes: it has a
// site and no address.
func (b *Backend) IsPlaceholder() bool { return b.Site() != "" && b.Address == "" }

// IsKubernetes reports whether the backend stands for a Kubernetes Service's addresses: it
// names a Service and has no address.
func (b *Backend) IsKubernetes() bool { return b.Kubernetes() != nil && b.Address == "" }

// IsHost reports whether the backend is a host name (answered as CNAME) rather than an address.
func (b *Backend) IsHost() bool { return !b.IP.IsValid() }

// Probed reports whether the backend has a health state: it has health checks, or it is
// passive (a cluster fleet probes it), and it is not assume_healthy; or a source reports its
// health (External). A backend that is not probed counts as up.
func (b *Backend) Probed() bool {
	return b.External || !b.AssumeHealthy && (b.Passive || len(b.Checks().HealthChecks) > 0)
}

// HealthCheck is one check of a backend, from a profile or written inline.
type HealthCheck struct {
	Pos     Position
	Profile string // profile name, empty when inline
	Type    string
	// Params are the check's parameters: those of a profile's check are shared by every
	// backend that uses the profile.
	Params Params
	Rise   int32 // 0 when the check does not set it
	Fall   int32
}
