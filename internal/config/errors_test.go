package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestErrors checks the message of each kind of mistake. A want entry that starts with "zone.yml:"
// must start a line of the error; any other must be contained in one.
func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		yml  string
		want []string
	}{
		{"unknown top-level key", "record:\n  a.example.org: {}\n",
			[]string{`zone.yml:1:1: unknown key "record"; did you mean "records"? (valid: healthcheck, healthcheck_profiles, defaults, soa, ns, records, static)`}},
		{"unknown record key", "records:\n  a.example.org:\n    ttl: 5\n    backends: [{address: 10.0.0.1}]\n",
			[]string{`zone.yml:3:5: records["a.example.org"]: unknown key "ttl"`}},
		{"unknown backend key", "records:\n  a.example.org:\n    backends:\n      - adress: 10.0.0.1\n",
			[]string{`zone.yml:4:9: records["a.example.org"].backends[0]: unknown key "adress"; did you mean "address"?`,
				`zone.yml:4:9: records["a.example.org"].backends[0].address: a backend needs an address`}},
		{"bad mode", "records:\n  a.example.org:\n    mode: round-robin\n    backends: [{address: 10.0.0.1}]\n",
			[]string{`zone.yml:3:11: records["a.example.org"].mode: unknown mode "round-robin"; did you mean "roundrobin"? (valid: failover, roundrobin, random, weighted, ip-hash, consistent-hash, geoip, geoip_affinity, chain)`}},
		{"bad durations", "defaults:\n  scrape_interval: 10 seconds\nrecords:\n  a.example.org:\n    scrape_timeout: -1s\n    scrape_interval: 0\n    backends: [{address: 10.0.0.1}]\n",
			[]string{`zone.yml:2:20: defaults.scrape_interval: must be a positive duration such as "10s" or "1m30s", or a number of seconds, not "10 seconds"`,
				`zone.yml:5:21: records["a.example.org"].scrape_timeout: must be a positive duration such as "10s" or "1m30s", or a number of seconds, not "-1s"`,
				`zone.yml:6:22: records["a.example.org"].scrape_interval: must be a positive duration such as "10s" or "1m30s", or a number of seconds, not "0"`}},
		{"timeout longer than interval", "records:\n  a.example.org:\n    scrape_interval: 5s\n    scrape_timeout: 6s\n    backends: [{address: 10.0.0.1}]\n",
			[]string{`zone.yml:4:21: records["a.example.org"].scrape_timeout: scrape_timeout 6s is longer than scrape_interval 5s`}},
		{"timeout from defaults", "defaults: {scrape_timeout: 8s}\nrecords:\n  a.example.org:\n    scrape_interval: 5s\n    backends: [{address: 10.0.0.1}]\n  b.example.org:\n    backends: [{address: 10.0.0.1}]\n",
			[]string{`zone.yml:4:22: records["a.example.org"].scrape_interval: scrape_interval 5s is shorter than scrape_timeout 8s set in defaults`}},
		{"bad address", "records:\n  www.example.org.:\n    backends:\n      - address: 10.0.0.1\n      - address: \"10.0.0.300\"\n      - address: fe80::1%eth0\n      - address: \"1::2::3\"\n      - address: a..b\n",
			[]string{`zone.yml:5:18: records["www.example.org."].backends[1].address: "10.0.0.300" is neither an IP address nor a host name`,
				`zone.yml:6:18: records["www.example.org."].backends[2].address: "fe80::1%eth0": an IPv6 zone index is not allowed`,
				`zone.yml:7:18: records["www.example.org."].backends[3].address: "1::2::3" is not an IP address`,
				`zone.yml:8:18: records["www.example.org."].backends[4].address: "a..b" is neither an IP address nor a host name`}},
		{"duplicate backend", "records:\n  a.example.org:\n    backends:\n      - {address: 10.0.0.1, port: 80}\n      - {address: 10.0.0.1, port: 81}\n      - {address: \"::ffff:10.0.0.1\", port: 80}\n      - {address: Host.example.net}\n      - {address: host.example.net.}\n",
			[]string{`zone.yml:6:9: records["a.example.org"].backends[2]: duplicate backend 10.0.0.1 port 80 (first at line 4)`,
				`zone.yml:8:9: records["a.example.org"].backends[4]: duplicate backend host.example.net. (first at line 7)`}},
		{"outside zone", "records:\n  xexample.org.: {backends: [{address: 10.0.0.1}]}\n  www.example.com: {backends: [{address: 10.0.0.1}]}\n  www: {backends: [{address: 10.0.0.1}]}\n",
			[]string{`zone.yml:2:3: records["xexample.org."]: xexample.org. is outside zone example.org.`,
				`zone.yml:3:3: records["www.example.com"]: www.example.com. is outside zone example.org.`,
				`zone.yml:4:3: records["www"]: www. is outside zone example.org.`}},
		{"duplicate record", "records:\n  a.example.org: {backends: [{address: 10.0.0.1}]}\n  A.Example.Org.: {backends: [{address: 10.0.0.1}]}\n",
			[]string{`zone.yml:3:3: records["A.Example.Org."]: duplicate record a.example.org. (first at line 2)`}},
		{"bad wildcard", "records:\n  a*.example.org: {backends: [{address: 10.0.0.1}]}\n  x.*.example.org: {backends: [{address: 10.0.0.1}]}\n  \"*.*.example.org\": {backends: [{address: 10.0.0.1}]}\n  a_b.example.org: {backends: [{address: 10.0.0.1}]}\n",
			[]string{`zone.yml:2:3: records["a*.example.org"]: invalid record name "a*.example.org": a wildcard "*" must be the whole leftmost label`,
				`zone.yml:3:3: records["x.*.example.org"]: invalid record name`,
				`zone.yml:4:3: records["*.*.example.org"]: invalid record name`}},
		{"bad labels", "records:\n  " + strings.Repeat("a", 64) + ".example.org: {backends: [{address: 10.0.0.1}]}\n  b!.example.org: {backends: [{address: 10.0.0.1}]}\n",
			[]string{`is longer than 63 characters`, `label "b!" has the invalid character '!'`}},
		{"unknown profile", "healthcheck_profiles:\n  tcp_local: {type: tcp}\nrecords:\n  a.example.org:\n    backends:\n      - address: 10.0.0.1\n        healthchecks: [tcp_locl, {type: https}, {params: {}}]\n",
			[]string{`zone.yml:7:24: records["a.example.org"].backends[0].healthchecks[0]: unknown health-check profile "tcp_locl"; did you mean "tcp_local"? (valid: https_default, tcp_default, tcp_local)`,
				`zone.yml:7:41: records["a.example.org"].backends[0].healthchecks[1].type: unknown health-check type "https"; did you mean "http"? (valid: http, tcp, icmp, dns, grpc, mysql, lua, exec, custom)`,
				`zone.yml:7:49: records["a.example.org"].backends[0].healthchecks[2].type: a health check needs a type`}},
		{"profile errors", "healthcheck_profiles:\n  p1: {type: tcp, rise: 0, params: [1]}\n  p2: icmp\n",
			[]string{`zone.yml:2:25: healthcheck_profiles.p1.rise: must be at least 1, not 0`,
				`zone.yml:2:36: healthcheck_profiles.p1.params: must be a mapping, not a list`,
				`zone.yml:3:7: healthcheck_profiles.p2: must be a mapping, not a scalar`}},
		{"fallback errors", `records:
  a.example.org:
    fallback_policy: {mode: fail-cloesd}
    backends: [{address: 10.0.0.1}]
  b.example.org:
    fallback_policy: {mode: fail-open, rcode: NXDOMAIN, fallback_ips: [1.2.3.4]}
    backends: [{address: 10.0.0.1}]
  c.example.org:
    fallback_policy: {mode: fail-specific}
    backends: [{address: 10.0.0.1}]
  d.example.org:
    fallback_policy: {mode: fail-specific, fallback_ips: [1.2.3.999], fallback_cname: x.example.net}
    backends: [{address: 10.0.0.1}]
  e.example.org:
    fallback_policy: {rcode: servfial}
    backends: [{address: 10.0.0.1}]
`, []string{`zone.yml:3:29: records["a.example.org"].fallback_policy.mode: unknown fallback mode "fail-cloesd"; did you mean "fail-closed"?`,
			`zone.yml:6:47: records["b.example.org"].fallback_policy.rcode: rcode is only allowed with mode fail-closed, not fail-open`,
			`zone.yml:6:71: records["b.example.org"].fallback_policy.fallback_ips: fallback_ips is only allowed with mode fail-specific, not fail-open`,
			`zone.yml:9:29: records["c.example.org"].fallback_policy.mode: mode fail-specific needs fallback_ips or fallback_cname`,
			`zone.yml:12:59: records["d.example.org"].fallback_policy.fallback_ips[0]: "1.2.3.999" is not an IP address`,
			`zone.yml:12:87: records["d.example.org"].fallback_policy.fallback_cname: set either fallback_ips or fallback_cname, not both`,
			`zone.yml:15:22: records["e.example.org"].fallback_policy.mode: mode is required`,
			`records["e.example.org"].fallback_policy.rcode: unknown rcode "servfial"; did you mean "SERVFAIL"?`}},
		{"latitude without longitude", "records:\n  a.example.org:\n    backends:\n      - {address: 10.0.0.1, latitude: 10}\n      - {address: 10.0.0.2, longitude: 200, latitude: 1}\n",
			[]string{`zone.yml:4:39: records["a.example.org"].backends[0].latitude: latitude is set without longitude`,
				`zone.yml:5:40: records["a.example.org"].backends[1].longitude: must be between -180 and 180, not 200`}},
		{"bad YAML syntax", "records:\n  a.example.org:\n    backends: [\n  b: c\n", []string{`zone.yml:2: invalid YAML: did not find expected ',' or ']'`}},
		{"bad YAML tab", "records:\n\ta: b\n", []string{`zone.yml:2: invalid YAML: found character that cannot start any token`}},
		{"two documents", "records: {}\n---\nrecords: {}\n", []string{`zone.yml:2:1: a zone file holds one YAML document; found another`}},
		{"no backends", "records:\n  a.example.org: {}\n  b.example.org: {backends: []}\n  c.example.org:\n",
			[]string{`zone.yml:2:3: records["a.example.org"].backends: a record needs at least one backend`,
				`zone.yml:3:29: records["b.example.org"].backends: a record needs at least one backend`,
				`zone.yml:4:3: records["c.example.org"].backends: a record needs at least one backend`}},
		{"wrong kinds", "records:\n  a.example.org:\n    owner: {x: 1}\n    record_ttl: 1.5\n    alpn: h2\n    backends:\n      - address: [10.0.0.1]\n        enable: yes\n        port: 0\n        tags: [a, '']\n        asn: AS0\n        country: USA\n        continent: EUR\n      - 10.0.0.2\n",
			[]string{`zone.yml:3:12: records["a.example.org"].owner: must be a string, not a mapping`,
				`zone.yml:4:17: records["a.example.org"].record_ttl: must be an integer, not "1.5"`,
				`zone.yml:5:11: records["a.example.org"].alpn: must be a list, not a scalar`,
				`zone.yml:7:18: records["a.example.org"].backends[0].address: must be a string, not a list`,
				`zone.yml:8:17: records["a.example.org"].backends[0].enable: must be true or false, not "yes"`,
				`zone.yml:9:15: records["a.example.org"].backends[0].port: must be between 1 and 65535, not 0`,
				`zone.yml:10:19: records["a.example.org"].backends[0].tags[1]: must not be empty`,
				`zone.yml:11:14: records["a.example.org"].backends[0].asn: must be an AS number`,
				`zone.yml:12:18: records["a.example.org"].backends[0].country: must be a 2-letter ISO 3166 country code, not "USA"`,
				`zone.yml:13:20: records["a.example.org"].backends[0].continent: unknown continent code "EUR"; did you mean "EU"?`,
				`zone.yml:14:9: records["a.example.org"].backends[1]: a backend must be a mapping with an address, not a scalar`}},
		{"defaults", "defaults:\n  backends: []\n  mode: nope\n  record_ttl: -1\nrecords:\n  a.example.org: {backends: [{address: 10.0.0.1}]}\n",
			[]string{`zone.yml:2:3: defaults.backends: backends have no defaults; list them under each record`,
				`zone.yml:3:9: defaults.mode: unknown mode "nope"`,
				`zone.yml:4:15: defaults.record_ttl: must be at least 0, not -1`}},
		{"soa and ns", "soa: {rname: admin@example.org, serial: 4294967296, foo: 1}\nns: [ns1.example.org, NS1.example.org., \"1.2.3.4\"]\n",
			[]string{`zone.yml:1:14: soa.rname: write the mailbox as a name (hostmaster.example.org.), not "admin@example.org"`,
				`zone.yml:1:41: soa.serial: must be between 0 and 4294967295, not 4294967296`,
				`zone.yml:1:53: soa: unknown key "foo"`,
				`zone.yml:2:23: ns[1]: duplicate name server ns1.example.org. (first at line 2)`,
				`zone.yml:2:41: ns[2]: "1.2.3.4" is not a valid host name: the last label is all digits`}},
		{"duplicate keys", "records:\n  a.example.org:\n    mode: random\n    mode: weighted\n    backends: [{address: 10.0.0.1}]\n",
			[]string{`zone.yml:4:5: records["a.example.org"]: duplicate key "mode" (first at line 3)`}},
		// Past 16 keys the duplicates are found through an index, not a scan.
		{"duplicate key in a long mapping", "healthcheck_profiles:\n  p1: {type: tcp}\n  p2: {type: tcp}\n  p3: {type: tcp}\n  p4: {type: tcp}\n  p5: {type: tcp}\n  p6: {type: tcp}\n  p7: {type: tcp}\n  p8: {type: tcp}\n  p9: {type: tcp}\n  p10: {type: tcp}\n  p11: {type: tcp}\n  p12: {type: tcp}\n  p13: {type: tcp}\n  p14: {type: tcp}\n  p15: {type: tcp}\n  p16: {type: tcp}\n  p17: {type: tcp}\n  p18: {type: tcp}\n  p3: {type: tcp}\n",
			[]string{`zone.yml:20:3: healthcheck_profiles: duplicate key "p3" (first at line 4)`}},
		{"alias cycle in params", "healthcheck_profiles:\n  p: {type: http, params: &a {x: [*a]}}\n",
			[]string{`zone.yml:2:35: healthcheck_profiles.p.params.x[0].x[0]: alias refers to a value that contains it`}},
		{"merge cycle", "records:\n  a.example.org: &r\n    <<: *r\n    backends: [{address: 10.0.0.1}]\n",
			[]string{`merge key (<<) refers to a mapping that contains it`}},
		{"not a mapping", "- a\n- b\n", []string{`zone.yml:1:1: must be a mapping, not a list`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			z, err := ParseZone("zone.yml", []byte(tt.yml), "example.org", sharedProfiles(t), 1)
			if err == nil {
				t.Fatalf("no error; zone %+v", z)
			}
			if z != nil {
				t.Errorf("zone is not nil with an error")
			}
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("error %T is not an ErrorList", err)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(list) {
				t.Errorf("%d lines for %d errors", len(lines), len(list))
			}
			for _, want := range tt.want {
				if !hasLine(lines, want) {
					t.Errorf("missing error\n  %s\ngot:\n  %s", want, strings.Join(lines, "\n  "))
				}
			}
		})
	}
}

