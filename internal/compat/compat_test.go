package compat

import (
	"slices"
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
)

func TestCheck(t *testing.T) {
	api := config.DefaultOptions()
	api.API.Enable = true
	ipHashOrdered := func(order config.HashOrder, addrs ...string) []*config.Zone {
		r := config.Record{Name: "www.example.org.", Mode: config.ModeIPHash, Pos: config.At("zone.yml", 4, 0)}
		r.SetSettings(config.Settings{ALPN: []string{"h2"}})
		r.SetSteering(config.Steering{HashOrder: order})
		for _, a := range addrs {
			r.Backends = append(r.Backends, config.Backend{Address: a})
		}
		return []*config.Zone{{Origin: "example.org.", Records: []config.Record{r}}}
	}
	ipHash := func(addrs ...string) []*config.Zone { return ipHashOrdered(config.HashOrderAddress, addrs...) }
	same := map[string]int{"api_enable": 3, "api_listen_addr": 4, "enable_txt": 5, "coredns_gslb_metrics": 6}
	record := func(alpn []string, checks ...config.HealthCheck) []*config.Zone {
		r := config.Record{Name: "www.example.org.", Mode: config.ModeFailover, Pos: config.At("zone.yml", 2, 0),
			Backends: []config.Backend{config.Backend{Address: "192.0.2.1"}.WithChecks(config.Checks{HealthChecks: checks})}}
		r.SetSettings(config.Settings{ALPN: alpn})
		return []*config.Zone{{Origin: "example.org.", Records: []config.Record{r}}}
	}
	http := func(params map[string]any) config.HealthCheck {
		return config.HealthCheck{Type: "http", Params: config.NewParams(params), Pos: config.At("zone.yml", 7, 0)}
	}
	h2 := []string{"h2"}
	lua := func(script string) config.HealthCheck {
		return config.HealthCheck{Type: "lua", Params: config.NewParams(map[string]any{"script": script}), Pos: config.At("zone.yml", 9, 0)}
	}
	tests := []struct {
		name    string
		options config.Options
		written map[string]int
		zones   []*config.Zone
		want    []string // "where topic"
	}{
		{"a CoreDNS-GSLB block that writes nothing", config.DefaultOptions(), nil, nil,
			[]string{"Corefile:1 api_enable", "Corefile:1 coredns_gslb_metrics", "Corefile:1 disable_txt"}},
		{"api_enable without api_listen_addr", api, map[string]int{"api_enable": 3, "disable_txt": 4, "coredns_gslb_metrics": 5}, nil,
			[]string{"Corefile:3 api_listen_addr"}},
		{"api_enable false", config.DefaultOptions(), map[string]int{"api_enable": 3, "enable_txt": 4, "coredns_gslb_metrics": 5}, nil, nil},
		{"everything written as Meridian reads it", api, same, nil, nil},
		{"ip-hash whose text order is its numeric order", api, same, ipHash("192.0.2.1", "192.0.2.2", "2001:db8::1"), nil},
		{"ip-hash whose text order differs", api, same, ipHash("10.0.0.9", "10.0.0.10"),
			[]string{"zone.yml:4 www.example.org. mode ip-hash"}},
		{"ip-hash with IPv6 orders that differ", api, same, ipHash("2001:db8::a", "2001:db8::1:0"),
			[]string{"zone.yml:4 www.example.org. mode ip-hash"}},
		{"host names are left out", api, same, ipHash("b.example.net.", "a.example.net."), nil},
		{"ip-hash in CoreDNS-GSLB's text order", api, same, ipHashOrdered(config.HashOrderText, "10.0.0.9", "10.0.0.10"), nil},
		{"a record without alpn", api, same, record(nil), []string{"zone.yml:2 alpn (1 records of example.org.)"}},
		{"an http check without host", api, same, record(h2, http(map[string]any{"port": 8080})),
			[]string{"zone.yml:7 www.example.org. backend 192.0.2.1 http check host"}},
		{"an http check with host", api, same, record(h2, http(map[string]any{"host": "localhost"})), nil},
		{"plain http without a port", api, same, record(h2, http(map[string]any{"host": "x", "enable_tls": false})),
			[]string{"zone.yml:7 www.example.org. backend 192.0.2.1 http check port"}},
		{"plain http with a port", api, same, record(h2, http(map[string]any{"host": "x", "enable_tls": false, "port": 80})), nil},
		{"a tcp check", api, same, record(h2, config.HealthCheck{Type: "tcp", Params: config.NewParams(map[string]any{"port": 80})}), nil},
		{"a lua script within the sandbox", api, same, record(h2, lua(`local body = http_get("http://" .. backend.address .. "/", 2) return body ~= ""`)), nil},
		{"a lua script that runs a program", api, same, record(h2, lua(`return os.execute("true") == 0`)),
			[]string{"zone.yml:9 www.example.org. backend 192.0.2.1 lua check"}},
		{"a lua script that opens a file", api, same, record(h2, lua(`local f = io.open("/tmp/x") return f ~= nil`)),
			[]string{"zone.yml:9 www.example.org. backend 192.0.2.1 lua check"}},
		{"a lua script that loads a module", api, same, record(h2, lua(`local json = require ("json") return true`)),
			[]string{"zone.yml:9 www.example.org. backend 192.0.2.1 lua check"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diffs := Check(Block{Options: tt.options, File: "Corefile", Line: 1, Written: tt.written}, tt.zones)
			var got []string
			for _, d := range diffs {
				got = append(got, d.Where+" "+d.Topic)
				if d.CG == "" || d.Meridian == "" || d.Change == "" || !strings.Contains(d.String(), d.Change) {
					t.Errorf("%+v: a difference says what each does and what to change", d)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("differences %q, want %q", got, tt.want)
			}
		})
	}
}
