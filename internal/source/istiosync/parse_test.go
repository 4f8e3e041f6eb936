package istiosync

import (
	"maps"
	"strings"
	"testing"
)

// Bodies of /debug/syncz as istiod writes them, for the tests of Parse and Fetch.
const (
	legacyBody = `[{"cluster_id":"Kubernetes","proxy":"istio-ingressgateway-5d9c8-abcde.istio-system","istio_version":"1.20.0",
		"cluster_sent":"nonce1","cluster_acked":"nonce1","listener_sent":"n2","listener_acked":"n2",
		"route_sent":"n3","route_acked":"n3","endpoint_sent":"n4","endpoint_acked":"n4"}]`
	csdsBody = `{"resources":[{"@type":"type.googleapis.com/envoy.service.status.v3.ClientConfig",
		"node":{"id":"router~10.0.0.5~istio-ingressgateway-5d9c8-abcde.istio-system~istio-system.svc.cluster.local","metadata":{"CLUSTER_ID":"Kubernetes"}},
		"genericXdsConfigs":[{"typeUrl":"type.googleapis.com/envoy.config.listener.v3.Listener","configStatus":"SYNCED"},
			{"typeUrl":"type.googleapis.com/envoy.config.route.v3.RouteConfiguration","configStatus":"SYNCED"},
			{"typeUrl":"type.googleapis.com/envoy.config.cluster.v3.Cluster","configStatus":"SYNCED"},
			{"typeUrl":"type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment","configStatus":"SYNCED"}]}]}`
	gateway = "istio-ingressgateway-5d9c8-abcde.istio-system"
)

// csds is a CSDS body with one resource per node id and configs, the JSON of its
// genericXdsConfigs.
func csds(nodeAndConfigs ...string) string {
	var rs []string
	for i := 0; i+1 < len(nodeAndConfigs); i += 2 {
		rs = append(rs, `{"@type":"type.googleapis.com/envoy.service.status.v3.ClientConfig","node":{"id":"`+
			nodeAndConfigs[i]+`"},"genericXdsConfigs":`+nodeAndConfigs[i+1]+`}`)
	}
	return `{"resources":[` + strings.Join(rs, ",") + `]}`
}