func hasLine(lines []string, want string) bool {
	for _, l := range lines {
		if strings.HasPrefix(want, "zone.yml:") && strings.HasPrefix(l, want) ||
			!strings.HasPrefix(want, "zone.yml:") && strings.Contains(l, want) {
			return true
		}
	}
	return false
}

func TestErrorFormat(t *testing.T) {
	for _, tt := range []struct {
		e    Error
		want string
	}{
		{Error{At("z.yml", 14, 16), `records["www.example.org."].backends[1].address`, "bad"}, `z.yml:14:16: records["www.example.org."].backends[1].address: bad`},
		{Error{At("z.yml", 3, 0), "", "invalid YAML: x"}, `z.yml:3: invalid YAML: x`},
		{Error{InFile("z.yml"), "origin", "bad"}, `z.yml: origin: bad`},
		{Error{Msg: "bad"}, `bad`},
	} {
		eq(t, "Error()", tt.e.Error(), tt.want)
	}
}

func TestInvalidOrigin(t *testing.T) {
	_, err := ParseZone("z.yml", nil, "exa mple.org", nil, 1)
	if err == nil || !strings.HasPrefix(err.Error(), `z.yml: invalid zone name "exa mple.org"`) {
		t.Errorf("error = %v", err)
	}
}

func TestParseProfilesErrors(t *testing.T) {
	_, err := ParseProfiles("p.yml", []byte("healthcheck_profiles:\n  a: {type: ftp}\nrecords: {}\n"))
	want := "p.yml:2:13: healthcheck_profiles.a.type: unknown health-check type \"ftp\"; did you mean \"http\"? (valid: http, tcp, icmp, dns, grpc, mysql, lua, exec, custom)\n" +
		"p.yml:3:1: unknown key \"records\" (valid: healthcheck_profiles)"
	if err == nil || err.Error() != want {
		t.Errorf("error =\n%v\nwant\n%s", err, want)
	}
	profiles, err := ParseProfiles("p.yml", nil)
	if err != nil || profiles == nil || len(profiles) != 0 {
		t.Errorf("empty file: %v, %v", profiles, err)
	}
}

