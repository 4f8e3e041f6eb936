package deploy

import (
	"slices"
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// k8gbValues are k8gb's own chart keys, as a k8gb user's values have them: its list of zones
// with their parent, every cluster's tags in one string (this one's among them), the edge
// DNS's resolvers, the split-brain threshold, and the delegation through ExternalDNS with the
// cluster's exposed addresses and the NS records' TTL.
var k8gbValues = []string{"--set", "k8gb.enabled=true", "--set", "k8gb.clusterGeoTag=eu",
	"--set", "k8gb.dnsZones[0].loadBalancedZone=cloud.example.com", "--set", "k8gb.dnsZones[0].parentZone=example.com", "--set", "k8gb.dnsZones[0].dnsZoneNegTTL=10",
	"--set", "k8gb.dnsZones[1].loadBalancedZone=cloud2.example.com", "--set", "k8gb.dnsZones[1].parentZone=example.com",
	"--set", "k8gb.extGslbClustersGeoTags=eu\\,us\\,za", "--set", "k8gb.edgeDNSServers={192.0.2.1,192.0.2.2:5353}",
	"--set", "k8gb.splitBrainThresholdSeconds=300", "--set", "k8gb.extdns.enabled=true", "--set", "k8gb.clusterExposedIPs={203.0.113.53}",
	"--set", "k8gb.nsRecordTTL=60"}

// TestChartK8gbValues renders the chart with k8gb's own keys: the default Corefile serves each
// zone of dnsZones with the site, the other clusters (this one's tag left out of k8gb's
// string), peers_from_ns asking the edge DNS's resolvers, the split-brain threshold and the
// delegation through ExternalDNS; the ConfigMap holds a zone file of each zone; the chart makes
// a ZoneDelegation of each; the ClusterRole grants what the delegation writes; and the real
// meridian checks the Corefile.
func TestChartK8gbValues(t *testing.T) {
	m := render(t, k8gbValues...)
	want := []string{"zone example.test. example.test.yml", "zone cloud.example.com. k8gb.cloud.example.com.yml", "zone cloud2.example.com. k8gb.cloud2.example.com.yml",
		"site eu", "peers_from_ns 192.0.2.1 192.0.2.2:5353", "split_brain_threshold 300s", "k8gb us za",
		"delegation_externaldns example.com. dns", "delegation_externaldns_glue 203.0.113.53", "delegation_externaldns_ttl 60"}
	if got := gslbOptions(t, m, append(k8gbLines, "split_brain_threshold", "delegation_externaldns", "delegation_externaldns_glue", "delegation_externaldns_ttl")...); !slices.Equal(got, want) {
		t.Errorf("the gslb block's k8gb lines:\n%q\nwant\n%q", got, want)
	}
	var cm configMap
	m.get(t, "ConfigMap", fullname, &cm)
	if !strings.HasPrefix(cm.Data["Corefile"], "example.test:53 cloud.example.com:53 cloud2.example.com:53 {") {
		t.Errorf("the server block does not serve the zones:\n%s", cm.Data["Corefile"])
	}
	for _, f := range []string{"k8gb.cloud.example.com.yml", "k8gb.cloud2.example.com.yml"} {
		if !strings.Contains(cm.Data[f], "records: {}") {
			t.Errorf("the ConfigMap's %s = %q", f, cm.Data[f])
		}
	}
	var zd struct {
		Spec struct {
			LoadBalancedZone string `yaml:"loadBalancedZone"`
			ParentZone       string `yaml:"parentZone"`
			DNSZoneNegTTL    int    `yaml:"dnsZoneNegTTL"`
		} `yaml:"spec"`
	}
	m.get(t, "ZoneDelegation", "cloud-example-com", &zd)
	if zd.Spec.LoadBalancedZone != "cloud.example.com" || zd.Spec.ParentZone != "example.com" || zd.Spec.DNSZoneNegTTL != 10 {
		t.Errorf("the ZoneDelegation of cloud.example.com: %+v", zd.Spec)
	}
	m.get(t, "ZoneDelegation", "cloud2-example-com", &zd)
	if zd.Spec.DNSZoneNegTTL != 30 {
		t.Errorf("the ZoneDelegation of cloud2.example.com has the negative TTL %d, want k8gb's default 30", zd.Spec.DNSZoneNegTTL)
	}
	granted := m.grants(t)
	for res, verbs := range map[string]string{
		"externaldns.k8s.io/dnsendpoints": "get,list,create,patch,delete", "k8gb.io/zonedelegations/status": "update",
		"k8gb.io/zonedelegations": "get,list,watch", "networking.istio.io/virtualservices": "get,list,watch",
		"gateway.networking.k8s.io/httproutes": "get,list,watch",
	} {
		if granted[res] != verbs {
			t.Errorf("ClusterRole grants %q on %s, want %s", granted[res], res, verbs)
		}
	}
	if out, err := checkConfig(t, cm, "MERIDIAN_API_TOKEN=0123456789abcdef"); err != nil {
		t.Fatalf("meridian check of the Corefile of k8gb's values: %v\n%s\nCorefile:\n%s", err, out, cm.Data["Corefile"])
	}
}

// TestChartK8gbValuesRefused checks that the delegation through ExternalDNS without this
// cluster's addresses, or without a parent zone, stops the rendering with a message naming
// what is missing; and that the API server takes the chart's ZoneDelegations with its CRDs.
func TestChartK8gbValuesRefused(t *testing.T) {
	for _, tc := range []struct {
		sets []string
		want string
	}{
		{[]string{"k8gb.enabled=true", "k8gb.clusterGeoTag=eu", "k8gb.dnsZone=cloud.example.com", "k8gb.edgeDNSZone=example.com", "k8gb.extdns.enabled=true"}, "k8gb.extdns.enabled needs k8gb.clusterExposedIPs"},
		{[]string{"k8gb.enabled=true", "k8gb.clusterGeoTag=eu", "k8gb.dnsZone=cloud.example.com", "k8gb.extdns.enabled=true", "k8gb.clusterExposedIPs={203.0.113.53}"}, "needs the parent of the first zone"},
		{[]string{"k8gb.extGslbClustersGeoTags=eu\\,US"}, "/k8gb/extGslbClustersGeoTags"},
		{[]string{"k8gb.dnsZones[0].parentZone=example.com"}, "/k8gb/dnsZones/0"},
	} {
		var args []string
		for _, s := range tc.sets {
			args = append(args, "--set", s)
		}
		_, stderr, err := helm(t, append([]string{"template", "gslb", chartDir, "--namespace", "dns"}, args...)...)
		if err == nil || !strings.Contains(stderr, tc.want) {
			t.Errorf("helm template %v: %v, %s; want an error naming %q", tc.sets, err, stderr, tc.want)
		}
	}
	kube := testutil.StartKube(t)
	testutil.InstallGslbCRDs(t, kube, chartDir+"/crds")
	for _, o := range render(t, k8gbValues...) {
		if o.Kind != "ZoneDelegation" {
			continue
		}
		var obj map[string]any
		if err := o.node.Decode(&obj); err != nil {
			t.Fatal(err)
		}
		kube.Apply(t, obj)
	}
}
