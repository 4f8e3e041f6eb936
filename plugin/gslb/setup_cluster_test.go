package gslb

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/testutil"
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
		{name: "quorum is reserved", lines: "redis_sync_mode quorum", wantErr: "Testfile:3 - Error during parsing: redis_sync_mode: quorum is reserved"},
		{name: "unknown sync mode", lines: "redis_sync_mode majority", wantErr: `redis_sync_mode: "majority" is not lock or none`},
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
			b, err := ParseBlock(c, dir)
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

func TestManagerKeyFollowsTheClusterOptions(t *testing.T) {
	base := config.DefaultOptions()
	base.Zones = []config.ZoneSource{{Origin: "example.org.", File: "a.yml"}}
	with := func(f func(*config.ClusterOptions)) config.Options {
		o := base
		f(&o.Cluster)
		return o
	}
	on := func(c *config.ClusterOptions) { c.Enable = true }
	tests := []struct {
		name string
		a, b config.Options
		same bool
	}{
		{"cluster mode off: redis options do not matter", base, with(func(c *config.ClusterOptions) { c.Addrs = []string{"10.0.0.1:6379"} }), true},
		{"cluster mode on", base, with(on), false},
		{"defaults spelled out", with(on), with(func(c *config.ClusterOptions) {
			on(c)
			c.Addrs, c.KeyPrefix, c.SyncMode = []string{config.DefaultRedisAddr}, config.DefaultRedisKeyPrefix, config.SyncLock
		}), true},
		{"another Redis", with(on), with(func(c *config.ClusterOptions) { on(c); c.Addrs = []string{"10.0.0.1:6379"} }), false},
		{"another password", with(on), with(func(c *config.ClusterOptions) { on(c); c.Password = "x" }), false},
	}
	for _, tt := range tests {
		if same := managerKey(tt.a) == managerKey(tt.b); same != tt.same {
			t.Errorf("%s: same manager %v, want %v", tt.name, same, tt.same)
		}
	}
}

func TestSharedManagerOwnsTheClusterClient(t *testing.T) {
	r := testutil.StartRedis(t)
	o := config.DefaultOptions()
	o.Zones = []config.ZoneSource{{Origin: "cluster.test.", File: "a.yml"}}
	o.Cluster = config.ClusterOptions{Enable: true, Addrs: []string{r.Addr}}
	m := managers.acquire(o)
	if again := managers.acquire(o); again != m {
		t.Fatal("a reload with the same options got another manager")
	}
	sm := managers.byKey[managerKey(o)]
	if sm.cluster == nil {
		t.Fatal("cluster mode without a cluster client")
	}
	rc := r.Client(t)
	clients := func() int {
		list, err := rc.ClientList(t.Context()).Result()
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(list, "name=meridian-"+sm.cluster.ID())
	}
	if clients() == 0 {
		t.Fatal("the cluster client is not connected")
	}
	managers.release(o)
	if clients() == 0 {
		t.Fatal("the cluster client was closed while the manager still has a user")
	}
	managers.release(o)
	testutil.Eventually(t, 2*time.Second, func() bool { return clients() == 0 }, "the last release left the cluster client connected")
}