func TestAllErrorsReported(t *testing.T) {
	yml := `bogus: 1
defaults:
  mode: failvoer
records:
  a.example.org:
    backends:
      - address: 10.0.0.1
        healthchecks: [nope]
      - {address: 10.0.0.1}
  xexample.org: {backends: [{address: 10.0.0.1, latitude: 1}]}
`
	want := `zone.yml:1:1: unknown key "bogus" (valid: healthcheck, healthcheck_profiles, defaults, soa, ns, records, static)
zone.yml:3:9: defaults.mode: unknown mode "failvoer"; did you mean "failover"? (valid: failover, roundrobin, random, weighted, ip-hash, consistent-hash, geoip, geoip_affinity, chain)
zone.yml:8:24: records["a.example.org"].backends[0].healthchecks[0]: unknown health-check profile "nope" (valid: https_default, tcp_default)
zone.yml:9:9: records["a.example.org"].backends[1]: duplicate backend 10.0.0.1 (first at line 7)
zone.yml:10:3: records["xexample.org"]: xexample.org. is outside zone example.org.
zone.yml:10:59: records["xexample.org"].backends[0].latitude: latitude is set without longitude`
	_, err := ParseZone("zone.yml", []byte(yml), "example.org", sharedProfiles(t), 1)
	if err == nil || err.Error() != want {
		t.Errorf("error =\n%v\nwant\n%s", err, want)
	}
	var first *Error
	if !errors.As(err, &first) || first.Pos != At("zone.yml", 1, 1) || first.Path != "" {
		t.Errorf("errors.As(*Error) = %+v", first)
	}
}

