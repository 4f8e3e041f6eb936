package gslb

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
)

// testSecret is a valid base64 TSIG secret.
const testSecret = "c2l0ZXMtc2hhcmVkLXNlY3JldC1vZi0zMi1ieXRlcyE="

func TestParseSitesOptions(t *testing.T) {
	tests := []struct {
		name    string
		lines   string
		port    int // the server block's port
		want    config.SitesOptions
		wantErr string
	}{
		{name: "none", lines: "enable_txt", want: config.SitesOptions{}},
		{
			name: "every option",
			lines: "site eu\n peers 192.0.2.10 198.51.100.10:5353\n peers [2001:db8::10] [2001:db8::11]:1053 ns.us.example.com\n" +
				" peer_interval 5s\n peer_timeout 500ms\n split_brain_threshold 20\n peer_tsig Sites.Example.COM hmac-sha256 " + testSecret,
			want: config.SitesOptions{Site: "eu",
				Peers:        []string{"192.0.2.10:53", "198.51.100.10:5353", "[2001:db8::10]:53", "[2001:db8::11]:1053", "ns.us.example.com:53"},
				PeerInterval: 5 * time.Second, PeerTimeout: 500 * time.Millisecond, SplitBrainThreshold: 20 * time.Second,
				TSIG: &config.TSIGKey{Name: "sites.example.com.", Algorithm: dns.HmacSHA256, Secret: testSecret}},
		},
		{
			name: "peers from the system resolver, on the server's port", port: 1053,
			lines: "site ap\n peers_from_ns",
			want:  config.SitesOptions{Site: "ap", PeersFromNS: true, PeerPort: 1053},
		},
		{
			name: "peers from the parent's servers", port: 53,
			lines: "site ap\n peers_from_ns 192.0.2.53 [2001:db8::53]:5300\n peers_from_ns ns1.example.com",
			want: config.SitesOptions{Site: "ap", PeersFromNS: true, PeerPort: 53,
				NSServers: []string{"192.0.2.53:53", "[2001:db8::53]:5300", "ns1.example.com:53"}},
		},
		{name: "the port is only for peers from NS", port: 1053, lines: "site eu\n peers 192.0.2.10", want: config.SitesOptions{Site: "eu", Peers: []string{"192.0.2.10:53"}}},
		{name: "measure remote", lines: "site eu\n peers 192.0.2.10\n measure_remote", want: config.SitesOptions{Site: "eu", Peers: []string{"192.0.2.10:53"}, MeasureRemote: true}},
		{name: "sha1", lines: "peer_tsig k. HMAC-SHA1. " + testSecret, want: config.SitesOptions{TSIG: &config.TSIGKey{Name: "k.", Algorithm: dns.HmacSHA1, Secret: testSecret}}},
		{name: "sha512", lines: "peer_tsig k hmac-sha512 " + testSecret, want: config.SitesOptions{TSIG: &config.TSIGKey{Name: "k.", Algorithm: dns.HmacSHA512, Secret: testSecret}}},

		{name: "site in upper case", lines: "site EU", wantErr: `Testfile:3 - Error during parsing: site "EU": a site name has lower-case letters, digits and hyphens only`},
		{name: "site with a dot", lines: "site eu.west", wantErr: "lower-case letters, digits and hyphens only"},
		{name: "site with a leading hyphen", lines: "site -eu", wantErr: "neither starts nor ends with a hyphen"},
		{name: "empty site", lines: `site ""`, wantErr: "a site name has 1 to 50 characters, not 0"},
		{name: "two sites", lines: "site eu us", wantErr: "site: want one argument, got 2"},
		{name: "no peers", lines: "site eu\n peers", wantErr: "Testfile:4 - Error during parsing: peers: want at least one ADDRESS[:PORT]"},
		{name: "empty peer", lines: `peers ""`, wantErr: `peers: "": not an IP address or a host name`},
		{name: "IPv6 without brackets", lines: "peers 2001:db8::10", wantErr: `peers: "2001:db8::10": not ADDRESS[:PORT] (write an IPv6 address in brackets`},
		{name: "port out of range", lines: "peers [2001:db8::10]:65536", wantErr: "the port is not a number from 1 to 65535"},
		{name: "port zero", lines: "peers 192.0.2.10:0", wantErr: "the port is not a number from 1 to 65535"},
		{name: "port by name", lines: "peers 192.0.2.10:domain", wantErr: "the port is not a number from 1 to 65535"},
		{name: "port without a host", lines: "peers :53", wantErr: `peers: ":53": not an IP address or a host name`},
		{name: "address with a zone", lines: "peers [fe80::1%eth0]:53", wantErr: "an address with a zone is not accepted"},
		{name: "bad host name", lines: "peers ns..example.com", wantErr: "not an IP address or a host name"},
		{name: "mistyped address", lines: "peers 192.0.2.300", wantErr: `peers: "192.0.2.300": not an IP address or a host name`},
		{name: "host name with a bad character", lines: "peers ns_1!.example.com:53", wantErr: "not an IP address or a host name"},
		{name: "bad NS server", lines: "peers_from_ns 192.0.2.53:99999", wantErr: `Testfile:3 - Error during parsing: peers_from_ns: "192.0.2.53:99999": the port`},
		{name: "interval too short", lines: "peer_interval 50ms", wantErr: "Testfile:3 - Error during parsing: peer_interval: 50ms is shorter than 100ms"},
		{name: "interval not a duration", lines: "peer_interval often", wantErr: "peer_interval: "},
		{name: "timeout too short", lines: "peer_timeout 5ms", wantErr: "peer_timeout: 5ms is shorter than 10ms"},
		{name: "threshold not a duration", lines: "split_brain_threshold soon", wantErr: "split_brain_threshold: "},
		{name: "threshold arity", lines: "split_brain_threshold", wantErr: "split_brain_threshold: want one argument, got 0"},
		{name: "tsig arity", lines: "peer_tsig k hmac-sha256", wantErr: "Testfile:3 - Error during parsing: peer_tsig: want 'peer_tsig NAME ALGORITHM SECRET', got 2 arguments"},
		{name: "tsig algorithm", lines: "peer_tsig k hmac-md5 " + testSecret, wantErr: `peer_tsig: unknown algorithm "hmac-md5"`},
		{name: "tsig secret", lines: "peer_tsig k hmac-sha256 not-base64!", wantErr: "peer_tsig: the secret is not base64"},
		{name: "tsig empty secret", lines: `peer_tsig k hmac-sha256 ""`, wantErr: "peer_tsig: the secret is not base64"},
		{name: "tsig name", lines: "peer_tsig . hmac-sha256 " + testSecret, wantErr: `peer_tsig: "." is not a key name: the root is not a host name`},

		// The consistency of the options, reported at the first sites option.
		{name: "peers without a site", lines: "enable_txt\n peers 192.0.2.10", wantErr: "Testfile:4 - Error during parsing: peers need the site option"},
		{name: "measure remote without peers", lines: "site eu\n measure_remote", wantErr: "Testfile:3 - Error during parsing: measure_remote needs peers"},
		{name: "measure remote with an argument", lines: "site eu\n peers 192.0.2.10\n measure_remote yes", wantErr: "measure_remote"},
		{name: "peers from NS without a site", lines: "peers_from_ns", wantErr: "Testfile:3 - Error during parsing: peers need the site option"},
		{name: "threshold not above the interval", lines: "enable_txt\n peer_interval 10s\n site eu\n split_brain_threshold 10s",
			wantErr: "Testfile:4 - Error during parsing: split_brain_threshold 10s must be longer than peer_interval 10s"},
		{name: "default threshold under a long interval", lines: "site eu\n peer_interval 1m\n split_brain_threshold 45s", wantErr: "split_brain_threshold 45s must be longer than peer_interval 1m0s"},
		{name: "timeout above the interval", lines: "site eu\n peer_interval 1s\n peer_timeout 2s", wantErr: "Testfile:3 - Error during parsing: peer_timeout 2s is longer than peer_interval 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, ok := parseBlockPortWant(t, "gslb {\n zone example.org. a.yml\n "+tt.lines+"\n}", nil, "", tt.port, tt.wantErr)
			if ok && !reflect.DeepEqual(b.Options.Sites, tt.want) {
				t.Fatalf("sites options %+v\nwant %+v", b.Options.Sites, tt.want)
			}
		})
	}
}

