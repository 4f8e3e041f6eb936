// Package admin is Meridian's operator surface over HTTP: the admin API (the endpoints of
// CoreDNS-GSLB under /api and the versioned ones under /api/v1), its OpenAPI document, and the
// web dashboard, all served from files embedded in the binary. It authenticates requests (basic
// or bearer, compared in constant time), serves over TLS when asked, and keeps the backend
// overrides in an overlay.Store.
//
// The package knows nothing of the engine: each gslb block registers a Provider, which reports
// its zones, records and backends, explains answers, and reloads its configuration.
package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/published"
)

// Provider is what one gslb block gives the admin API. Its methods are called from HTTP
// handlers, concurrently.
type Provider interface {
	// Status returns the block's zones, with every record and backend as they are now. The
	// result belongs to the caller, which may change it.
	Status() []Zone
	// Transitions returns up to limit of the most recent health state changes, newest first.
	Transitions(limit int) []Transition
	// Explain answers q as the block would, and tells how the answer was chosen. The name of q
	// is in one of the block's zones, and its type is valid.
	Explain(ctx context.Context, q Query) (Explanation, error)
	// Reload reads the block's configuration files again. On error the previous configuration
	// keeps serving.
	Reload() error
	// Ready reports whether the block serves its zones.
	Ready() bool
}

// State is a backend's health state.
type State string

// The health states.
const (
	StateUp      State = "up"
	StateDown    State = "down"
	StateUnknown State = "unknown"
	// StateStale is another site's backend whose site has been silent for the split-brain
	// threshold: served only when nothing else is.
	StateStale State = "stale"
)

// SitesProvider is a Provider of a block that may name its site: it tells what the block knows
// of the other sites, the zero View when it names none.
type SitesProvider interface {
	Sites() published.View
}

// HistoryProvider is a Provider that keeps the last hour of its probed backends, for GET
// /api/v1/backends/history and the dashboard's plots.
type HistoryProvider interface {
	// History returns the hour that ends at now.
	History(now time.Time) History
}

// History is the last hour of probed backends, in buckets: the answer to GET
// /api/v1/backends/history.
type History struct {
	// BucketSeconds is the length of a bucket; Start the start of the first one, aligned on
	// the Unix clock; Now the end of the last one's data.
	BucketSeconds int       `json:"bucket_seconds"`
	Start         time.Time `json:"start"`
	Now           time.Time `json:"now"`
	// Backends are sorted by record, then key.
	Backends []BackendHistory `json:"backends"`
}

// BackendHistory is one backend's last hour: its checks' results by bucket and its state
// timeline.
type BackendHistory struct {
	Key    string `json:"key"`
	Record string `json:"record"`
	// LatencyUS holds, for each bucket, oldest first, the mean latency of the probes in it, in
	// microseconds (null: none measured one); Failures how many results failed (null: no result
	// arrived).
	LatencyUS Series `json:"latency_us"`
	Failures  Series `json:"failures"`
	// From is where the state timeline starts, at State: Start, or later for a backend younger
	// than the hour or one whose older changes were not kept. Changes follow, oldest first.
	From    time.Time `json:"from"`
	State   State     `json:"state"`
	Changes []Change  `json:"changes"`
}

// Change is one state change of a backend's timeline.
type Change struct {
	Time   time.Time `json:"time"`
	To     State     `json:"to"`
	Reason string    `json:"reason,omitempty"`
}

// Series is a series of counts or measures, with -1 for a missing value: JSON carries it as an
// array of numbers and nulls.
type Series []int64

// MarshalJSON writes the series, with null for negative values.
func (s Series) MarshalJSON() ([]byte, error) {
	return appendSeries(s, func(b []byte, v int64) []byte { return strconv.AppendInt(b, v, 10) }), nil
}

// appendSeries returns s as a JSON array, null for negative values, each other value written
// by appendValue.
func appendSeries[T int64 | float64](s []T, appendValue func([]byte, T) []byte) []byte {
	out := append(make([]byte, 0, 2+len(s)*5), '[')
	for i, v := range s {
		if i > 0 {
			out = append(out, ',')
		}
		if v < 0 {
			out = append(out, "null"...)
		} else {
			out = appendValue(out, v)
		}
	}
	return append(out, ']')
}

// UnmarshalJSON reads an array of numbers and nulls, nulls as -1.
func (s *Series) UnmarshalJSON(b []byte) error {
	var values []*int64
	if err := json.Unmarshal(b, &values); err != nil {
		return fmt.Errorf("series: %w", err)
	}
	*s = make(Series, len(values))
	for i, v := range values {
		(*s)[i] = -1
		if v != nil {
			(*s)[i] = *v
		}
	}
	return nil
}

