package config

import (
	"net/netip"
	"time"
)

// Defaults of response rate limiting (the rrl_* options).
const (
	DefaultRRLResponsesPerSecond = 20
	DefaultRRLWindow             = 15 * time.Second
	DefaultRRLSlip               = 2
	DefaultRRLIPv4Prefix         = 24
	DefaultRRLIPv6Prefix         = 56
	DefaultRRLTableSize          = 1 << 18
)

// RRLOptions are response rate limiting's settings (rrl and the rrl_* options): responses a
// second per client network and name, by kind of response, for UDP.
type RRLOptions struct {
	// Enable turns it on (rrl).
	Enable bool
	// ResponsesPerSecond is the rate of answers (rrl_responses_per_second); the rates of the
	// other kinds default to it. Each rate is the responses a second of one account; 0 for
	// no limit.
	ResponsesPerSecond int
	// NoDataPerSecond, NXDomainsPerSecond, ReferralsPerSecond and ErrorsPerSecond are the
	// other kinds' rates (rrl_nodata_per_second, ...); -1 when not set.
	NoDataPerSecond, NXDomainsPerSecond, ReferralsPerSecond, ErrorsPerSecond int
	RRLAccounts
}

// RRLAccounts are how response rate limiting keeps its accounts, beside the rates: the
// options of the same names, and the settings of a limiter (rrl.Config).
type RRLAccounts struct {
	// Window is how long the debt of an account lasts (rrl_window): a client over the limit
	// is answered again once its rate stayed under the limit for the window. At least a
	// second.
	Window time.Duration
	// Slip answers one limited response in Slip with a truncated one (rrl_slip; 0: none, 1:
	// all).
	Slip int
	// IPv4Prefix and IPv6Prefix are the client networks that share an account
	// (rrl_ipv4_prefix_length, rrl_ipv6_prefix_length).
	IPv4Prefix, IPv6Prefix int
	// Exempt networks are never limited (rrl_exempt).
	Exempt []netip.Prefix
	// LogOnly counts and logs what would be limited, and sends every response
	// (rrl_log_only).
	LogOnly bool
	// TableSize is the number of accounts, 8 bytes each (rrl_table_size); a limiter rounds
	// it up to a power of two, at least 64.
	TableSize int
}

// Rate returns the rate of a kind whose option is v: v, or the answers' rate when not set.
func (o RRLOptions) Rate(v int) int {
	if v < 0 {
		return o.ResponsesPerSecond
	}
	return v
}

// CookieOptions are the DNS cookies' settings (RFC 7873 and 9018).
type CookieOptions struct {
	// Enable answers cookies (cookies; on by default).
	Enable bool
	// SecretFile holds the server secrets that the instances of a site share
	// (cookie_secret_file); empty: a random secret of this process.
	SecretFile string
	// Require answers BADCOOKIE to a UDP query with a client cookie and no valid server
	// cookie (cookie_require).
	Require bool
}

// DNSTLSOptions are the certificate of the server block's encrypted addresses, DNS over TLS
// (tls://) and DNS over QUIC (quic://): PEM files, read again when they change (tls_cert,
// tls_key).
type DNSTLSOptions struct {
	Cert, Key string
}

// defaultRRL returns RRLOptions with every default, off.
func defaultRRL() RRLOptions {
	return RRLOptions{
		ResponsesPerSecond: DefaultRRLResponsesPerSecond, NoDataPerSecond: -1, NXDomainsPerSecond: -1, ReferralsPerSecond: -1,
		ErrorsPerSecond: -1, RRLAccounts: DefaultRRLAccounts(),
	}
}

// DefaultRRLAccounts returns the defaults of RRLAccounts: a window of 15 s, slip 2, /24 and
// /56, 2^18 accounts (2 MiB).
func DefaultRRLAccounts() RRLAccounts {
	return RRLAccounts{
		Window: DefaultRRLWindow, Slip: DefaultRRLSlip, IPv4Prefix: DefaultRRLIPv4Prefix,
		IPv6Prefix: DefaultRRLIPv6Prefix, TableSize: DefaultRRLTableSize,
	}
}
