package gslb

import (
	"fmt"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
)

// The options every heartbeats block needs besides its heartbeat_zone, and the options they
// parse to.
const (
	hbTSIG  = "heartbeat_tsig HB.corp.example hmac-sha256 " + testSecret
	hbNeeds = "site eu-1\n region europe\n " + hbTSIG
	hbLocal = "heartbeat_zone local europe.hb.corp.example. 192.0.2.53"
)

// hbWant returns the options of hbNeeds with the local zone and servers of hbLocal, changed
// by f.
func hbWant(f func(*config.HeartbeatOptions)) config.HeartbeatOptions {
	o := config.HeartbeatOptions{
		Region: "europe",
		Local:  &config.HeartbeatZone{Zone: "europe.hb.corp.example.", Servers: []string{"192.0.2.53:53"}},
		TSIG:   &config.TSIGKey{Name: "hb.corp.example.", Algorithm: dns.HmacSHA256, Secret: testSecret},
	}
	if f != nil {
		f(&o)
	}
	return o
}

func TestParseHeartbeatOptions(t *testing.T) {
	tests := []struct {
		name    string
		lines   string
		want    config.HeartbeatOptions
		wantErr string
	}{
		{name: "none", lines: "enable_txt", want: config.HeartbeatOptions{}},
		{name: "a local zone", lines: hbLocal + "\n " + hbNeeds, want: hbWant(nil)},
		{
			name: "every option",
			lines: "heartbeat_zone local Europe.HB.corp.example 192.0.2.53:5353 [2001:db8::53] [2001:db8::54]:1053\n" +
				" heartbeat_zone global global.hb.corp.example. ns1.corp.example ns2.corp.example.:5300\n" +
				" site eu-1\n region europe\n heartbeat_tsig hb-key. HMAC-SHA512 " + testSecret + "\n" +
				" heartbeat_interval 5s\n local_healthy_duration 20s\n global_healthy_duration 1m\n self_heal_interval 90s\n" +
				" delegation Example.COM 192.0.2.1 [2001:db8::1]:5300\n delegation_ns NS-EU-1.example.com 192.0.2.10 2001:db8::10 ::ffff:192.0.2.11\n" +
				" delegation_stale_threshold 10m",
			want: config.HeartbeatOptions{Region: "europe",
				Local:    &config.HeartbeatZone{Zone: "europe.hb.corp.example.", Servers: []string{"192.0.2.53:5353", "[2001:db8::53]:53", "[2001:db8::54]:1053"}},
				Global:   &config.HeartbeatZone{Zone: "global.hb.corp.example.", Servers: []string{"ns1.corp.example:53", "ns2.corp.example.:5300"}},
				TSIG:     &config.TSIGKey{Name: "hb-key.", Algorithm: dns.HmacSHA512, Secret: testSecret},
				Interval: 5 * time.Second, LocalHealthy: 20 * time.Second, GlobalHealthy: time.Minute, SelfHeal: 90 * time.Second,
				Delegation: &config.Delegation{Parent: "example.com.", Servers: []string{"192.0.2.1:53", "[2001:db8::1]:5300"},
					NS:             "ns-eu-1.example.com.",
					Glue:           []netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("2001:db8::10"), netip.MustParseAddr("192.0.2.11")},
					StaleThreshold: 10 * time.Minute}},
		},
		{
			name:  "a global zone only",
			lines: "heartbeat_zone global global.hb.corp.example. 192.0.2.53\n " + hbNeeds,
			want: hbWant(func(o *config.HeartbeatOptions) {
				o.Global, o.Local = o.Local, nil
				o.Global.Zone = "global.hb.corp.example."
			}),
		},
		{
			name:  "durations in bare seconds",
			lines: hbLocal + "\n " + hbNeeds + "\n heartbeat_interval 2\n local_healthy_duration 7\n global_healthy_duration 8\n self_heal_interval 60",
			want: hbWant(func(o *config.HeartbeatOptions) {
				o.Interval, o.LocalHealthy, o.GlobalHealthy, o.SelfHeal = 2*time.Second, 7*time.Second, 8*time.Second, time.Minute
			}),
		},
		{
			name:  "the threshold before the delegation, a second delegation_ns replaces the first",
			lines: hbLocal + "\n " + hbNeeds + "\n delegation_stale_threshold 1m\n delegation example.com. 192.0.2.1\n delegation_ns ns1.example.com. 192.0.2.9\n delegation_ns ns2.example.org. 2001:db8::10",
			want: hbWant(func(o *config.HeartbeatOptions) {
				o.Delegation = &config.Delegation{Parent: "example.com.", Servers: []string{"192.0.2.1:53"}, NS: "ns2.example.org.",
					Glue: []netip.Addr{netip.MustParseAddr("2001:db8::10")}, StaleThreshold: time.Minute}
			}),
		},
		{
			name:  "a delegation, its threshold left at 0 for the default",
			lines: hbLocal + "\n " + hbNeeds + "\n delegation example.com. ns1.example.com\n delegation_ns ns-eu-1.eu.example.com. 2001:db8::10",
			want: hbWant(func(o *config.HeartbeatOptions) {
				o.Delegation = &config.Delegation{Parent: "example.com.", Servers: []string{"ns1.example.com:53"}, NS: "ns-eu-1.eu.example.com.",
					Glue: []netip.Addr{netip.MustParseAddr("2001:db8::10")}}
			}),
		},

		{name: "region in upper case", lines: "region Europe", wantErr: `Testfile:3 - Error during parsing: region "Europe": a region name has lower-case letters, digits and hyphens only`},
		{name: "region with a dot", lines: "region eu.west", wantErr: "a region name has lower-case letters, digits and hyphens only"},
		{name: "region with a trailing hyphen", lines: "region europe-", wantErr: "a region name neither starts nor ends with a hyphen"},
		{name: "empty region", lines: `region ""`, wantErr: "a region name has 1 to 50 characters, not 0"},
		{name: "two regions", lines: "region europe asia", wantErr: "Testfile:3 - Error during parsing: region: want one argument, got 2"},
		{name: "zone without servers", lines: "heartbeat_zone local europe.hb.corp.example.", wantErr: "Testfile:3 - Error during parsing: heartbeat_zone: want 'heartbeat_zone local|global ZONE SERVER[:PORT]...'"},
		{name: "zone without a kind", lines: "heartbeat_zone europe.hb.corp.example. 192.0.2.53", wantErr: "heartbeat_zone: want 'heartbeat_zone local|global"},
		{name: "zone of another kind", lines: "heartbeat_zone regional europe.hb.corp.example. 192.0.2.53", wantErr: `Testfile:3 - Error during parsing: heartbeat_zone: "regional" is neither local nor global`},
		{name: "bad zone name", lines: "heartbeat_zone global hb..corp.example 192.0.2.53", wantErr: `heartbeat_zone: "hb..corp.example" is not a zone name`},
		{name: "root zone", lines: "heartbeat_zone local . 192.0.2.53", wantErr: `heartbeat_zone: "." is not a zone name`},
		{name: "zone server port zero", lines: "heartbeat_zone local europe.hb.corp.example. 192.0.2.53:0", wantErr: `Testfile:3 - Error during parsing: heartbeat_zone: "192.0.2.53:0": the port is not a number from 1 to 65535`},
		{name: "zone server IPv6 without brackets", lines: "heartbeat_zone global global.hb.corp.example. 2001:db8::53", wantErr: `heartbeat_zone: "2001:db8::53": not ADDRESS[:PORT]`},
		{name: "zone server mistyped", lines: "heartbeat_zone local europe.hb.corp.example. 192.0.2.53 192.0.2.300", wantErr: `heartbeat_zone: "192.0.2.300": not an IP address or a host name`},
		{name: "tsig arity", lines: "heartbeat_tsig k hmac-sha256", wantErr: "Testfile:3 - Error during parsing: heartbeat_tsig: want 'heartbeat_tsig NAME ALGORITHM SECRET', got 2 arguments"},
		{name: "tsig algorithm", lines: "heartbeat_tsig k hmac-md5 " + testSecret, wantErr: `heartbeat_tsig: unknown algorithm "hmac-md5"`},
		{name: "tsig secret", lines: "heartbeat_tsig k hmac-sha256 not-base64!", wantErr: "heartbeat_tsig: the secret is not base64"},
		{name: "tsig name", lines: "heartbeat_tsig . hmac-sha256 " + testSecret, wantErr: `heartbeat_tsig: "." is not a key name`},
		{name: "interval too short", lines: "heartbeat_interval 50ms", wantErr: "Testfile:3 - Error during parsing: heartbeat_interval: 50ms is shorter than 100ms"},
		{name: "interval not a duration", lines: "heartbeat_interval often", wantErr: "heartbeat_interval: "},
		{name: "local healthy arity", lines: "local_healthy_duration", wantErr: "Testfile:3 - Error during parsing: local_healthy_duration: want one argument, got 0"},
		{name: "global healthy too short", lines: "global_healthy_duration 10ms", wantErr: "global_healthy_duration: 10ms is shorter than 100ms"},
		{name: "self heal too short", lines: "self_heal_interval 99ms", wantErr: "self_heal_interval: 99ms is shorter than 100ms"},
		{name: "self heal not a duration", lines: "self_heal_interval never", wantErr: "Testfile:3 - Error during parsing: self_heal_interval: "},
		{name: "stale threshold too short", lines: "delegation_stale_threshold 1ms", wantErr: "delegation_stale_threshold: 1ms is shorter than 100ms"},
		{name: "delegation without servers", lines: "delegation example.com.", wantErr: "Testfile:3 - Error during parsing: delegation: want 'delegation PARENT_ZONE SERVER[:PORT]...'"},
		{name: "delegation bad parent", lines: "delegation example..com 192.0.2.1", wantErr: `delegation: "example..com" is not a zone name`},
		{name: "delegation bad server", lines: "delegation example.com. 192.0.2.1:65536", wantErr: `delegation: "192.0.2.1:65536": the port is not a number from 1 to 65535`},
		{name: "delegation_ns without glue", lines: "delegation_ns ns-eu-1.example.com.", wantErr: "Testfile:3 - Error during parsing: delegation_ns: want 'delegation_ns NAME ADDRESS...'"},
		{name: "delegation_ns bad name", lines: "delegation_ns ns..example.com 192.0.2.10", wantErr: `delegation_ns: "ns..example.com" is not a host name`},
		{name: "delegation_ns mistyped IPv4 glue", lines: "delegation_ns ns.example.com 192.0.2.300", wantErr: `Testfile:3 - Error during parsing: delegation_ns: "192.0.2.300" is not an IP address`},
		{name: "delegation_ns IPv6 glue with a zone", lines: "delegation_ns ns.example.com 2001:db8::10 fe80::1%eth0", wantErr: `delegation_ns: "fe80::1%eth0" is not an IP address`},
		{name: "delegation_ns glue with a port", lines: "delegation_ns ns.example.com [2001:db8::10]:53", wantErr: `delegation_ns: "[2001:db8::10]:53" is not an IP address`},
		{name: "delegation_ns host name as glue", lines: "delegation_ns ns.example.com ns.example.net", wantErr: `delegation_ns: "ns.example.net" is not an IP address`},

		// The consistency of the options (config.HeartbeatOptions.Check), reported at the
		// first sites or heartbeats option.
		{name: "no site", lines: "enable_txt\n " + hbLocal + "\n region europe\n " + hbTSIG,
			wantErr: "Testfile:4 - Error during parsing: heartbeat_zone needs the site option"},
		{name: "peers and a heartbeat zone", lines: hbLocal + "\n " + hbNeeds + "\n peers 192.0.2.20",
			wantErr: "Testfile:3 - Error during parsing: heartbeat_zone and peers (or peers_from_ns) are two ways to read the other sites: use one"},
		{name: "peers from NS and a heartbeat zone", lines: "heartbeat_zone global global.hb.corp.example. 192.0.2.53\n " + hbNeeds + "\n peers_from_ns",
			wantErr: "heartbeat_zone and peers (or peers_from_ns) are two ways"},
		{name: "no region", lines: "site eu-1\n " + hbLocal + "\n " + hbTSIG, wantErr: "Testfile:3 - Error during parsing: heartbeat_zone needs the region option"},
		{name: "no key", lines: "site eu-1\n region europe\n " + hbLocal, wantErr: "heartbeat_zone needs heartbeat_tsig: updates are signed"},
		{name: "interval as long as the default healthy durations", lines: hbLocal + "\n " + hbNeeds + "\n heartbeat_interval 30s",
			wantErr: "Testfile:3 - Error during parsing: the healthy durations (30s, 30s) must be longer than heartbeat_interval 30s"},
		{name: "local healthy duration under the interval", lines: hbLocal + "\n " + hbNeeds + "\n heartbeat_interval 20s\n local_healthy_duration 15s",
			wantErr: "the healthy durations (15s, 30s) must be longer than heartbeat_interval 20s"},
		{name: "local healthy duration as long as the interval", lines: hbLocal + "\n " + hbNeeds + "\n heartbeat_interval 20s\n local_healthy_duration 20s\n global_healthy_duration 1m",
			wantErr: "the healthy durations (20s, 1m0s) must be longer than heartbeat_interval 20s"},
		{name: "global healthy duration as long as the default interval", lines: hbLocal + "\n " + hbNeeds + "\n global_healthy_duration 10s",
			wantErr: "the healthy durations (30s, 10s) must be longer than heartbeat_interval 10s"},
		{name: "delegation without delegation_ns", lines: hbLocal + "\n " + hbNeeds + "\n delegation example.com. 192.0.2.1",
			wantErr: "Testfile:3 - Error during parsing: delegation needs delegation_ns: this site's name server and its addresses"},
		{name: "a threshold without delegation", lines: hbLocal + "\n " + hbNeeds + "\n delegation_stale_threshold 10m", wantErr: "delegation_ns and delegation_stale_threshold need delegation"},
		{name: "delegation_ns without delegation", lines: hbLocal + "\n " + hbNeeds + "\n delegation_ns ns.example.com. 192.0.2.10",
			wantErr: "Testfile:3 - Error during parsing: delegation_ns and delegation_stale_threshold need delegation: the parent zone and its servers"},
		{name: "default threshold under a long healthy duration", lines: hbLocal + "\n " + hbNeeds + "\n local_healthy_duration 6m\n delegation example.com. 192.0.2.1\n delegation_ns ns.example.com. 192.0.2.10",
			wantErr: "delegation_stale_threshold 5m0s is shorter than the healthy duration 6m0s"},
		{name: "threshold under the default healthy duration", lines: hbLocal + "\n " + hbNeeds + "\n delegation example.com. 192.0.2.1\n delegation_ns ns.example.com. 192.0.2.10\n delegation_stale_threshold 20s",
			wantErr: "Testfile:3 - Error during parsing: delegation_stale_threshold 20s is shorter than the healthy duration 30s"},
		{name: "region without a zone", lines: "site eu-1\n region europe", wantErr: "Testfile:3 - Error during parsing: region, heartbeat_tsig and delegation need a heartbeat_zone"},
		{name: "key without a zone", lines: "enable_txt\n " + hbTSIG, wantErr: "Testfile:4 - Error during parsing: region, heartbeat_tsig and delegation need a heartbeat_zone"},
		{name: "delegation without a zone", lines: "site eu-1\n delegation example.com. 192.0.2.1\n delegation_ns ns.example.com. 192.0.2.10",
			wantErr: "region, heartbeat_tsig and delegation need a heartbeat_zone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, ok := parseBlockWant(t, "gslb {\n zone example.org. a.yml\n "+tt.lines+"\n}", nil, "", tt.wantErr)
			if ok && !reflect.DeepEqual(b.Options.Heartbeats, tt.want) {
				t.Fatalf("heartbeat options %s\nwant %s", hbString(b.Options.Heartbeats), hbString(tt.want))
			}
		})
	}
}

