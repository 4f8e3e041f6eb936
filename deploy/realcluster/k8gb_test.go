package realcluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// siteValues are a release's values as one site of two: k8gb on, the DNS Service a
// LoadBalancer at a fixed address (which the other site names in its peers), and a Corefile of
// its own that serves k8gb.dnsZone only and, two sites sharing one cluster here, watches the
// release's namespace only (kubernetes_namespaces): each site's Meridian sees its own Gslbs,
// Ingresses and pods, as it would in a cluster of its own.
const siteValues = `
service:
  type: LoadBalancer
  loadBalancerIP: %s
k8gb:
  enabled: true
  dnsZone: gslb.example.test
  clusterGeoTag: %s
  extGslbsClusterGeoTags: [%s]
  peers: [%s]
config:
  corefile: |
    {{ .Values.k8gb.dnsZone }}:{{ .Values.ports.dns }} {
        gslb {
            zone {{ .Values.k8gb.dnsZone }}. k8gb.{{ .Values.k8gb.dnsZone }}.yml
            api_enable
            api_listen_addr 0.0.0.0
            api_listen_port {{ .Values.api.port }}
            api_token {$MERIDIAN_API_TOKEN}
            kubernetes_namespaces {{ .Release.Namespace }}
            site {{ .Values.k8gb.clusterGeoTag }}
            peers {{ join " " .Values.k8gb.peers }}
            k8gb {{ join " " .Values.k8gb.extGslbsClusterGeoTags }}
        }
        ready :{{ .Values.ports.ready }}
        health :{{ .Values.ports.health }}
        prometheus :{{ .Values.metrics.port }}
        errors
    }
`

// gslbManifests are what a k8gb user applies in a site's namespace (NAMESPACE replaced): a Gslb
// with an embedded ingress (failover, eu first), and an Ingress with a Gslb that refers to it
// (round robin), both to the Service web.
const gslbManifests = `apiVersion: k8gb.io/v1beta1
kind: Gslb
metadata:
  name: app
  namespace: NAMESPACE
spec:
  ingress:
    rules:
      - host: app.gslb.example.test
        http:
          paths:
            - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
  strategy:
    type: failover
    primaryGeoTag: eu
    dnsTtlSeconds: 5
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: shop
  namespace: NAMESPACE
spec:
  rules:
    - host: shop.gslb.example.test
      http:
        paths:
          - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: k8gb.io/v1beta1
kind: Gslb
metadata:
  name: shop
  namespace: NAMESPACE
spec:
  resourceRef:
    apiVersion: networking.k8s.io/v1
    kind: Ingress
    name: shop
  strategy:
    type: roundRobin
    dnsTtlSeconds: 5
`

// site is one of the two sites: its namespace (and geo tag), its DNS Service's address, and
// the addresses its ingress controller gives the Ingresses app and shop.
type site struct {
	name, dns, app, shop string
}