// SiteBlock is one block's view of the sites, for GET /api/v1/sites.
type SiteBlock struct {
	Zones []string `json:"zones"`
	published.View
}

// Zone is one zone of a block, with its records sorted by name.
type Zone struct {
	Name    string   `json:"name"`
	Records []Record `json:"records"`
}

// Record is one GSLB record and its backends, in configuration order.
type Record struct {
	Name string `json:"name"`
	// Mode is the selection mode, such as failover or geoip.
	Mode string `json:"mode"`
	// Fallback is the mode of the fallback policy, such as fail-open.
	Fallback string `json:"fallback"`
	// Healthy is how many backends may be answered now: enabled (overrides included) and up.
	Healthy  int       `json:"healthy"`
	Backends []Backend `json:"backends"`
	// Discovery is the state of the record's discovery block; absent when it has none.
	Discovery *Discovery `json:"discovery,omitempty"`
	// Degraded is set while the record answers other sites' stale targets, none of its
	// backends of that address family being healthy; Failover while a failover record
	// answers from a worse priority than its best.
	Degraded bool `json:"degraded"`
	Failover bool `json:"failover"`
	// TTL is the TTL the record answers with now, the lowest of its address families', and
	// TTLReason why: healthy (record_ttl), backend down, failover, stale or fallback
	// (degraded_ttl), or drain ahead (a scheduled drain within record_ttl).
	TTL       uint32 `json:"ttl"`
	TTLReason string `json:"ttl_reason"`
	// FailoverBudget is the record's worst case time to stop sending clients to a dead
	// backend, against its failover_target.
	FailoverBudget FailoverBudget `json:"failover_budget"`
	// Guard is the record's drain_guard; absent when it has none.
	Guard *DrainGuard `json:"drain_guard,omitempty"`
}

// FailoverBudget is a record's worst case failover time, computed from its timers (see
// docs/modes.md), and its failover_target.
type FailoverBudget struct {
	// Target is failover_target, absent when the record sets none.
	Target Millis `json:"target_ms,omitempty"`
	// Worst is the worst case; Unbounded is set instead when a backend is never found down.
	Worst     Millis `json:"worst_case_ms"`
	Unbounded bool   `json:"unbounded,omitempty"`
	// Holds is set when the record has a target and the worst case is within it.
	Holds bool `json:"holds"`
	// Dominant names the longest timer of the worst case.
	Dominant string `json:"dominant,omitempty"`
	// Text says it all in a sentence, as meridian check prints it.
	Text string `json:"text"`
}

// Discovery is what a record's discovery block has fetched: its source, its last success and
// last error, and how many backends its last good set has (they are among the record's
// backends).
type Discovery struct {
	// Type is http, consul, dns_svcb or dns_https; Endpoint and Service are as configured.
	Type     string `json:"type"`
	Endpoint string `json:"endpoint"`
	Service  string `json:"service,omitempty"`
	// LastSuccess is when a fetch last succeeded; absent before the first one.
	LastSuccess *time.Time `json:"last_success,omitempty"`
	// LastError and LastErrorTime are of the last fetch that failed; Failing says whether the
	// latest fetch failed (the last good set is kept).
	LastError     string     `json:"last_error,omitempty"`
	LastErrorTime *time.Time `json:"last_error_time,omitempty"`
	Failing       bool       `json:"failing"`
	Backends      int        `json:"backends"`
}

