package config

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// parseErr parses yml and returns its error's text ("" when it loads).
func parseErr(t *testing.T, yml string) string {
	t.Helper()
	_, err := ParseZone("zone.yml", []byte(yml), "example.org", nil, 7)
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestThresholdPrecedence checks where a backend's rise and fall come from: the backend, else
// its checks (profile or inline), else the zone's healthcheck block, else the built-in values.
func TestThresholdPrecedence(t *testing.T) {
	const profile = "healthcheck_profiles:\n  p: {type: tcp, params: {port: 1}, rise: 4}\n"
	tests := []struct {
		name       string
		yml        string
		rise, fall int
	}{
		{"built-in", "records:\n  a.example.org: {backends: [{address: 10.0.0.1, healthchecks: [{type: tcp, params: {port: 1}}]}]}\n",
			DefaultRise, DefaultFall},
		{"global", "healthcheck: {rise: 5, fall: 6}\nrecords:\n  a.example.org: {backends: [{address: 10.0.0.1, healthchecks: [{type: tcp, params: {port: 1}}]}]}\n",
			5, 6},
		{"global rise only", "healthcheck: {rise: 5}\nrecords:\n  a.example.org: {backends: [{address: 10.0.0.1}]}\n",
			5, DefaultFall},
		{"profile over global", profile + "healthcheck: {rise: 5, fall: 6}\nrecords:\n  a.example.org: {backends: [{address: 10.0.0.1, healthchecks: [p]}]}\n",
			4, 6},
		{"inline check over global", "healthcheck: {rise: 5, fall: 6}\nrecords:\n  a.example.org: {backends: [{address: 10.0.0.1, healthchecks: [{type: tcp, params: {port: 1}, fall: 9}]}]}\n",
			5, 9},
		{"backend over all", profile + "healthcheck: {rise: 5, fall: 6}\nrecords:\n  a.example.org: {backends: [{address: 10.0.0.1, rise: 1, fall: 1, healthchecks: [p]}]}\n",
			1, 1},
		{"null block", "healthcheck:\nrecords:\n  a.example.org: {backends: [{address: 10.0.0.1}]}\n",
			DefaultRise, DefaultFall},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := parseString(t, tc.yml).Records[0].Backends[0]
			if c := b.Checks(); c.Rise != tc.rise || c.Fall != tc.fall {
				t.Errorf("rise/fall = %d/%d, want %d/%d", c.Rise, c.Fall, tc.rise, tc.fall)
			}
		})
	}
}

// TestCoreDNSGSLBSpellings checks the record and backend keys CoreDNS-GSLB writes that
// Meridian accepts besides its own, and the warnings the deprecated ones give.
func TestCoreDNSGSLBSpellings(t *testing.T) {
	tests := []struct {
		name  string
		yml   string
		check func(t *testing.T, r Record)
		warns []string
	}{
		{"failover_policy", "records:\n  a.example.org:\n    failover_policy: {mode: fail-closed, rcode: NXDOMAIN}\n    backends: [{address: 10.0.0.1}]\n",
			func(t *testing.T, r Record) {
				eq(t, "fallback", r.Settings().Fallback, Fallback{Mode: FallbackFailClosed, Rcode: 3})
			},
			[]string{`zone.yml:3:5: records["a.example.org"].failover_policy: failover_policy is deprecated: rename it fallback_policy`}},
		{"failover_policy in defaults", "defaults:\n  failover_policy: {mode: fail-closed}\nrecords:\n  a.example.org: {backends: [{address: 10.0.0.1}]}\n",
			func(t *testing.T, r Record) {
				eq(t, "fallback", r.Settings().Fallback, Fallback{Mode: FallbackFailClosed, Rcode: 2})
			},
			[]string{`zone.yml:2:3: defaults.failover_policy: failover_policy is deprecated: rename it fallback_policy`}},
		{"fallback_policy", "records:\n  a.example.org:\n    fallback_policy: {mode: fail-closed}\n    backends: [{address: 10.0.0.1}]\n",
			func(t *testing.T, r Record) { eq(t, "fallback mode", r.Settings().Fallback.Mode, FallbackFailClosed) }, nil},
		{"CoreDNS-GSLB's fallback_ips mode", "records:\n  a.example.org:\n    fallback_policy:\n      mode: fallback_ips\n      fallback_ips: [192.0.2.1]\n      fallback_cname: status.example.org.\n      rcode: SERVFAIL\n    backends: [{address: 10.0.0.1}]\n",
			func(t *testing.T, r Record) {
				eq(t, "fallback", r.Settings().Fallback, Fallback{Mode: FallbackFailSpecific, IPs: []netip.Addr{netip.MustParseAddr("192.0.2.1")}})
			},
			[]string{`zone.yml:6:23: records["a.example.org"].fallback_policy.fallback_cname: ignored: mode fallback_ips answers with fallback_ips only`,
				`zone.yml:7:14: records["a.example.org"].fallback_policy.rcode: ignored: mode fallback_ips answers with fallback_ips only`}},
		{"CoreDNS-GSLB's fallback_cname mode", "records:\n  a.example.org:\n    fallback_policy: {mode: fallback_cname, fallback_cname: status.example.org.}\n    backends: [{address: 10.0.0.1}]\n",
			func(t *testing.T, r Record) {
				eq(t, "fallback", r.Settings().Fallback, Fallback{Mode: FallbackFailSpecific, CNAME: "status.example.org."})
			}, nil},
		{"CoreDNS-GSLB's rcode mode", "records:\n  a.example.org:\n    fallback_policy: {mode: RCODE}\n    backends: [{address: 10.0.0.1}]\n",
			func(t *testing.T, r Record) {
				eq(t, "fallback", r.Settings().Fallback, Fallback{Mode: FallbackFailClosed, Rcode: 2})
			}, nil},
		{"svcb_alpn", "records:\n  a.example.org:\n    svcb_alpn: [h3, h2]\n    backends: [{address: 10.0.0.1}]\n",
			func(t *testing.T, r Record) { eq(t, "alpn", r.Settings().ALPN, []string{"h3", "h2"}) }, nil},
		{"backend timeout", "records:\n  a.example.org:\n    backends: [{address: 10.0.0.1, timeout: 2s}, {address: 10.0.0.2}]\n",
			func(t *testing.T, r Record) {
				eq(t, "timeouts", []time.Duration{r.Backends[0].Checks().Timeout, r.Backends[1].Checks().Timeout}, []time.Duration{2 * time.Second, 0})
			}, nil},
		{"hash_order text", "records:\n  a.example.org:\n    mode: ip-hash\n    hash_order: TEXT\n    backends: [{address: 10.0.0.1}]\n",
			func(t *testing.T, r Record) { eq(t, "hash order", r.Steering().HashOrder, HashOrderText) }, nil},
		{"hash_order default", "records:\n  a.example.org:\n    mode: ip-hash\n    backends: [{address: 10.0.0.1}]\n",
			func(t *testing.T, r Record) { eq(t, "hash order", r.Steering().HashOrder, HashOrderAddress) }, nil},
		{"hash_order in defaults", "defaults: {hash_order: text}\nrecords:\n  a.example.org: {mode: ip-hash, backends: [{address: 10.0.0.1}]}\n  b.example.org: {backends: [{address: 10.0.0.1}]}\n",
			func(t *testing.T, r Record) { eq(t, "hash order", r.Steering().HashOrder, HashOrderText) }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			z := parseString(t, tc.yml)
			tc.check(t, z.Records[0])
			var got []string
			for _, w := range z.Warnings {
				got = append(got, w.Error())
			}
			eq(t, "warnings", got, tc.warns)
		})
	}
}