// testK8gbTwoSites is k8gb's multi-cluster GSLB with Meridian in its place, on running pods:
// two releases (eu and us, each in its namespace) share health over DNS, each reading the
// other's DNS Service; in each, a user applies with kubectl a Gslb with an embedded ingress and
// one with a resourceRef. Both sites answer eu's address for the failover Gslb and both sites'
// for the round-robin one while eu's pods are ready, us's only while they fail their readiness
// probe, and eu's again when they pass; each Gslb's status says so.
func (e *env) testK8gbTwoSites(t *testing.T) {
	sites := []site{
		{"eu", testutil.ClusterExternalAddress(53), testutil.ClusterExternalAddress(31), testutil.ClusterExternalAddress(33)},
		{"us", testutil.ClusterExternalAddress(54), testutil.ClusterExternalAddress(32), testutil.ClusterExternalAddress(34)},
	}
	servers := []string{sites[0].dns, sites[1].dns}
	for i, s := range sites {
		other := sites[1-i]
		e.namespace(t, s.name)
		e.runApp(t, s.name, "web", 1)
		e.install(t, s.name, "gslb", fmt.Sprintf(siteValues, s.dns, s.name, other.name, other.dns))
		file := filepath.Join(t.TempDir(), "gslbs.yaml")
		if err := os.WriteFile(file, []byte(strings.ReplaceAll(gslbManifests, "NAMESPACE", s.name)), 0o644); err != nil {
			t.Fatal(err)
		}
		e.c.Kubectl(t, "apply", "-f", file)
	}
	for _, s := range sites { // each site's ingress controller gives the Ingresses their address
		testutil.Eventually(t, answerTimeout, func() bool { return e.c.Served("/apis/networking.k8s.io/v1/namespaces/" + s.name + "/ingresses/app") },
			"%s: Meridian did not create the Gslb app's Ingress", s.name)
		for name, addr := range map[string]string{"app": s.app, "shop": s.shop} {
			ing := testutil.KubeIngress(s.name, name, nil, addr)
			e.c.ApplyStatus(t, map[string]any{"apiVersion": ing["apiVersion"], "kind": ing["kind"], "metadata": ing["metadata"], "status": ing["status"]})
		}
	}

	took := waitAnswer(t, servers, "app.gslb.example.test", sites[0].app)
	waitAnswer(t, servers, "shop.gslb.example.test", sites[0].shop, sites[1].shop)
	t.Logf("both sites answer both Gslbs %s after their Ingresses' addresses", took.Round(time.Millisecond))
	e.wantGslbStatus(t, sites, [2]string{"Healthy", "Healthy"}, []string{sites[0].app}, []string{sites[0].shop, sites[1].shop})

	start := time.Now()
	e.setReady(t, "eu", "web", false)
	waitAnswer(t, servers, "app.gslb.example.test", sites[1].app)
	waitAnswer(t, servers, "shop.gslb.example.test", sites[1].shop)
	t.Logf("eu's pods not ready: both sites answer us's addresses after %s", time.Since(start).Round(time.Millisecond))
	e.wantGslbStatus(t, sites, [2]string{"Unhealthy", "Healthy"}, []string{sites[1].app}, []string{sites[1].shop})

	start = time.Now()
	e.setReady(t, "eu", "web", true)
	waitAnswer(t, servers, "app.gslb.example.test", sites[0].app)
	waitAnswer(t, servers, "shop.gslb.example.test", sites[0].shop, sites[1].shop)
	t.Logf("eu's pods ready again: both sites answer eu's addresses again after %s", time.Since(start).Round(time.Millisecond))
	e.wantGslbStatus(t, sites, [2]string{"Healthy", "Healthy"}, []string{sites[0].app}, []string{sites[0].shop, sites[1].shop})
}

// gslbStatus is the part of a Gslb's status the test checks.
type gslbStatus struct {
	GeoTag         string              `json:"geoTag"`
	ServiceHealth  map[string]string   `json:"serviceHealth"`
	HealthyRecords map[string][]string `json:"healthyRecords"`
}

// wantGslbStatus waits until the status of both Gslbs of each site says that site's geo tag,
// its health (health[i] for sites[i]) and, as healthyRecords, the addresses the Gslb is
// answered with across the sites (app, the failover Gslb: the answering cluster's only; shop,
// the round-robin one: every healthy site's), as kubectl reads it.
func (e *env) wantGslbStatus(t *testing.T, sites []site, health [2]string, app, shop []string) {
	t.Helper()
	for i, s := range sites {
		for _, g := range []struct {
			name, host string
			want       []string
		}{{"app", "app.gslb.example.test", app}, {"shop", "shop.gslb.example.test", shop}} {
			want := slices.Sorted(slices.Values(g.want))
			var got gslbStatus
			testutil.Eventually(t, answerTimeout, func() bool {
				out, err := e.c.TryKubectl("get", "gslb.k8gb.io", g.name, "--namespace", s.name, "-o", "jsonpath={.status}")
				if err != nil || json.Unmarshal([]byte(out), &got) != nil {
					return false
				}
				records := slices.Sorted(slices.Values(got.HealthyRecords[g.host]))
				return got.GeoTag == s.name && got.ServiceHealth[g.host] == health[i] && slices.Equal(records, want)
			}, "%s: Gslb %s's status is %+v, want %s, %s and %v", s.name, g.name, &got, s.name, health[i], want)
		}
	}
}
