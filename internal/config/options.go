package config

import "time"

// The settings of one Corefile gslb block (Options), apart from what its zone files say: the
// adapter parses them, the engine reads them. The options of each subsystem (cluster, API,
// sites, heartbeats, Kubernetes, webhooks) are defined beside their checks, in their files.

// Options are the settings of one Corefile gslb block.
type Options struct {
	// Zones lists the zone files, in Corefile order.
	Zones []ZoneSource
	// MaxFileSize is the largest zone or location-map file loaded, in bytes (max_file_size);
	// 0 means DefaultMaxFileSize. A bigger file is an error, and a reload keeps what serves.
	MaxFileSize int64
	// UseEDNSClientSubnet makes the EDNS Client Subnet address the client of a query.
	UseEDNSClientSubnet bool
	// FastPath is the fast path's settings (fastpath, fastpath_log_sample): off unless set.
	FastPath FastPathOptions
	// TrafficShares counts each backend's answers weighted by their TTL, by client country for
	// the geo modes, and measures the shares of traffic (traffic_shares; off by default).
	TrafficShares bool
	// Traces is the OpenTelemetry traces' exporter (traces_endpoint, traces_insecure,
	// traces_service): off unless Traces.Endpoint is set.
	Traces TracesOptions
	// AnswerLog is the answer log's settings (answer_log, answer_log_sample,
	// answer_log_queue): off unless AnswerLog.Enable.
	AnswerLog AnswerLogOptions
	// EnableTXT turns on the per-backend TXT debug answer (off by default: it discloses inventory).
	EnableTXT bool
	// CoreDNSGSLBMetrics exports CoreDNS-GSLB's metrics (gslb_*) beside Meridian's own, and
	// counts the answers they need (coredns_gslb_metrics; off by default: they cost series per
	// backend and a few atomic additions and clock reads per answer).
	CoreDNSGSLBMetrics bool
	// MaxStaggerStart spreads the first probes over this duration.
	MaxStaggerStart time.Duration
	// BatchSizeStart is how many backends start probing together during the stagger.
	BatchSizeStart int
	// ResolutionIdleTimeout is how long a record may go unqueried before it is probed less often.
	ResolutionIdleTimeout time.Duration
	// HealthcheckIdleMultiplier divides the probe rate of idle records.
	HealthcheckIdleMultiplier int
	// HealthcheckProfilesFile is an optional YAML file of profiles shared by every zone.
	HealthcheckProfilesFile string
	// GeoIP names the data sources of the geoip and geoip_affinity modes.
	GeoIP GeoIPOptions
	// Cluster is the Redis cluster mode; off unless Cluster.Enable.
	Cluster ClusterOptions
	// API is the admin API and dashboard; off unless API.Enable.
	API APIOptions
	// State is the state file of standalone mode; off unless State.Enable.
	State StateOptions
	// Sites are the multi-site options; off unless Sites.Site is set.
	Sites SitesOptions
	// Heartbeats are the heartbeats in the operator's DNS; off unless a heartbeat zone is set.
	Heartbeats HeartbeatOptions
	// Kubernetes is how the Kubernetes source reaches the cluster.
	Kubernetes KubernetesOptions
	// Webhooks are the notifications of health transitions and override changes; off unless
	// a URL is set.
	Webhooks WebhookOptions
	// RRL is response rate limiting; off unless RRL.Enable.
	RRL RRLOptions
	// Cookies are the DNS cookies; on unless turned off.
	Cookies CookieOptions
	// TLS is the certificate of the server block's tls:// and quic:// addresses.
	TLS DNSTLSOptions
	// DNSSEC are the block's dnssec blocks: Meridian's own signer of its zones; none: the
	// zones are not signed by gslb (CoreDNS's dnssec plugin may sign them).
	DNSSEC []DNSSECOptions
	// Safety are the drills (and the other tools of safe changes); none unless set.
	Safety SafetyOptions
}

