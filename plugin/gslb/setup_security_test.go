package gslb

import (
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
)

func TestParseSecurityOptions(t *testing.T) {
	b, _ := parseBlockWant(t, `gslb {
	zone example.org. db.yml
	rrl
	rrl_responses_per_second 50
	rrl_nxdomains_per_second 5
	rrl_errors_per_second 0
	rrl_window 30s
	rrl_slip 1
	rrl_ipv4_prefix_length 28
	rrl_ipv6_prefix_length 48
	rrl_exempt 192.0.2.0/24 2001:db8::1
	rrl_exempt 198.51.100.7
	rrl_log_only
	rrl_table_size 1024
	cookies false
	cookie_secret_file secrets/cookie
	cookie_require
	tls_cert tls/dns.crt
	tls_key /etc/ssl/dns.key
}`, nil, "/etc/meridian", "")
	want := config.RRLOptions{
		Enable: true, ResponsesPerSecond: 50, NoDataPerSecond: -1, NXDomainsPerSecond: 5, ReferralsPerSecond: -1, ErrorsPerSecond: 0,
		RRLAccounts: config.RRLAccounts{
			Window: 30 * time.Second, Slip: 1, IPv4Prefix: 28, IPv6Prefix: 48, LogOnly: true, TableSize: 1024,
			Exempt: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("2001:db8::1/128"), netip.MustParsePrefix("198.51.100.7/32")},
		},
	}
	if !reflect.DeepEqual(b.Options.RRL, want) {
		t.Errorf("rrl options\n%+v, want\n%+v", b.Options.RRL, want)
	}
	if c := b.Options.Cookies; c != (config.CookieOptions{SecretFile: "/etc/meridian/secrets/cookie", Require: true}) {
		t.Errorf("cookie options %+v", c)
	}
	if tls := b.Options.TLS; tls != (config.DNSTLSOptions{Cert: "/etc/meridian/tls/dns.crt", Key: "/etc/ssl/dns.key"}) {
		t.Errorf("tls options %+v", tls)
	}
	if r := b.Options.RRL; r.Rate(r.NoDataPerSecond) != 50 || r.Rate(r.ErrorsPerSecond) != 0 {
		t.Errorf("rates: nodata %d, errors %d", r.Rate(r.NoDataPerSecond), r.Rate(r.ErrorsPerSecond))
	}

	defaults, _ := parseBlockWant(t, "gslb db.yml example.org", nil, "", "")
	if o := defaults.Options; o.RRL.Enable || !o.Cookies.Enable || o.RRL.ResponsesPerSecond != 20 || o.RRL.Window != 15*time.Second || o.RRL.Slip != 2 {
		t.Errorf("defaults: %+v %+v", o.RRL, o.Cookies)
	}

	for _, c := range []struct{ input, want string }{
		{"rrl_window 10s", "rrl_window: rate limiting is off: turn it on with rrl"},
		{"rrl\nrrl_slip 11", `"11" is not a number from 0 to 10`},
		{"rrl\nrrl_window 500ms", "shorter than 1s"},
		{"rrl\nrrl_ipv4_prefix_length 33", "from 1 to 32"},
		{"rrl\nrrl_exempt", "want one or more networks"},
		{"rrl\nrrl_exempt 10.0.0.0/33", `"10.0.0.0/33" is not a network or an address`},
		{"rrl\nrrl_responses_per_second -1", "from 0 to 100000"},
		{"tls_cert a.crt", "tls_cert and tls_key must be given together"},
	} {
		parseBlockWant(t, "gslb {\n zone example.org. db.yml\n"+c.input+"\n}", nil, "", c.want)
	}
	// rrl false keeps the settings, off.
	if b, _ := parseBlockWant(t, "gslb {\n zone example.org. db.yml\n rrl false\n rrl_slip 0\n}", nil, "", ""); b.Options.RRL.Enable || b.Options.RRL.Slip != 0 {
		t.Errorf("rrl false: %+v", b.Options.RRL)
	}
}

// TestPlainDNS: a server block is plain DNS only when none of its keys names another
// transport; ServeDNS looks up the transport of the others' queries.
func TestPlainDNS(t *testing.T) {
	tests := []struct {
		keys []string
		want bool
	}{
		{[]string{"example.org.:53"}, true},
		{[]string{"dns://example.org.:53", ".:1053"}, true},
		{[]string{".:53", "tls://.:853"}, false},
		{[]string{"quic://.:853"}, false},
		{[]string{"https://.:443"}, false},
		{[]string{"grpc://.:443", "dns://.:53"}, false},
	}
	for _, tt := range tests {
		if got := plainDNS(tt.keys); got != tt.want {
			t.Errorf("plainDNS(%q) = %t, want %t", tt.keys, got, tt.want)
		}
	}
}