// TestAliasBomb checks that nested aliases cannot make the parser do unbounded work.
func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("healthcheck_profiles:\n  p:\n    type: http\n    params:\n      l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 12; i++ {
		fmt.Fprintf(&b, "      l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	b.WriteString("records:\n  m0.example.org: &m0 {backends: [{address: 10.0.0.1}]}\n")
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&b, "  m%d.example.org: &m%d {<<: [*m%d, *m%d]}\n", i, i, i-1, i-1)
	}
	start := time.Now()
	_, err := ParseZone("zone.yml", []byte(b.String()), "example.org", nil, 1)
	if err == nil || !strings.Contains(err.Error(), "document too complex") {
		t.Errorf("error = %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestKubernetesBackendErrors checks the messages of a kubernetes backend's mistakes.
func TestKubernetesBackendErrors(t *testing.T) {
	tests := []struct {
		name, backend, want string
	}{
		{"no service", "{kubernetes: {namespace: shop}}", `zone.yml:4:22: records["a.example.org"].backends[0].kubernetes.service: a kubernetes backend names a service, an ingress or a gateway`},
		{"two objects", "{kubernetes: {namespace: shop, service: web, ingress: web}}", `backends[0].kubernetes.ingress: a kubernetes backend names one object, not a service and a ingress`},
		{"bad policy", "{kubernetes: {namespace: shop, ingress: web, policy: most}}", `backends[0].kubernetes.policy: unknown policy "most"`},
		{"bad services", "{kubernetes: {namespace: shop, ingress: web, services: [A]}}", `backends[0].kubernetes.services: service "A"`},
		{"no namespace", "{kubernetes: {service: web}}", `zone.yml:4:22: records["a.example.org"].backends[0].kubernetes.namespace: a kubernetes backend needs the namespace of its object`},
		{"bad name", "{kubernetes: {namespace: shop, service: Web_1}}", `records["a.example.org"].backends[0].kubernetes.service: service "Web_1": a service name has lower-case letters, digits and hyphens only`},
		{"unknown key", "{kubernetes: {namespace: shop, service: web, port: 80}}", `unknown key "port"`},
		{"with an address", "{address: 10.0.0.1, kubernetes: {namespace: shop, service: web}}", `records["a.example.org"].backends[0].address: a kubernetes backend stands for its Service's LoadBalancer addresses`},
		{"with a site", "{site: eu, kubernetes: {namespace: shop, service: web}}", `records["a.example.org"].backends[0].kubernetes: a backend is either a site's placeholder or a kubernetes Service`},
		{"bad probe", "{kubernetes: {namespace: shop, service: web}, healthchecks: [{type: nope}]}", `records["a.example.org"].backends[0].healthchecks[0].type`},
		{"long timeout", "{kubernetes: {namespace: shop, service: web}, timeout: 1m}", `records["a.example.org"].backends[0].timeout: timeout 1m0s is longer than the record's scrape_interval`},
		{"passive", "{kubernetes: {namespace: shop, service: web}, passive: true}", `records["a.example.org"].backends[0].passive: a kubernetes backend is judged by its Service's readiness: passive does not apply to it`},
		{"assume_healthy", "{kubernetes: {namespace: shop, service: web}, assume_healthy: true}", `backends[0].assume_healthy: a kubernetes backend is judged by its Service's readiness: assume_healthy does not apply to it`},
		{"twice", "{kubernetes: {namespace: shop, service: web}}\n      - {kubernetes: {namespace: shop, service: web}}", `duplicate backend kubernetes Service shop/web (first at line 4)`},
	}
	for _, tt := range tests {
		yml := "records:\n  a.example.org:\n    backends:\n      - " + tt.backend + "\n"
		_, err := ParseZone("zone.yml", []byte(yml), "example.org", nil, 7)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

// TestKubernetesBackend checks that a kubernetes backend parses with its settings, health
// checks included (they must pass as well as the Service's readiness), and that it enables the
// Kubernetes source.
func TestKubernetesBackend(t *testing.T) {
	yml := "records:\n  a.example.org:\n    backends:\n      - {kubernetes: {namespace: shop, service: web}, priority: 2, location: eu,\n         healthchecks: [{type: tcp, params: {port: 80}}], rise: 3, fall: 4, timeout: 2s}\n      - {address: 10.0.0.1}\n"
	z, err := ParseZone("zone.yml", []byte(yml), "example.org", nil, 7)
	if err != nil {
		t.Fatal(err)
	}
	b := z.Records[0].Backends[0]
	if !b.IsKubernetes() || b.Kubernetes().Key() != "Service shop/web" || b.Priority != 2 || b.Labels().Location != "eu" {
		t.Errorf("backend = %+v, want the Service shop/web with priority 2 and location eu", b)
	}
	if c := b.Checks(); len(c.HealthChecks) != 1 || c.HealthChecks[0].Type != "tcp" || c.Rise != 3 || c.Fall != 4 || c.Timeout != 2*time.Second {
		t.Errorf("backend checks = %+v, rise %d, fall %d, timeout %s; want one tcp check, 3, 4 and 2s", c.HealthChecks, c.Rise, c.Fall, c.Timeout)
	}
	if z.Records[0].Backends[1].IsKubernetes() {
		t.Error("an address backend is a kubernetes one")
	}
	if !(KubernetesOptions{}).Enabled([]*Zone{z}) || (KubernetesOptions{}).Enabled(nil) || !(KubernetesOptions{Kubeconfig: "k"}).Enabled(nil) {
		t.Error("Enabled is not: a kubernetes backend, or the kubeconfig option")
	}
}

// TestRecordKubernetes checks a record's kubernetes key: one object or a list, each a backend
// next to the record's others, with its kind, health Services and policy.
func TestRecordKubernetes(t *testing.T) {
	tests := []struct {
		name, record string
		want         []string // the backends' keys
		err          string
	}{
		{"one", "kubernetes: {namespace: shop, ingress: web}", []string{"Ingress shop/web"}, ""},
		{"list", "kubernetes:\n      - {namespace: shop, gateway: gw, services: [b, a, a], policy: All}\n      - {namespace: shop, service: lb}\n    backends: [{address: 10.0.0.1}]",
			[]string{"10.0.0.1", "Gateway shop/gw services a,b policy all", "Service shop/lb"}, ""},
		{"twice", "kubernetes: [{namespace: shop, service: lb}, {namespace: shop, service: lb}]", nil, "duplicate backend kubernetes Service shop/lb"},
		{"in defaults", "", nil, "kubernetes has no defaults"},
	}
	for _, tt := range tests {
		yml := "records:\n  a.example.org:\n    " + tt.record + "\n"
		if tt.record == "" {
			yml = "defaults: {kubernetes: {namespace: shop, service: lb}}\n" + yml + "    backends: [{address: 10.0.0.1}]\n"
		}
		z, err := ParseZone("zone.yml", []byte(yml), "example.org", nil, 7)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var got []string
		for _, b := range z.Records[0].Backends {
			if b.IsKubernetes() {
				got = append(got, b.Kubernetes().Key())
			} else {
				got = append(got, b.Address)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: backends %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestPlaceholderChecks: a site's placeholder has checks only in a record that steers by RTT,
// where they measure the targets it stands for (measure_remote); elsewhere they are an error.
func TestPlaceholderChecks(t *testing.T) {
	const backend = "      - {site: eu, healthchecks: [{type: tcp, params: {port: 80}}]}\n"
	tests := []struct {
		name, record, want string
	}{
		{"weighted", "    mode: weighted\n", `zone.yml:4:9: records["a.example.org"].backends[0].healthchecks: a backend without an address stands for what site eu publishes: it has nothing to probe here`},
		{"chain without rtt", "    mode: chain\n    chain: [load, weighted]\n", `backends[0].healthchecks: a backend without an address stands for what site eu publishes`},
		{"chain with rtt", "    mode: chain\n    chain: [rtt, weighted]\n", ""},
	}
	for _, tt := range tests {
		yml := "records:\n  a.example.org:\n    backends:\n" + backend + tt.record
		z, err := ParseZone("zone.yml", []byte(yml), "example.org", nil, 7)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want == "" && len(z.Records[0].Backends[0].Checks().HealthChecks) != 1:
			t.Errorf("%s: the placeholder's checks: %+v", tt.name, z.Records[0].Backends[0].Checks().HealthChecks)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

// TestRecordsWithProblemsNameTheirFields checks that the records parsed without paths
// (quietRecord) name the full path of every problem and warning, in a zone parsed whole and
// in one parsed in chunks: a record's problem recorded once at its position, the same problem
// of another record at its own, and the records between them loaded.
func TestRecordsWithProblemsNameTheirFields(t *testing.T) {
	for _, n := range []int{4, 3 * recordsChunkSize} {
		var zone strings.Builder
		zone.WriteString("records:\n")
		var want []string
		for i := range n {
			fmt.Fprintf(&zone, "  r%d.example.org:\n", i)
			line := 2 + 5*i
			if i%(n/2) == 1 {
				zone.WriteString("    failover_policy: {mode: fail-open}\n")
				fmt.Fprintf(&zone, "    backends:\n      - {address: 10.0.0.1}\n      - {address: 10.0.0.2, port: 0}\n")
				want = append(want, fmt.Sprintf(`zone.yml:%d:35: records["r%d.example.org"].backends[1].port: must be between 1 and 65535, not 0`, line+4, i))
				continue
			}
			fmt.Fprintf(&zone, "    record_ttl: 30\n    backends:\n      - {address: 10.0.0.1}\n      - {address: 10.0.0.2, port: 53}\n")
		}
		_, err := ParseZone("zone.yml", []byte(zone.String()), "example.org", nil, 1)
		var list ErrorList
		if !errors.As(err, &list) {
			t.Fatalf("%d records: %v, want an ErrorList", n, err)
		}
		var got []string
		for _, e := range list {
			got = append(got, e.Error())
		}
		if !slices.Equal(got, want) {
			t.Errorf("%d records: errors\n%s\nwant\n%s", n, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	z, err := ParseZone("zone.yml", []byte("records:\n  a.example.org:\n    failover_policy: {mode: fail-open}\n    backends: [{address: 10.0.0.1}]\n  b.example.org:\n    svcb_alpn: [h2]\n    failover_policy: {mode: fail-open}\n    backends: [{address: 10.0.0.1}]\n"), "example.org", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`zone.yml:3:5: records["a.example.org"].failover_policy: failover_policy is deprecated: rename it fallback_policy`,
		`zone.yml:7:5: records["b.example.org"].failover_policy: failover_policy is deprecated: rename it fallback_policy`,
	}
	var got []string
	for _, w := range z.Warnings {
		got = append(got, w.Error())
	}
	if !slices.Equal(got, want) {
		t.Errorf("warnings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(z.Records) != 2 {
		t.Errorf("%d records loaded, want 2", len(z.Records))
	}
}
