package gslb

import (
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/config"
)

func TestParseClusterOptions(t *testing.T) {
	dir := t.TempDir()
	pem := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	notPEM := pem("not.pem", "not a certificate")
	tests := []struct {
		name    string
		lines   string
		want    config.ClusterOptions
		wantErr string
	}{
		{
			name: "every option",
			lines: "redis_enable\n redis_addr 10.0.0.1:6379 [2001:db8::1]:6380\n redis_addr redis.internal:6379\n" +
				" redis_username gslb\n redis_password \"s3cret pass\"\n redis_db 2\n redis_key_prefix prod:gslb:\n redis_sync_mode none\n" +
				" redis_sentinel_master main\n redis_tls\n redis_tls_server_name redis.internal",
			want: config.ClusterOptions{Enable: true, Addrs: []string{"10.0.0.1:6379", "[2001:db8::1]:6380", "redis.internal:6379"},
				Username: "gslb", Password: "s3cret pass", DB: 2, KeyPrefix: "prod:gslb:", SyncMode: config.SyncNone,
				SentinelMaster: "main", TLS: config.ClusterTLS{Enable: true, ServerName: "redis.internal"}},
		},
		{name: "enable false", lines: "redis_enable false", want: config.ClusterOptions{}},
		{name: "lock mode", lines: "redis_enable true\n redis_sync_mode lock", want: config.ClusterOptions{Enable: true, SyncMode: config.SyncLock}},
		{
			name: "quorum mode",
			lines: "redis_enable\n redis_sync_mode quorum\n redis_quorum 60%\n redis_min_voters 3\n redis_site eu-west\n" +
				" redis_canary 10.0.0.2:53 [2001:db8::2]:443\n redis_canary dns.example:53\n redis_canary_interval 2s\n probe_source 192.0.2.1 2001:db8::1",
			want: config.ClusterOptions{Enable: true, SyncMode: config.SyncQuorum, Quorum: config.QuorumOptions{
				Threshold: config.Threshold{Percent: 60}, MinVoters: 3, Site: "eu-west",
				Canaries: []string{"10.0.0.2:53", "[2001:db8::2]:443", "dns.example:53"}, CanaryInterval: 2 * time.Second},
				ProbeSources: []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")}},
		},
		{name: "quorum of a number", lines: "redis_quorum 2", want: config.ClusterOptions{Quorum: config.QuorumOptions{Threshold: config.Threshold{Count: 2}}}},
		{name: "quorum majority", lines: "redis_quorum 2\n redis_quorum majority", want: config.ClusterOptions{}},
		{name: "probe source mapped", lines: "probe_source ::ffff:127.0.0.2", want: config.ClusterOptions{ProbeSources: []netip.Addr{netip.MustParseAddr("127.0.0.2")}}},
		{name: "unknown sync mode", lines: "redis_sync_mode majority", wantErr: `redis_sync_mode: "majority" is not lock, none or quorum`},
		{name: "quorum of zero", lines: "redis_quorum 0", wantErr: `Testfile:3 - Error during parsing: redis_quorum: "0" is not majority, a number of voters or a percentage`},
		{name: "quorum above 100%", lines: "redis_quorum 101%", wantErr: `redis_quorum: "101%" is not a percentage from 1% to 100%`},
		{name: "min voters", lines: "redis_min_voters 0", wantErr: `redis_min_voters: "0" is not a positive integer`},
		{name: "empty site", lines: "redis_site \"\"", wantErr: "redis_site: the label must not be empty"},
		{name: "canary without port", lines: "redis_canary 10.0.0.2", wantErr: `redis_canary: "10.0.0.2" is not HOST:PORT`},
		{name: "canary interval", lines: "redis_canary_interval 10ms", wantErr: "redis_canary_interval: 10ms is shorter than 100ms"},
		{name: "probe source name", lines: "probe_source eth0", wantErr: `probe_source: "eth0" is not an IP address`},
		{name: "probe sources of one family", lines: "probe_source 192.0.2.1 192.0.2.2", wantErr: "probe_source: 192.0.2.1 and 192.0.2.2 are of the same address family"},
		{name: "probe sources arity", lines: "probe_source", wantErr: "probe_source: want one address, or one IPv4 and one IPv6 address, got 0 arguments"},
		{name: "address without port", lines: "redis_addr 10.0.0.1", wantErr: `Testfile:3 - Error during parsing: redis_addr: "10.0.0.1" is not HOST:PORT`},
		{name: "address with a bad port", lines: "redis_addr redis:http", wantErr: "is not HOST:PORT"},
		{name: "no address", lines: "redis_addr", wantErr: "want at least one HOST:PORT"},
		{name: "negative db", lines: "redis_db -1", wantErr: `redis_db: "-1" is not a database number`},
		{name: "empty prefix", lines: "redis_key_prefix \"\"", wantErr: "must not be empty"},
		{name: "bad enable", lines: "redis_enable maybe", wantErr: `redis_enable: "maybe" is not true or false`},
		{name: "password arity", lines: "redis_password a b", wantErr: "redis_password: want one argument"},
		{name: "missing CA file", lines: "redis_tls_ca missing.pem", wantErr: "Testfile:3 - Error during parsing: redis_tls_ca: open " + filepath.Join(dir, "missing.pem")},
		{name: "CA file without a certificate", lines: "redis_tls_ca not.pem", wantErr: "no PEM certificate in " + notPEM},
		{name: "client certificate needs its key", lines: "redis_tls_cert cert.pem", wantErr: "want 'redis_tls_cert CERT_FILE KEY_FILE'"},
		{name: "client certificate that is none", lines: "redis_tls_cert not.pem not.pem", wantErr: "Testfile:3 - Error during parsing: redis_tls_cert:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := caddy.NewTestController("dns", "gslb {\n zone example.org. a.yml\n "+tt.lines+"\n}")
			b, err := ParseBlock(c, dir, 0)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(b.Options.Cluster, tt.want) {
				t.Fatalf("cluster options %+v\nwant %+v", b.Options.Cluster, tt.want)
			}
		})
	}
}