// TestParse checks both formats, both spellings of the xDS one, the states each rule gives,
// the entries it skips, and that malformed bodies are errors that say what is wrong.
func TestParse(t *testing.T) {
	const (
		lds    = `"type.googleapis.com/envoy.config.listener.v3.Listener"`
		rds    = `"type.googleapis.com/envoy.config.route.v3.RouteConfiguration"`
		cds    = `"type.googleapis.com/envoy.config.cluster.v3.Cluster"`
		eds    = `"type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"`
		node   = "router~10.0.0.5~gw.istio-system~istio-system.svc.cluster.local"
		allSyn = `[{"typeUrl":` + lds + `,"configStatus":"SYNCED"},{"typeUrl":` + rds + `,"configStatus":"SYNCED"},` +
			`{"typeUrl":` + cds + `,"configStatus":"SYNCED"},{"typeUrl":` + eds + `,"configStatus":"SYNCED"}]`
		rdsStale = `[{"typeUrl":` + lds + `,"configStatus":"SYNCED"},{"typeUrl":` + rds + `,"configStatus":"STALE"},` +
			`{"typeUrl":` + cds + `,"configStatus":"SYNCED"},{"typeUrl":` + eds + `,"configStatus":"SYNCED"}]`
	)
	tests := []struct {
		name string
		body string
		want map[string]Proxy
		err  string // a part of the error, "" when Parse succeeds
	}{
		{name: "legacy synced", body: legacyBody, want: map[string]Proxy{gateway: synced}},
		{
			name: "legacy states",
			body: `[{"proxy":"gw.istio-system","listener_sent":"a","listener_acked":"a","route_sent":"b","route_acked":"a",
				"cluster_sent":"c","cluster_acked":"","endpoint_sent":"","endpoint_acked":""}]`,
			want: map[string]Proxy{"gw.istio-system": proxy(Synced, Stale, Stale, NotSent)},
		},
		{
			name: "legacy without proxy id",
			body: `[{"listener_sent":"a","listener_acked":"a"}, {"proxy":"gw.istio-system"}]`,
			want: map[string]Proxy{"gw.istio-system": proxy(NotSent, NotSent, NotSent, NotSent)},
		},
		{name: "legacy empty", body: " \n[]", want: map[string]Proxy{}},
		{name: "xDS camelCase", body: csdsBody, want: map[string]Proxy{gateway: synced}},
		{
			name: "xDS snake_case",
			body: `{"resources":[{"@type":"type.googleapis.com/envoy.service.status.v3.ClientConfig","node":{"id":"` + node + `"},
				"generic_xds_configs":[{"type_url":` + lds + `,"config_status":"SYNCED"},{"type_url":` + rds + `,"config_status":"NOT_SENT"},
				{"type_url":` + cds + `,"config_status":"SYNCED"},{"type_url":` + eds + `,"config_status":"SYNCED"}]}]}`,
			want: map[string]Proxy{"gw.istio-system": proxy(Synced, NotSent, Synced, Synced)},
		},
		{
			name: "xDS omitted status, missing type, numbers, other types",
			body: csds(node, `[{"typeUrl":`+lds+`},{"typeUrl":`+rds+`,"configStatus":3},{"typeUrl":`+cds+`,"configStatus":1},
				{"typeUrl":"type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig","configStatus":"ERROR"}]`),
			want: map[string]Proxy{"gw.istio-system": proxy(Unknown, Stale, Synced, Missing)},
		},
		{
			name: "xDS skips other resources and node ids without a proxy",
			body: `{"resources":[{"@type":"type.googleapis.com/other.v3.Thing","node":{"id":"` + node + `"}},
				{"node":{"id":"not-a-node-id"},"genericXdsConfigs":` + allSyn + `},
				{"node":{"id":"sidecar~10.0.0.6~app.shop~shop.svc.cluster.local"},"genericXdsConfigs":` + allSyn + `}]}`,
			want: map[string]Proxy{"app.shop": synced},
		},
		{name: "xDS empty object", body: `{}`, want: map[string]Proxy{}},
		{name: "xDS no resources", body: `{"versionInfo":"1","resources":[]}`, want: map[string]Proxy{}},
		{name: "duplicate: not synced after synced wins", body: csds(node, allSyn, node, rdsStale), want: map[string]Proxy{"gw.istio-system": proxy(Synced, Stale, Synced, Synced)}},
		{name: "duplicate: not synced before synced wins", body: csds(node, rdsStale, node, allSyn), want: map[string]Proxy{"gw.istio-system": proxy(Synced, Stale, Synced, Synced)}},
		{name: "empty", body: "", err: "empty body"},
		{name: "blank", body: " \t\n", err: "empty body"},
		{name: "garbage", body: "<html>502 Bad Gateway</html>", err: "neither a JSON array"},
		{name: "null", body: "null", err: "neither a JSON array"},
		{name: "legacy of numbers", body: "[1, 2]", err: "legacy format"},
		{name: "legacy truncated", body: legacyBody[:40], err: "legacy format"},
		{name: "legacy trailing data", body: "[] []", err: "legacy format"},
		{name: "xDS resources not a list", body: `{"resources":"all synced"}`, err: "xDS format"},
		{name: "xDS status of a wrong kind", body: csds(node, `[{"typeUrl":`+rds+`,"configStatus":true}]`), err: "resource 0 (gw.istio-system): RDS: configStatus true"},
		{name: "xDS status number out of range", body: csds(node, `[{"typeUrl":`+eds+`,"configStatus":9}]`), err: "configStatus 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.body))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.HasPrefix(err.Error(), "sync status: ") {
					t.Fatalf("Parse() error %v, want one starting with %q and containing %q (status %v)", err, "sync status: ", tt.err, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse() error %v", err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("Parse() = %v, want %v", got, tt.want)
			}
		})
	}
}