// FastPathOptions are the fast path's settings: Meridian's own UDP sockets on the server
// block's addresses, answering the common queries in batches without CoreDNS's per-query
// work (docs/configuration.md, "Fast path").
type FastPathOptions struct {
	Enable bool
	// Loops is the number of sockets and loops per address; 0: one per CPU.
	Loops int
	// LogSample logs one fast-path query in LogSample (0: none): the log plugin sees none.
	LogSample int
	// TCPMaxConns and TCPMaxConnsPerClient bound the fast path's TCP connections open at once
	// on an address, and those of one client (fastpath_tcp_max_connections,
	// fastpath_tcp_max_connections_per_client); 0 for the fast path's defaults.
	TCPMaxConns, TCPMaxConnsPerClient int
}

// AnswerLogOptions are the answer log's settings: the fast path's answers written as dnstap
// frames to the server block's dnstap plugins, as those plugins write the plugin chain's, each
// carrying Meridian's decision (docs/configuration.md, "Answer log").
type AnswerLogOptions struct {
	Enable bool
	// Sample writes each fast-path answer with a chance of one in Sample (1: every answer).
	Sample int
	// Queue is how many fast-path answers wait to be written; an answer that finds it full is
	// dropped and counted.
	Queue int
}

// TracesOptions are where OpenTelemetry traces go: an OTLP/gRPC collector.
type TracesOptions struct {
	// Endpoint is the collector's host:port; empty: no traces.
	Endpoint string
	// Insecure sends them without TLS.
	Insecure bool
	// Service is the service.name of the spans; empty: DefaultTracesService.
	Service string
}

// DefaultTracesService is the service.name of Meridian's spans.
const DefaultTracesService = "meridian"

// ServiceName returns the service.name of the spans.
func (o TracesOptions) ServiceName() string {
	if o.Service == "" {
		return DefaultTracesService
	}
	return o.Service
}

// The answer log's defaults.
const (
	DefaultAnswerLogSample = 1
	DefaultAnswerLogQueue  = 16384
)

// StateOptions are the state file's settings (state_persist_*, state_max_age): the health of
// every probed backend, written periodically and at shutdown, read at start so that a
// restarted instance answers from the last known health instead of from unknown.
type StateOptions struct {
	Enable bool
	// Path is the file; Interval how often it is written; MaxAge the age beyond which a file
	// is not read at start.
	Path     string
	Interval time.Duration
	MaxAge   time.Duration
}

// ZoneOrigins returns the origins of the block's zones, in Corefile order.
func (o Options) ZoneOrigins() []string {
	origins := make([]string, len(o.Zones))
	for i, z := range o.Zones {
		origins[i] = z.Origin
	}
	return origins
}

// GeoIPOptions are the data sources of the geo modes. Empty paths are sources not used.
type GeoIPOptions struct {
	CityDB, CountryDB, ASNDB string // MaxMind databases (geoip_maxmind)
	CustomMap                string // the subnet -> location map (geoip_custom)
}

// DefaultOptions returns Options with every documented default set and no zones.
func DefaultOptions() Options {
	return Options{
		MaxStaggerStart:           DefaultMaxStaggerStart,
		BatchSizeStart:            DefaultBatchSizeStart,
		ResolutionIdleTimeout:     DefaultResolutionIdleTimeout,
		HealthcheckIdleMultiplier: DefaultHealthcheckIdleMultiplier,
		State: StateOptions{
			Path:     DefaultStatePersistPath,
			Interval: DefaultStatePersistInterval,
			MaxAge:   DefaultStateMaxAge,
		},
		Webhooks:  DefaultWebhookOptions(),
		RRL:       defaultRRL(),
		Cookies:   CookieOptions{Enable: true},
		AnswerLog: AnswerLogOptions{Sample: DefaultAnswerLogSample, Queue: DefaultAnswerLogQueue},
	}
}
