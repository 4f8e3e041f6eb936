package gslb

import (
	"reflect"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
)

// TestParseDNSSECOptions reads dnssec blocks: the zones they sign, their keys (relative to the
// root) and every option with its default, and refuses what would not sign, naming the line.
func TestParseDNSSECOptions(t *testing.T) {
	const head = "gslb {\n zone example.org. a.yml\n zone example.net. b.yml\n"
	defaults := config.DefaultDNSSECOptions()
	with := func(f func(*config.DNSSECOptions)) []config.DNSSECOptions {
		d := defaults
		f(&d)
		return []config.DNSSECOptions{d}
	}
	tests := []struct {
		name    string
		lines   string
		want    []config.DNSSECOptions
		wantErr string
	}{
		{name: "none"},
		{name: "CoreDNS's syntax", lines: " dnssec {\n  key file Kexample.org.+013+12345 /keys/Kexample.org.+013+54321.key\n }\n",
			want: with(func(d *config.DNSSECOptions) {
				d.Keys, d.Line = []string{"/etc/meridian/Kexample.org.+013+12345", "/keys/Kexample.org.+013+54321.key"}, 4
			})},
		{name: "every option", lines: " dnssec example.org {\n  key file K1\n  key file K2\n  signature_validity 30d\n  signature_refresh 7d12h\n  inception_offset 2h\n  dnskey_ttl 300\n  cache_capacity 1000\n  sign_rate 50\n }\n",
			want: with(func(d *config.DNSSECOptions) {
				*d = config.DNSSECOptions{Zones: []string{"example.org."}, Keys: []string{"/etc/meridian/K1", "/etc/meridian/K2"}, Validity: 30 * 24 * time.Hour,
					Refresh: 7*24*time.Hour + 12*time.Hour, InceptionOffset: 2 * time.Hour, DNSKEYTTL: 300 * time.Second, CacheCapacity: 1000, SignRate: 50, Line: 4}
			})},
		{name: "two blocks, two zones", lines: " dnssec example.org. {\n  key file K1\n }\n dnssec EXAMPLE.NET {\n  key file K2\n }\n",
			want: []config.DNSSECOptions{
				func() config.DNSSECOptions {
					d := defaults
					d.Zones, d.Keys, d.Line = []string{"example.org."}, []string{"/etc/meridian/K1"}, 4
					return d
				}(),
				func() config.DNSSECOptions {
					d := defaults
					d.Zones, d.Keys, d.Line = []string{"example.net."}, []string{"/etc/meridian/K2"}, 7
					return d
				}(),
			}},
		{name: "no key", lines: " dnssec {\n  sign_rate 5\n }\n", wantErr: "dnssec: no key: add a 'key file KEY...' line"},
		{name: "key without file", lines: " dnssec {\n  key K1\n }\n", wantErr: "Testfile:5 - Error during parsing: dnssec: want 'key file KEY...'"},
		{name: "AWS", lines: " dnssec {\n  key aws_secretsmanager K1\n }\n", wantErr: "dnssec: want 'key file KEY...'"},
		{name: "unknown option", lines: " dnssec {\n  key file K1\n  nsec3\n }\n", wantErr: `Testfile:6 - Error during parsing: dnssec: unknown option "nsec3"`},
		{name: "refresh not shorter", lines: " dnssec {\n  key file K1\n  signature_validity 5d\n  signature_refresh 5d\n }\n", wantErr: "signature_refresh (120h0m0s) must be shorter than signature_validity (120h0m0s)"},
		{name: "validity too short", lines: " dnssec {\n  key file K1\n  signature_validity 10s\n }\n", wantErr: "signature_validity: 10s is shorter than 1m0s"},
		{name: "not a zone of the block", lines: " dnssec example.com {\n  key file K1\n }\n", wantErr: "Testfile:4 - Error during parsing: dnssec: example.com. is not a zone of this gslb block"},
		{name: "a zone signed twice", lines: " dnssec {\n  key file K1\n }\n dnssec example.org {\n  key file K2\n }\n", wantErr: "the zone example.org. is signed by two dnssec blocks (lines 4 and 7)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, ok := parseBlockWant(t, head+tt.lines+"}", nil, "/etc/meridian", tt.wantErr)
			if ok && !reflect.DeepEqual(b.Options.DNSSEC, tt.want) {
				t.Errorf("dnssec %+v, want %+v", b.Options.DNSSEC, tt.want)
			}
		})
	}
}
