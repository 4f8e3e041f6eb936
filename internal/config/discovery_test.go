package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDiscoveryParse(t *testing.T) {
	yml := `defaults:
  scrape_interval: 20s
records:
  http.example.org:
    discovery: {type: HTTP, endpoint: "http://127.0.0.1:8080/list"}
  consul.example.org:
    discovery:
      type: consul
      endpoint: http://127.0.0.1:8500
      service: web
      tag: primary
      interval: 2s
      healthchecks: [{type: tcp, params: {port: 80}, rise: 4}]
    backends: [{address: 10.0.0.1}]
  svcb.example.org:
    discovery: {type: dns_svcb, endpoint: 127.0.0.1, service: _https._tcp.Svc.Internal}
`
	z, err := ParseZone("zone.yml", []byte(yml), "example.org", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*Discovery{}
	for _, r := range z.Records {
		got[r.Name] = r.Discovery
	}
	h := got["http.example.org."]
	if h == nil || h.Type != DiscoveryHTTP || h.Interval != 20*time.Second || h.Timeout() != DefaultDiscoveryTimeout || len(h.Template.Checks().HealthChecks) != 0 {
		t.Errorf("http: %+v", h)
	}
	c := got["consul.example.org."]
	if c == nil || c.Tag != "primary" || c.Service != "web" || c.Interval != 2*time.Second || c.Timeout() != 2*time.Second {
		t.Fatalf("consul: %+v", c)
	}
	if cc := c.Template.Checks(); len(cc.HealthChecks) != 1 || cc.HealthChecks[0].Type != "tcp" || cc.Rise != 4 || cc.Fall != DefaultFall || !c.Template.Enable {
		t.Errorf("consul template: %+v", c.Template)
	}
	s := got["svcb.example.org."]
	if s == nil || s.Endpoint != "127.0.0.1:53" || s.Service != "_https._tcp.svc.internal." {
		t.Errorf("svcb: %+v", s)
	}
}

func TestDiscoveryErrors(t *testing.T) {
	tests := []struct{ name, discovery, want string }{
		{"no type", "{endpoint: http://x}", `zone.yml:3:16: records["a.example.org"].discovery.type: type is required`},
		{"bad type", "{type: etcd, endpoint: http://x}", `zone.yml:3:23: records["a.example.org"].discovery.type: unknown discovery type "etcd"`},
		{"no endpoint", "{type: http}", `records["a.example.org"].discovery.endpoint: endpoint is required`},
		{"bad url", "{type: http, endpoint: 'ftp://x'}", `zone.yml:3:39: records["a.example.org"].discovery.endpoint: must be an http:// or https:// URL, not "ftp://x"`},
		{"service with http", "{type: http, endpoint: http://x, service: s}", `discovery.service: service is not used with type http`},
		{"consul needs service", "{type: consul, endpoint: http://x}", `discovery.service: service is required with type consul`},
		{"tag not consul", "{type: dns_https, endpoint: '127.0.0.1:53', service: a.b, tag: t}", `discovery.tag: tag is only used with type consul, not dns_https`},
		{"bad dns server", "{type: dns_svcb, endpoint: '127.0.0.1:99999', service: a.b}", `discovery.endpoint: must be a DNS server as host:port`},
		{"bad name", "{type: dns_svcb, endpoint: '127.0.0.1', service: 'a..b'}", `discovery.service: invalid name "a..b"`},
		{"bad interval", "{type: http, endpoint: http://x, interval: 0s}", `discovery.interval: must be a positive duration`},
		{"unknown key", "{type: http, endpoint: http://x, intervall: 1s}", `discovery: unknown key "intervall"; did you mean "interval"?`},
		{"not a mapping", "http", `discovery: must be a mapping, not a scalar`},
		{"bad check", "{type: http, endpoint: http://x, healthchecks: [nope]}", `discovery.healthchecks[0]: unknown health-check profile "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yml := "records:\n  a.example.org:\n    discovery: " + tt.discovery + "\n"
			_, err := ParseZone("zone.yml", []byte(yml), "example.org", nil, 1)
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("error %v is not an ErrorList", err)
			}
			if !hasLine(strings.Split(err.Error(), "\n"), tt.want) {
				t.Errorf("missing error\n  %s\ngot:\n  %v", tt.want, err)
			}
		})
	}
	_, err := ParseZone("zone.yml", []byte("defaults:\n  discovery: {type: http}\n"), "example.org", nil, 1)
	if err == nil || !strings.Contains(err.Error(), "defaults.discovery: discovery has no defaults") {
		t.Errorf("discovery under defaults: %v", err)
	}
}