// Backend is one backend of a record: its configuration and its health.
type Backend struct {
	// Key identifies the backend, "record|address|port" (port 0 when it has none); overrides
	// and selectors use it.
	Key         string   `json:"key"`
	Address     string   `json:"address"`
	Port        int      `json:"port,omitempty"`
	Priority    int      `json:"priority"`
	Weight      int      `json:"weight"`
	Description string   `json:"description,omitempty"`
	Location    string   `json:"location,omitempty"`
	Country     string   `json:"country,omitempty"`
	City        string   `json:"city,omitempty"`
	Continent   string   `json:"continent,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	// Site is the backend's site; Remote is set for another site's, whose state that site
	// publishes.
	Site   string `json:"site,omitempty"`
	Remote bool   `json:"remote,omitempty"`
	// Enabled is the enable flag of the configuration.
	Enabled bool `json:"enabled"`
	// Override is the operators' override of Enabled. Providers leave it nil: the server fills
	// it in from its overlay store.
	Override *overlay.Override `json:"override,omitempty"`
	// Held says why the backend's scheduled drain, which has started, is held: it would
	// leave its record below its drain guard. The backend is served until the guard allows
	// the drain, or the drain ends. Empty otherwise.
	Held string `json:"held,omitempty"`
	// Healthy reports whether the backend may be answered now: enabled (overrides included)
	// and up.
	Healthy bool  `json:"healthy"`
	State   State `json:"state"`
	// LastCheck is the time of the last health-check result; zero before the first, and for
	// backends that are not probed.
	LastCheck time.Time `json:"last_check,omitzero"`
	// LastOK and Reason are the last result: success, or the reason of the failure.
	LastOK  bool   `json:"last_ok"`
	Reason  string `json:"reason,omitempty"`
	Latency Millis `json:"latency_ms"`
	// RTT is the backend's smoothed round-trip time, from its first check's successful probes;
	// absent when not measured.
	RTT Millis `json:"rtt_ms,omitzero"`
	// Load is the backend's load relative to its capacity (1 is full), as its checks read it;
	// absent when unknown.
	Load *float64 `json:"load,omitempty"`
	// LastChange is when State was entered; zero when it never changed.
	LastChange time.Time `json:"last_change,omitzero"`
	// Votes are the results of the instances of a cluster in quorum mode; empty otherwise.
	Votes []Vote `json:"votes,omitempty"`
}

// Vote is one instance's view of a backend in quorum mode.
type Vote struct {
	Instance string `json:"instance"`
	// Site is the voter's redis_site label, if any.
	Site   string    `json:"site,omitempty"`
	OK     bool      `json:"ok"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
	// Isolated is set when the voter failed most of its canaries: its vote counts in no
	// verdict.
	Isolated bool `json:"isolated,omitempty"`
	// RTT is the voter's probe round-trip time; absent when not measured.
	RTT Millis `json:"rtt_ms,omitzero"`
}

// Transition is one change of a backend's health state.
type Transition struct {
	Time   time.Time `json:"time"`
	Record string    `json:"record"`
	// Backend is the backend's key.
	Backend string `json:"backend"`
	From    State  `json:"from"`
	To      State  `json:"to"`
	Reason  string `json:"reason,omitempty"`
}

// Query is a DNS question to explain.
type Query struct {
	// Name is fully qualified and in lower case.
	Name string `json:"name"`
	// Type is a query type mnemonic in upper case, such as A or AAAA.
	Type string `json:"type"`
	// Client is the source address of the query.
	Client netip.Addr `json:"client"`
	// ECS is the EDNS Client Subnet of the query; the zero Prefix for none.
	ECS netip.Prefix `json:"ecs,omitzero"`
	// Down and Drained make the explanation a what-if: the answer as if the backends they
	// select were down, or drained. A selector is a backend key (record|address|port), an
	// address, site:NAME or location:NAME.
	Down    []string `json:"down,omitempty"`
	Drained []string `json:"drained,omitempty"`
}

// Explanation is the answer to a Query and how it was chosen.
type Explanation struct {
	Query Query `json:"query"`
	// Zone and Record are the zone and the record that answered; Record is empty when no
	// record matched.
	Zone   string `json:"zone"`
	Record string `json:"record,omitempty"`
	// Rcode is the response code, such as NOERROR or NXDOMAIN.
	Rcode string `json:"rcode"`
	// Answer holds the answer section, one record per line in presentation format.
	Answer []string `json:"answer"`
	// Steps are the decisions that led to the answer, in order.
	Steps []Step `json:"steps"`
}

// Step is one decision of an Explanation, such as the location found for the client, the
// candidates left after health and overrides, or the policy's pick.
type Step struct {
	// Stage names the part that decided, such as geo, health, policy or fallback.
	Stage string `json:"stage"`
	// Text says what was decided, for people.
	Text string `json:"text"`
	// Backends are the keys of the backends this step kept, when it chose among them.
	Backends []string `json:"backends,omitempty"`
	// Fields hold the step's facts for programs, such as country=DE.
	Fields map[string]string `json:"fields,omitempty"`
}

// Millis is a duration that JSON carries as a number of milliseconds.
type Millis time.Duration

// MarshalJSON writes d as milliseconds, with microsecond precision.
func (d Millis) MarshalJSON() ([]byte, error) {
	ms := float64(time.Duration(d).Microseconds()) / 1000
	return strconv.AppendFloat(nil, ms, 'f', -1, 64), nil
}

// UnmarshalJSON reads a number of milliseconds.
func (d *Millis) UnmarshalJSON(b []byte) error {
	var ms float64
	if err := json.Unmarshal(b, &ms); err != nil {
		return fmt.Errorf("milliseconds: %w", err)
	}
	*d = Millis(ms * float64(time.Millisecond))
	return nil
}