func TestCoreDNSGSLBSpellingErrors(t *testing.T) {
	tests := []struct{ name, yml, want string }{
		{"both fallback spellings", "records:\n  a.example.org:\n    fallback_policy: {mode: fail-open}\n    failover_policy: {mode: fail-open}\n    backends: [{address: 10.0.0.1}]\n",
			`zone.yml:4:5: records["a.example.org"].failover_policy: fallback_policy is set twice (as fallback_policy and as failover_policy): keep one`},
		{"both alpn spellings", "records:\n  a.example.org:\n    svcb_alpn: [h2]\n    alpn: [h3]\n    backends: [{address: 10.0.0.1}]\n",
			`zone.yml:4:5: records["a.example.org"].alpn: alpn is set twice (as alpn and as svcb_alpn): keep one`},
		{"backend timeout too long", "records:\n  a.example.org:\n    scrape_interval: 3s\n    backends: [{address: 10.0.0.1, timeout: 4s}]\n",
			`zone.yml:4:45: records["a.example.org"].backends[0].timeout: timeout 4s is longer than the record's scrape_interval 3s`},
		{"bad backend timeout", "records:\n  a.example.org:\n    backends: [{address: 10.0.0.1, timeout: soon}]\n",
			`zone.yml:3:45: records["a.example.org"].backends[0].timeout: must be a positive duration`},
		{"bad hash_order", "records:\n  a.example.org:\n    mode: ip-hash\n    hash_order: txt\n    backends: [{address: 10.0.0.1}]\n",
			`zone.yml:4:17: records["a.example.org"].hash_order: unknown hash order "txt"; did you mean "text"? (valid: address, text)`},
		{"hash_order without ip-hash", "records:\n  a.example.org:\n    hash_order: text\n    backends: [{address: 10.0.0.1}]\n",
			`zone.yml:3:17: records["a.example.org"].hash_order: hash_order only applies with mode ip-hash, not failover`},
		{"unknown healthcheck key", "healthcheck: {rise: 2, interval: 5s}\nrecords:\n  a.example.org: {backends: [{address: 10.0.0.1}]}\n",
			`zone.yml:1:24: healthcheck: unknown key "interval"`},
		{"bad global rise", "healthcheck: {rise: 0}\nrecords:\n  a.example.org: {backends: [{address: 10.0.0.1}]}\n",
			`zone.yml:1:21: healthcheck.rise:`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := parseErr(t, tc.yml)
			if !strings.Contains(got, tc.want) {
				t.Errorf("error:\n%s\nwant it to contain:\n%s", got, tc.want)
			}
		})
	}
}
