package config

// The names every Meridian metric shares: CoreDNS's namespace and the gslb subsystem, so that
// metric names read coredns_gslb_*. The metrics live in the default registry, which CoreDNS's
// prometheus plugin serves.
const (
	// MetricsNamespace is the Prometheus namespace of Meridian's metrics.
	MetricsNamespace = "coredns"
	// MetricsSubsystem is the Prometheus subsystem of Meridian's metrics.
	MetricsSubsystem = "gslb"
)