// TestSitesDefaults checks the defaults a block with a site alone runs with, and that the
// defaults of peer_timeout and split_brain_threshold follow a short or long peer_interval.
func TestSitesDefaults(t *testing.T) {
	tests := []struct {
		lines                        string
		interval, timeout, threshold time.Duration
	}{
		{"site eu", 10 * time.Second, 2 * time.Second, 30 * time.Second},
		{"site eu\n peer_interval 1s", time.Second, time.Second, 30 * time.Second},
		{"site eu\n peer_interval 1m", time.Minute, 2 * time.Second, 2 * time.Minute},
	}
	for _, tt := range tests {
		b, _ := parseBlockWant(t, "gslb {\n zone example.org. a.yml\n "+tt.lines+"\n}", nil, "", "")
		got := b.Options.Sites.WithDefaults()
		want := config.SitesOptions{Site: "eu", PeerInterval: tt.interval, PeerTimeout: tt.timeout, SplitBrainThreshold: tt.threshold, PeerPort: 53}
		if !b.Options.Sites.Enabled() || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: options with defaults %+v, want %+v", tt.lines, got, want)
		}
	}
}

// TestSetupTSIGSecret checks that setup gives the server block the peer_tsig key, with which
// CoreDNS's server verifies the TSIG of incoming queries, and nothing without peer_tsig.
func TestSetupTSIGSecret(t *testing.T) {
	zone := filepath.Join(t.TempDir(), "zone.yml")
	if err := os.WriteFile(zone, []byte("records:\n  www.example.org.:\n    backends: [{address: 192.0.2.1, site: eu}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The engines opened here never start; give back what they took.
	t.Cleanup(func() { engine.Default.KeepOnly(nil) })
	for _, tt := range []struct {
		options string
		want    map[string]string
	}{
		{"site eu\n peer_tsig Sites.Example.com. hmac-sha256 " + testSecret, map[string]string{"sites.example.com.": testSecret}},
		{"site eu", nil},
	} {
		c := caddy.NewTestController("dns", "gslb {\n zone example.org. "+zone+"\n "+tt.options+"\n}")
		if err := setup(c); err != nil {
			t.Fatal(err)
		}
		if got := dnsserver.GetConfig(c).TsigSecret; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: the server's TSIG secrets %v, want %v", tt.options, got, tt.want)
		}
	}
}

// TestServerPort checks the port setup reads from the server block, the one the peers found
// from NS are asked on.
func TestServerPort(t *testing.T) {
	for port, want := range map[string]int{"1053": 1053, "53": 53, "": 53} {
		if got := serverPort(&dnsserver.Config{Port: port}); got != want {
			t.Errorf("port %q: %d, want %d", port, got, want)
		}
	}
}