// hbString shows o with what its zones, key and delegation point to.
func hbString(o config.HeartbeatOptions) string {
	return fmt.Sprintf("%+v\n  local %+v global %+v key %+v delegation %+v", o, deref(o.Local), deref(o.Global), deref(o.TSIG), deref(o.Delegation))
}

// deref returns what p points to, or nil.
func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestHeartbeatsDefaults checks the durations a heartbeats block runs with when it sets none or
// some, and that applying the defaults leaves the parsed options as they were.
func TestHeartbeatsDefaults(t *testing.T) {
	tests := []struct {
		name, lines                          string
		interval, local, global, heal, stale time.Duration
	}{
		{"none set", "", 10 * time.Second, 30 * time.Second, 30 * time.Second, 3 * time.Minute, 0},
		{"a delegation", "\n delegation example.com. 192.0.2.1\n delegation_ns ns.example.com. 192.0.2.10",
			10 * time.Second, 30 * time.Second, 30 * time.Second, 3 * time.Minute, 5 * time.Minute},
		{"some set", "\n heartbeat_interval 1s\n global_healthy_duration 4s\n delegation example.com. 192.0.2.1\n delegation_ns ns.example.com. 192.0.2.10\n delegation_stale_threshold 40s",
			time.Second, 30 * time.Second, 4 * time.Second, 3 * time.Minute, 40 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := parseBlockWant(t, "gslb {\n zone example.org. a.yml\n "+hbLocal+"\n "+hbNeeds+tt.lines+"\n}", nil, "", "")
			parsed := b.Options.Heartbeats
			kept := hbString(parsed)
			got := parsed.WithDefaults()
			if !got.Enabled() || got.Interval != tt.interval || got.LocalHealthy != tt.local || got.GlobalHealthy != tt.global || got.SelfHeal != tt.heal {
				t.Errorf("with defaults: interval %v, healthy %v/%v, self-heal %v; want %v, %v/%v, %v",
					got.Interval, got.LocalHealthy, got.GlobalHealthy, got.SelfHeal, tt.interval, tt.local, tt.global, tt.heal)
			}
			if stale := deref(got.Delegation); tt.stale == 0 && stale != nil || tt.stale != 0 && (stale == nil || got.Delegation.StaleThreshold != tt.stale) {
				t.Errorf("with defaults: delegation %+v, want a stale threshold of %v", stale, tt.stale)
			}
			if hbString(parsed) != kept {
				t.Errorf("WithDefaults changed the parsed options: %s, was %s", hbString(parsed), kept)
			}
		})
	}
}
