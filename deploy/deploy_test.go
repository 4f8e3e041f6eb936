// Package deploy holds the tests of Meridian's deployment artifacts: the Helm chart in
// helm/meridian, rendered and linted by a real helm binary (testutil.HelmBinary), whose
// Corefile and zone files the real meridian binary checks and serves; and the repository's
// Dockerfile, compared with the Makefile's build and with the chart.
package deploy

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// chartDir is the chart, relative to this package's directory (the tests' working directory).
const chartDir = "helm/meridian"

// runHelm runs helm with args and returns its standard output, failing the test on an error.
func runHelm(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stdout, stderr)
	}
	return stdout
}

// helm runs helm with args and returns what it wrote to its standard output and standard
// error, and its error.
func helm(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin, err := testutil.HelmBinary()
	if err != nil {
		t.Fatalf("helm: %v", err)
	}
	var out, errs bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errs
	err = cmd.Run()
	return out.String(), errs.String(), err
}

// object is one rendered manifest: its kind and name, and the whole document to decode further.
type object struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	node yaml.Node
}

// manifests is the chart rendered with the release name "gslb" in the namespace "dns".
type manifests []object

// render renders the chart with helm's flags (--set NAME=VALUE, -f FILE) and parses every YAML
// document it outputs.
func render(t *testing.T, flags ...string) manifests {
	t.Helper()
	args := append([]string{"template", "gslb", chartDir, "--namespace", "dns"}, flags...)
	dec := yaml.NewDecoder(strings.NewReader(runHelm(t, args...)))
	var out manifests
	for {
		var o object
		if err := dec.Decode(&o.node); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("rendered manifests: %v", err)
		}
		if o.node.Kind == 0 { // an empty document
			continue
		}
		if err := o.node.Decode(&o); err != nil {
			t.Fatalf("rendered manifest: %v", err)
		}
		out = append(out, o)
	}
}

// kinds counts the objects of each kind.
func (m manifests) kinds() map[string]int {
	n := make(map[string]int)
	for _, o := range m {
		n[o.Kind]++
	}
	return n
}

// get decodes the object of kind named name into v, failing the test when there is none.
func (m manifests) get(t *testing.T, kind, name string, v any) {
	t.Helper()
	for _, o := range m {
		if o.Kind == kind && o.Metadata.Name == name {
			if err := o.node.Decode(v); err != nil {
				t.Fatalf("%s %s: %v", kind, name, err)
			}
			return
		}
	}
	t.Fatalf("no %s %s in the rendered chart (kinds: %v)", kind, name, m.kinds())
}

// The parts of the rendered objects the tests look at.
type (
	deployment struct {
		Spec struct {
			Replicas int `yaml:"replicas"`
			Template struct {
				Metadata struct {
					Annotations map[string]string `yaml:"annotations"`
				} `yaml:"metadata"`
				Spec podSpec `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	podSpec struct {
		ServiceAccountName string `yaml:"serviceAccountName"`
		SecurityContext    struct {
			RunAsNonRoot bool `yaml:"runAsNonRoot"`
			RunAsUser    int  `yaml:"runAsUser"`
		} `yaml:"securityContext"`
		Containers []container `yaml:"containers"`
		Volumes    []struct {
			Name      string `yaml:"name"`
			ConfigMap struct {
				Name string `yaml:"name"`
			} `yaml:"configMap"`
		} `yaml:"volumes"`
		Affinity struct {
			PodAntiAffinity struct {
				Preferred []struct {
					PodAffinityTerm struct {
						TopologyKey string `yaml:"topologyKey"`
					} `yaml:"podAffinityTerm"`
				} `yaml:"preferredDuringSchedulingIgnoredDuringExecution"`
			} `yaml:"podAntiAffinity"`
		} `yaml:"affinity"`
	}
	container struct {
		Env []struct {
			Name      string `yaml:"name"`
			ValueFrom struct {
				SecretKeyRef struct {
					Name string `yaml:"name"`
					Key  string `yaml:"key"`
				} `yaml:"secretKeyRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
			Protocol      string `yaml:"protocol"`
		} `yaml:"ports"`
		ReadinessProbe  probe  `yaml:"readinessProbe"`
		LivenessProbe   probe  `yaml:"livenessProbe"`
		WorkingDir      string `yaml:"workingDir"`
		SecurityContext struct {
			RunAsNonRoot             bool `yaml:"runAsNonRoot"`
			RunAsUser                int  `yaml:"runAsUser"`
			ReadOnlyRootFilesystem   bool `yaml:"readOnlyRootFilesystem"`
			AllowPrivilegeEscalation bool `yaml:"allowPrivilegeEscalation"`
			Capabilities             struct {
				Drop []string `yaml:"drop"`
				Add  []string `yaml:"add"`
			} `yaml:"capabilities"`
		} `yaml:"securityContext"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	}
	probe struct {
		HTTPGet struct {
			Path string `yaml:"path"`
			Port string `yaml:"port"`
		} `yaml:"httpGet"`
	}
	service struct {
		Spec struct {
			Ports []struct {
				Port       int    `yaml:"port"`
				TargetPort string `yaml:"targetPort"`
				Protocol   string `yaml:"protocol"`
			} `yaml:"ports"`
		} `yaml:"spec"`
	}
	configMap struct {
		Data map[string]string `yaml:"data"`
	}
	secret struct {
		Data map[string]string `yaml:"data"`
	}
	clusterRole struct {
		Rules []struct {
			APIGroups []string `yaml:"apiGroups"`
			Resources []string `yaml:"resources"`
			Verbs     []string `yaml:"verbs"`
		} `yaml:"rules"`
	}
)

// containerPort returns the port of the container's port called name with protocol, or 0.
func (c container) containerPort(name, protocol string) int {
	for _, p := range c.Ports {
		if p.Name == name && p.Protocol == protocol {
			return p.ContainerPort
		}
	}
	return 0
}

// pluginPort returns the port of the Corefile's `plugin [HOST]:PORT [{]` or `option PORT` line, or 0
// when it has none.
func pluginPort(corefile, plugin string) int {
	m := regexp.MustCompile(`(?m)^\s*` + plugin + `\s+(?:[^\s:]*:)?(\d+)\s*\{?\s*$`).FindStringSubmatch(corefile)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// The release's objects' names (release "gslb", chart "meridian").
const (
	fullname  = "gslb-meridian"
	apiSecret = fullname + "-api"
	// clusterName names the cluster-wide objects: the ClusterRole and its binding.
	clusterName = "dns-" + fullname
)

// k8gbFlags turn k8gb on, as the site eu among us and za, serving the zone cloud.example.com.
var k8gbFlags = []string{"--set", "k8gb.enabled=true", "--set", "k8gb.dnsZone=cloud.example.com", "--set", "k8gb.clusterGeoTag=eu",
	"--set", "k8gb.extGslbsClusterGeoTags={us,za}"}

// k8gbZoneFile is the zone file of k8gbFlags' zone in the ConfigMap.
const k8gbZoneFile = "k8gb.cloud.example.com.yml"

// k8gbLines are the gslb block's options k8gb's values write.
var k8gbLines = []string{"zone", "site", "peers", "peers_from_ns", "k8gb"}

// k8gbPeers turn k8gb on, as the site eu that reads us from three peers, one of each form.
var k8gbPeers = []string{"--set", "k8gb.enabled=true", "--set", "k8gb.clusterGeoTag=eu", "--set", "k8gb.extGslbsClusterGeoTags={us}",
	"--set", "k8gb.peers={198.51.100.53,[2001:db8:c::53]:5353,ns-us.example.com}"}

// allOn are helm's flags that turn on every optional part of the chart that is off by default.
var allOn = append(slices.Clone(k8gbFlags), "--set", "istio.syncCheck.enabled=true")

// TestChartLints runs `helm lint --strict` on the chart, with its defaults and with every
// optional part on: warnings fail it too.
func TestChartLints(t *testing.T) {
	for _, flags := range [][]string{nil, allOn} {
		out := runHelm(t, append([]string{"lint", "--strict", chartDir}, flags...)...)
		if !strings.Contains(out, "0 chart(s) failed") {
			t.Fatalf("helm lint %q:\n%s", flags, out)
		}
	}
}

// TestChartDefaults renders the chart with its default values and checks the objects against
// each other: the Services' ports are the container's, the probes and the metrics annotations
// hit the ports the Corefile gives its ready, health and prometheus plugins, and the token the
// container gets is the Secret's.
func TestChartDefaults(t *testing.T) {
	m := render(t)
	want := map[string]int{"Deployment": 1, "Service": 2, "ConfigMap": 1, "Secret": 1, "ServiceAccount": 1,
		"ClusterRole": 1, "ClusterRoleBinding": 1, "PodDisruptionBudget": 1}
	if got := m.kinds(); !maps.Equal(got, want) {
		t.Errorf("kinds = %v, want %v", got, want)
	}

	var d deployment
	m.get(t, "Deployment", fullname, &d)
	var cm configMap
	m.get(t, "ConfigMap", fullname, &cm)
	corefile := cm.Data["Corefile"]
	if d.Spec.Replicas != 2 {
		t.Errorf("replicas = %d, want 2", d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]

	t.Run("dns service", func(t *testing.T) {
		var s service
		m.get(t, "Service", fullname, &s)
		protocols := map[string]bool{}
		for _, p := range s.Spec.Ports {
			if p.Port != 53 {
				t.Errorf("DNS Service port %d/%s, want 53", p.Port, p.Protocol)
			}
			if got := c.containerPort(p.TargetPort, p.Protocol); got != serverPort(corefile) {
				t.Errorf("DNS Service %s targets container port %q = %d, the Corefile listens on %d", p.Protocol, p.TargetPort, got, serverPort(corefile))
			}
			protocols[p.Protocol] = true
		}
		if len(s.Spec.Ports) != 2 || !protocols["UDP"] || !protocols["TCP"] {
			t.Errorf("DNS Service ports = %+v, want 53 over UDP and TCP", s.Spec.Ports)
		}
	})

	t.Run("api service", func(t *testing.T) {
		var s service
		m.get(t, "Service", fullname+"-api", &s)
		if len(s.Spec.Ports) != 1 {
			t.Fatalf("API Service ports = %+v, want one", s.Spec.Ports)
		}
		p := s.Spec.Ports[0]
		if got, want := c.containerPort(p.TargetPort, "TCP"), pluginPort(corefile, "api_listen_port"); got == 0 || got != want || p.Port != want {
			t.Errorf("API Service port %d targets container port %d; the Corefile's api_listen_port is %d", p.Port, got, want)
		}
	})

	t.Run("probes", func(t *testing.T) {
		for _, tc := range []struct {
			name, plugin, path string
			probe              probe
		}{
			{"readiness", "ready", "/ready", c.ReadinessProbe},
			{"liveness", "health", "/health", c.LivenessProbe},
		} {
			port := pluginPort(corefile, tc.plugin)
			if port == 0 {
				t.Errorf("the Corefile enables no %s plugin with a port:\n%s", tc.plugin, corefile)
				continue
			}
			if tc.probe.HTTPGet.Path != tc.path || c.containerPort(tc.probe.HTTPGet.Port, "TCP") != port {
				t.Errorf("%s probe = GET %s on port %q (%d), want GET %s on %d", tc.name, tc.probe.HTTPGet.Path,
					tc.probe.HTTPGet.Port, c.containerPort(tc.probe.HTTPGet.Port, "TCP"), tc.path, port)
			}
		}
		if pluginPort(corefile, "ready") == pluginPort(corefile, "health") || pluginPort(corefile, "health") == pluginPort(corefile, "api_listen_port") {
			t.Errorf("the Corefile's ready, health and admin API ports must differ:\n%s", corefile)
		}
	})

	t.Run("metrics annotations", func(t *testing.T) {
		a := d.Spec.Template.Metadata.Annotations
		port := pluginPort(corefile, "prometheus")
		if a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != strconv.Itoa(port) || port == 0 {
			t.Errorf("pod annotations = %v; the Corefile's prometheus port is %d", a, port)
		}
		if c.containerPort("metrics", "TCP") != port {
			t.Errorf("container metrics port = %d, want %d", c.containerPort("metrics", "TCP"), port)
		}
		if a["checksum/config"] == "" {
			t.Errorf("no checksum/config annotation: %v", a)
		}
	})

	t.Run("security context", func(t *testing.T) {
		s := c.SecurityContext
		if !s.RunAsNonRoot || s.RunAsUser != 65532 || !pod.SecurityContext.RunAsNonRoot || pod.SecurityContext.RunAsUser != 65532 {
			t.Errorf("pod and container must run as non-root user 65532: pod %+v, container %+v", pod.SecurityContext, s)
		}
		if !s.ReadOnlyRootFilesystem || s.AllowPrivilegeEscalation {
			t.Errorf("container security context %+v: want a read-only root and no privilege escalation", s)
		}
		if strings.Join(s.Capabilities.Drop, ",") != "ALL" || strings.Join(s.Capabilities.Add, ",") != "NET_BIND_SERVICE" {
			t.Errorf("capabilities = %+v, want drop ALL and add NET_BIND_SERVICE", s.Capabilities)
		}
	})

	t.Run("api token", func(t *testing.T) {
		var s secret
		m.get(t, "Secret", apiSecret, &s)
		token, err := base64.StdEncoding.DecodeString(s.Data["token"])
		if err != nil || len(token) < 32 {
			t.Errorf("Secret token = %q (%v), want a random token of at least 32 characters", token, err)
		}
		if ref := tokenRef(c); ref != apiSecret+"/token" {
			t.Errorf("MERIDIAN_API_TOKEN comes from %q, want %s/token", ref, apiSecret)
		}
		if !strings.Contains(corefile, "api_token {$MERIDIAN_API_TOKEN}") {
			t.Errorf("the Corefile does not read the token from MERIDIAN_API_TOKEN:\n%s", corefile)
		}
	})

	t.Run("working directory", func(t *testing.T) {
		// The Corefile names the zone files relative to the working directory.
		if mount := configMount(pod); mount == "" || c.WorkingDir != mount {
			t.Errorf("working directory %q, want the ConfigMap's mount %q", c.WorkingDir, mount)
		}
	})

	t.Run("anti-affinity", func(t *testing.T) {
		terms := pod.Affinity.PodAntiAffinity.Preferred
		if len(terms) != 1 || terms[0].PodAffinityTerm.TopologyKey != "kubernetes.io/hostname" {
			t.Errorf("pod anti-affinity = %+v, want one preferred term across kubernetes.io/hostname", pod.Affinity)
		}
	})

	t.Run("rbac", func(t *testing.T) {
		granted := m.grants(t)
		for _, res := range []string{"/services", "discovery.k8s.io/endpointslices", "networking.k8s.io/ingresses", "gateway.networking.k8s.io/gateways"} {
			if granted[res] != "get,list,watch" {
				t.Errorf("ClusterRole grants %q on %s, want get,list,watch", granted[res], res)
			}
		}
		for _, res := range gslbResources {
			if granted[res] != "" {
				t.Errorf("ClusterRole grants %q on %s with k8gb off, want nothing", granted[res], res)
			}
		}
		if pod.ServiceAccountName != fullname {
			t.Errorf("pods run as %q, want the chart's ServiceAccount %s", pod.ServiceAccountName, fullname)
		}
	})
}

// gslbResources are k8gb's Gslb resources and their status, in both of k8gb's groups, as
// manifests.grants names them.
var gslbResources = []string{"k8gb.io/gslbs", "k8gb.absa.oss/gslbs", "k8gb.io/gslbs/status", "k8gb.absa.oss/gslbs/status"}

// grants returns the verbs (VERB,VERB...) the chart's ClusterRole grants on each GROUP/RESOURCE.
func (m manifests) grants(t *testing.T) map[string]string {
	t.Helper()
	var role clusterRole
	m.get(t, "ClusterRole", clusterName, &role)
	granted := map[string]string{}
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if granted[g+"/"+res] != "" {
					t.Errorf("ClusterRole grants %s twice", g+"/"+res)
				}
				granted[g+"/"+res] = strings.Join(r.Verbs, ",")
			}
		}
	}
	return granted
}

// gslbOptions returns the lines of the Corefile's gslb block that start with one of options.
func gslbOptions(t *testing.T, m manifests, options ...string) []string {
	t.Helper()
	var cm configMap
	m.get(t, "ConfigMap", fullname, &cm)
	block := regexp.MustCompile(`(?s)gslb \{\n(.*?)\n\s*\}`).FindStringSubmatch(cm.Data["Corefile"])
	if block == nil {
		t.Fatalf("the Corefile has no gslb block:\n%s", cm.Data["Corefile"])
	}
	var lines []string
	for _, line := range strings.Split(block[1], "\n") {
		if f := strings.Fields(line); len(f) > 0 && slices.Contains(options, f[0]) {
			lines = append(lines, strings.Join(f, " "))
		}
	}
	return lines
}

// serverPort returns the DNS port of the Corefile's first server block (ZONE:PORT... {), or 0.
func serverPort(corefile string) int {
	m := regexp.MustCompile(`(?m)^\S+:(\d+)(?:\s+\S+:\d+)*\s*\{`).FindStringSubmatch(corefile)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// tokenRef returns the Secret and key (SECRET/KEY) the container's MERIDIAN_API_TOKEN comes
// from, or "" when it has none.
func tokenRef(c container) string {
	for _, e := range c.Env {
		if e.Name == "MERIDIAN_API_TOKEN" {
			return e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
	}
	return ""
}

// TestChartValues renders the chart with values that change what it creates.
func TestChartValues(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string       // helm's
		kinds map[string]int // kinds whose count must be this (0: absent)
		check func(t *testing.T, m manifests)
	}{
		{name: "rbac off", flags: []string{"--set", "rbac.create=false"}, kinds: map[string]int{"ClusterRole": 0, "ClusterRoleBinding": 0}},
		{name: "replicas", flags: []string{"--set", "replicas=3"}, check: func(t *testing.T, m manifests) {
			var d deployment
			m.get(t, "Deployment", fullname, &d)
			if d.Spec.Replicas != 3 {
				t.Errorf("replicas = %d, want 3", d.Spec.Replicas)
			}
		}},
		{name: "api off", flags: []string{"--set", "api.enabled=false"}, kinds: map[string]int{"Secret": 0, "Service": 1}, check: func(t *testing.T, m manifests) {
			var cm configMap
			m.get(t, "ConfigMap", fullname, &cm)
			if strings.Contains(cm.Data["Corefile"], "api_") {
				t.Errorf("Corefile with the API off has api_ options:\n%s", cm.Data["Corefile"])
			}
		}},
		{name: "existing secret", flags: []string{"--set", "api.existingSecret=mine", "--set", "api.existingSecretKey=t"}, kinds: map[string]int{"Secret": 0}, check: func(t *testing.T, m manifests) {
			var d deployment
			m.get(t, "Deployment", fullname, &d)
			if ref := tokenRef(d.Spec.Template.Spec.Containers[0]); ref != "mine/t" {
				t.Errorf("MERIDIAN_API_TOKEN comes from %q, want mine/t", ref)
			}
		}},
		{name: "no pdb", flags: []string{"--set", "podDisruptionBudget.enabled=false"}, kinds: map[string]int{"PodDisruptionBudget": 0}},
		{name: "k8gb", flags: k8gbFlags, check: func(t *testing.T, m manifests) {
			want := []string{"zone example.test. example.test.yml", "zone cloud.example.com. " + k8gbZoneFile, "site eu", "peers_from_ns", "k8gb us za"}
			if got := gslbOptions(t, m, append(k8gbLines, "istio_sync_check")...); !slices.Equal(got, want) {
				t.Errorf("the gslb block's options %q, want %q", got, want)
			}
			var cm configMap
			m.get(t, "ConfigMap", fullname, &cm)
			if key, _, _ := strings.Cut(cm.Data["Corefile"], "\n"); key != "example.test:53 cloud.example.com:53 {" {
				t.Errorf("the Corefile's server block is %q, want both zones on port 53", key)
			}
			var zone struct {
				Records *map[string]any `yaml:"records"`
			}
			if err := yaml.Unmarshal([]byte(cm.Data[k8gbZoneFile]), &zone); err != nil || zone.Records == nil || len(*zone.Records) != 0 {
				t.Errorf("the ConfigMap's %s = %q (%v), want an empty records map", k8gbZoneFile, cm.Data[k8gbZoneFile], err)
			}
			granted := m.grants(t)
			if got := granted["networking.k8s.io/ingresses"]; got != "get,list,watch,create,patch" {
				t.Errorf("ClusterRole grants %q on Ingresses with k8gb on, want get,list,watch,create,patch (a Gslb's embedded ingress)", got)
			}
			for _, res := range gslbResources {
				want := "get,list,watch,create,patch" // create, patch: the annotation form, migrations
				if strings.HasSuffix(res, "/status") {
					want = "update,patch"
				}
				if granted[res] != want {
					t.Errorf("ClusterRole grants %q on %s, want %s", granted[res], res, want)
				}
			}
		}},
		{name: "k8gb without other clusters", flags: []string{"--set", "k8gb.enabled=true", "--set", "k8gb.clusterGeoTag=eu", "--set", "k8gb.dnsZone=cloud.example.com"}, check: func(t *testing.T, m manifests) {
			if got, want := gslbOptions(t, m, "site", "k8gb"), []string{"site eu", "k8gb"}; !slices.Equal(got, want) {
				t.Errorf("the gslb block's options %q, want %q", got, want)
			}
		}},
		{name: "k8gb peers", flags: append(slices.Clone(k8gbPeers), "--set", "k8gb.dnsZone=Cloud.Example.COM."), check: func(t *testing.T, m manifests) {
			want := []string{"zone example.test. example.test.yml", "zone cloud.example.com. " + k8gbZoneFile, "site eu",
				"peers 198.51.100.53 [2001:db8:c::53]:5353 ns-us.example.com", "k8gb us"}
			if got := gslbOptions(t, m, k8gbLines...); !slices.Equal(got, want) {
				t.Errorf("the gslb block's options %q, want %q", got, want)
			}
		}},
		{name: "k8gb zone file of the user's own", flags: append(slices.Clone(k8gbFlags), "--set", "config.zones.k8gb\\.cloud\\.example\\.com\\.yml=records: {app.cloud.example.com.: {}}"), check: func(t *testing.T, m manifests) {
			var cm configMap
			m.get(t, "ConfigMap", fullname, &cm)
			if got := strings.TrimSuffix(cm.Data[k8gbZoneFile], "\n"); got != "records: {app.cloud.example.com.: {}}" {
				t.Errorf("the ConfigMap's %s = %q, want config.zones' file", k8gbZoneFile, got)
			}
		}},
		{name: "istio", flags: []string{"--set", "istio.syncCheck.enabled=true"}, check: func(t *testing.T, m manifests) {
			if got, want := gslbOptions(t, m, "site", "k8gb", "istio_sync_check"), []string{"istio_sync_check"}; !slices.Equal(got, want) {
				t.Errorf("the gslb block's options %q, want %q", got, want)
			}
			if granted := m.grants(t); granted["k8gb.io/gslbs"] != "" {
				t.Errorf("the Istio check grants gslbs: %v", granted)
			}
		}},
		{name: "istio url", flags: []string{"--set", "istio.syncCheck.enabled=true", "--set", "istio.syncCheck.url=https://istiod.mesh.svc:15014/debug/syncz"}, check: func(t *testing.T, m manifests) {
			if got, want := gslbOptions(t, m, "istio_sync_check"), []string{"istio_sync_check https://istiod.mesh.svc:15014/debug/syncz"}; !slices.Equal(got, want) {
				t.Errorf("the gslb block's options %q, want %q", got, want)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := render(t, tc.flags...)
			got := m.kinds()
			for kind, n := range tc.kinds {
				if got[kind] != n {
					t.Errorf("%d %s, want %d (kinds: %v)", got[kind], kind, n, got)
				}
			}
			if tc.check != nil {
				tc.check(t, m)
			}
		})
	}
}

// TestChartRefusesBadValues checks that values of the wrong type (the chart's values.schema.json),
// ports that collide in the container, k8gb values that contradict each other or the
// Corefile, and k8gb on without the zone the default Corefile serves its Gslbs in stop the
// rendering with a message naming them.
func TestChartRefusesBadValues(t *testing.T) {
	// k8gbCorefile is a Corefile of the user's own serving Gslb resources.
	const k8gbCorefile = "config.corefile=example.test:53 {\n    gslb {\n        site eu\n        k8gb us\n    }\n}\n"
	for _, tc := range []struct {
		sets []string // helm's --set, or --set-literal with a config.corefile
		want string
	}{
		{[]string{"replicas=two"}, "/replicas"},
		{[]string{"service.type=External"}, "/service/type"},
		{[]string{"api.port=70000"}, "/api/port"},
		{[]string{"api.enabled=yes"}, "/api/enabled"},
		{[]string{"api.port=8080"}, "api.port and ports.health are both 8080"},
		{[]string{"metrics.port=53"}, "metrics.port and ports.dns are both 53"},
		{[]string{"ports.ready=8080"}, "ports.health and ports.ready are both 8080"},
		{[]string{"k8gb.enabled=yes"}, "/k8gb/enabled"},
		{[]string{"k8gb.enabled=true"}, "/k8gb/clusterGeoTag"},
		{[]string{"k8gb.clusterGeoTag=EU"}, "/k8gb/clusterGeoTag"},
		{[]string{"k8gb.clusterGeoTag=eu-"}, "/k8gb/clusterGeoTag"},
		{[]string{"k8gb.extGslbsClusterGeoTags=us"}, "/k8gb/extGslbsClusterGeoTags"},
		{[]string{"k8gb.extGslbsClusterGeoTags={us,us}"}, "/k8gb/extGslbsClusterGeoTags"},
		{[]string{"k8gb.extGslbsClusterGeoTags={us,Za}"}, "/k8gb/extGslbsClusterGeoTags/1"},
		{[]string{"k8gb.enabled=true", "k8gb.clusterGeoTag=eu", "k8gb.dnsZone=cloud.example.com", "k8gb.extGslbsClusterGeoTags={us,eu}"}, "k8gb.extGslbsClusterGeoTags has eu"},
		{[]string{"k8gb.enabled=true", "k8gb.clusterGeoTag=eu"}, "k8gb.dnsZone is required"},
		{[]string{"k8gb.dnsZone=cloud_example.com"}, "/k8gb/dnsZone"},
		{[]string{"k8gb.dnsZone=cloud..example.com"}, "/k8gb/dnsZone"},
		{[]string{"k8gb.dnsZone=-cloud.example.com"}, "/k8gb/dnsZone"},
		{[]string{"k8gb.peers=198.51.100.53"}, "/k8gb/peers"},
		{[]string{"k8gb.peers={198.51.100.53,198.51.100.53}"}, "/k8gb/peers"},
		{[]string{"k8gb.peers={2001:db8::53}"}, "/k8gb/peers/0"},
		{[]string{"k8gb.peers={198.51.100.53,ns.example.com:65536}"}, "/k8gb/peers/1"},
		{[]string{"k8gb.peers={ns.example.com:0}"}, "/k8gb/peers/0"},
		{[]string{"k8gb.peers={ns_us.example.com}"}, "/k8gb/peers/0"},
		{[]string{"k8gb.peers={http://ns.example.com}"}, "/k8gb/peers/0"},
		{[]string{"k8gb.peers={[fe80::1%eth0]:53}"}, "/k8gb/peers/0"},
		{[]string{"istio.syncCheck.enabled=on"}, "/istio/syncCheck/enabled"},
		{[]string{"istio.syncCheck.url=istiod:15014/debug/syncz"}, "/istio/syncCheck/url"},
		{[]string{"istio.syncCheck.url=ftp://istiod/syncz"}, "/istio/syncCheck/url"},
		{[]string{k8gbCorefile}, "the Corefile has a k8gb line but k8gb.enabled is false"},
		{[]string{"k8gb.enabled=true", "k8gb.clusterGeoTag=eu", "config.corefile=example.test:53 {\n    gslb {\n    }\n}\n"}, "the Corefile's gslb block has no k8gb line"},
	} {
		name, _, _ := strings.Cut(strings.Join(tc.sets, " "), "\n") // a Corefile's first line
		t.Run(name, func(t *testing.T) {
			args := []string{"template", "gslb", chartDir}
			for _, set := range tc.sets {
				flag := "--set"
				if strings.HasPrefix(set, "config.corefile=") {
					flag = "--set-literal"
				}
				args = append(args, flag, set)
			}
			_, stderr, err := helm(t, args...)
			if err == nil || !strings.Contains(stderr, tc.want) {
				t.Errorf("helm %q = %v, %s; want an error naming %q", args, err, stderr, tc.want)
			}
		})
	}
	// A Corefile of the user's own serving Gslb resources, with k8gb on.
	render(t, "--set-literal", k8gbCorefile, "--set", "k8gb.enabled=true", "--set", "k8gb.clusterGeoTag=eu")
	// The admin API's port is free to be the health plugin's when the API is off.
	render(t, "--set", "api.enabled=false", "--set", "api.port=8080")
}

// TestChartConfigChecksum checks that a change of the zone files (one more here) changes the
// pods' checksum annotation, so that it rolls them.
func TestChartConfigChecksum(t *testing.T) {
	checksum := func(flags ...string) string {
		var d deployment
		render(t, flags...).get(t, "Deployment", fullname, &d)
		return d.Spec.Template.Metadata.Annotations["checksum/config"]
	}
	before, after := checksum(), checksum("--set", "config.zones.extra\\.yml=records: {}")
	if before == "" || before == after {
		t.Errorf("checksum/config %q before a zone file change, %q after: want two different checksums", before, after)
	}
}

// TestChartCorefileChecks writes the ConfigMap's files into a directory, as the pod's mount
// does, and runs the real `meridian check` on them from there, the container's working
// directory: the default Corefile and zone file are valid, and the Corefile takes the admin
// API's token from the environment the Deployment sets.
func TestChartCorefileChecks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		flags  []string // helm's
		env    []string
		failed string // a part of the output when the check must fail
	}{
		{name: "defaults", env: []string{"MERIDIAN_API_TOKEN=0123456789abcdef"}},
		{name: "no token in the environment", failed: "without authentication"},
		{name: "api off", flags: []string{"--set", "api.enabled=false"}},
		{name: "k8gb and istio", flags: allOn, env: []string{"MERIDIAN_API_TOKEN=0123456789abcdef"}},
		{name: "k8gb peers", flags: append(slices.Clone(k8gbPeers), "--set", "k8gb.dnsZone=cloud.example.com", "--set", "api.enabled=false")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cm configMap
			render(t, tc.flags...).get(t, "ConfigMap", fullname, &cm)
			out, err := checkConfig(t, cm, tc.env...)
			switch {
			case tc.failed == "" && err != nil:
				t.Fatalf("meridian check of the chart's Corefile: %v\n%s\nCorefile:\n%s", err, out, cm.Data["Corefile"])
			case tc.failed != "" && (err == nil || !strings.Contains(string(out), tc.failed)):
				t.Fatalf("meridian check = %v, %s; want an error naming %q", err, out, tc.failed)
			}
		})
	}
}

// TestChartServes runs the real meridian with the chart's default Corefile and zone file,
// rendered with free ports, and checks what the pod's probes, Services and annotations rely on:
// DNS answers over UDP and TCP, GET /ready and GET /health answer 200 on the ports the probes
// use, the metrics are on the annotated port, and the admin API requires the token the
// Deployment puts in its environment. The test rewrites the listeners to loopback, where the
// pod listens on every interface, and the overrides file into the test's directory.
func TestChartServes(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	t.Setenv("MERIDIAN_API_TOKEN", token)
	ports := testutil.FreePorts(t, 4)
	ready, health, metrics, api := ports[0], ports[1], ports[2], ports[3]
	dir := t.TempDir()
	srv := testutil.Start(t, dir, func(dns int) string {
		var cm configMap
		render(t, "--set", "ports.dns="+strconv.Itoa(dns), "--set", "ports.ready="+strconv.Itoa(ready),
			"--set", "ports.health="+strconv.Itoa(health), "--set", "metrics.port="+strconv.Itoa(metrics),
			"--set", "api.port="+strconv.Itoa(api)).get(t, "ConfigMap", fullname, &cm)
		for name, content := range cm.Data {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		corefile := cm.Data["Corefile"]
		for _, r := range []struct{ from, to string }{
			{"example.test:" + strconv.Itoa(dns) + " {", "example.test:" + strconv.Itoa(dns) + " {\n    bind 127.0.0.1"},
			{"ready :", "ready 127.0.0.1:"},
			{"health :", "health 127.0.0.1:"},
			{"prometheus :", "prometheus 127.0.0.1:"},
			{"api_listen_addr 0.0.0.0", "api_listen_addr 127.0.0.1"},
			{"api_overrides_file /var/lib/meridian/overrides.json", "api_overrides_file overrides.json"},
		} {
			if strings.Count(corefile, r.from) != 1 {
				t.Fatalf("the chart's Corefile has not one %q to rewrite:\n%s", r.from, corefile)
			}
			corefile = strings.Replace(corefile, r.from, r.to, 1)
		}
		return corefile
	})

	for _, network := range []string{"udp", "tcp"} {
		r := srv.Query(t, network, "www.example.test.", 1) // A
		if len(r.Answer) != 1 || !strings.Contains(r.Answer[0].String(), "192.0.2.10") {
			t.Errorf("%s: www.example.test. A = %v, want 192.0.2.10", network, r.Answer)
		}
	}
	get := func(port int, path, auth string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		code, _ := get(ready, "/ready", "")
		return code == http.StatusOK
	}, "GET /ready on the readiness probe's port never answered 200:\n%s", srv.Logs())
	for _, tc := range []struct {
		name, path, auth string
		port, want       int
		body             string
	}{
		{"liveness", "/health", "", health, http.StatusOK, ""},
		{"metrics", "/metrics", "", metrics, http.StatusOK, "coredns_dns_requests_total"},
		{"api with the token", "/api/v1/zones", token, api, http.StatusOK, "example.test."},
		{"api without a token", "/api/v1/zones", "", api, http.StatusUnauthorized, ""},
		{"api with another token", "/api/v1/zones", "wrong", api, http.StatusUnauthorized, ""},
	} {
		if code, body := get(tc.port, tc.path, tc.auth); code != tc.want || !strings.Contains(body, tc.body) {
			t.Errorf("%s: GET %s on %d = %d %.200q, want %d with %q", tc.name, tc.path, tc.port, code, body, tc.want, tc.body)
		}
	}
}

// TestChartReadmeValues renders the chart with the values file its README shows, and checks the
// Corefile and the zone file it gives.
func TestChartReadmeValues(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(config:.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("the chart's README has no values file example (a yaml fence starting with config:)")
	}
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, m[1], 0o644); err != nil {
		t.Fatal(err)
	}
	var cm configMap
	render(t, "-f", values).get(t, "ConfigMap", fullname, &cm)
	if _, ok := cm.Data["example.org.yml"]; !ok || !strings.HasPrefix(cm.Data["Corefile"], "example.org:53 {") {
		t.Fatalf("the README's values are not in the ConfigMap: %v", cm.Data)
	}
	if out, err := checkConfig(t, cm, "MERIDIAN_API_TOKEN=0123456789abcdef"); err != nil {
		t.Fatalf("meridian check of the README's Corefile: %v\n%s", err, out)
	}
}

// checkConfig writes the ConfigMap's files into a directory, as the pod's mount does, and runs
// `meridian check -conf Corefile` there with env added to the environment, less any
// MERIDIAN_API_TOKEN of the test's own. It returns the output and the error of the run.
func checkConfig(t *testing.T, cm configMap, env ...string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range cm.Data {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(testutil.Binary(t), "check", "-conf", "Corefile")
	cmd.Dir = dir
	cmd.Env = append(withoutToken(os.Environ()), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// withoutToken returns env without MERIDIAN_API_TOKEN.
func withoutToken(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "MERIDIAN_API_TOKEN=") {
			out = append(out, kv)
		}
	}
	return out
}

// TestDockerfile checks the image definition: its build stage has go.mod's Go and runs the
// Makefile's build command, word for word once the Makefile's variables are expanded; its final
// stage runs as a user other than root, exposes DNS over UDP and TCP, and starts meridian with
// -conf on the file the chart mounts.
func TestDockerfile(t *testing.T) {
	stages := dockerStages(t, "../Dockerfile")
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stage(s), want a build stage and a final one", len(stages))
	}
	// The build stage's Go is go.mod's release: golang:MAJOR.MINOR, the newest patch release.
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if goVersion == nil {
		t.Fatal("go.mod has no go directive")
	}
	if from := strings.Fields(stages[0].last("FROM")); len(from) == 0 || from[0] != "golang:"+string(goVersion[1]) {
		t.Errorf("the build stage is FROM %v, want golang:%s, go.mod's Go", from, goVersion[1])
	}

	want := makeRecipe(t, "../Makefile", "build")
	var builds []string
	for _, in := range stages[0] {
		if in.op == "RUN" && strings.Contains(in.args, " build ") {
			builds = append(builds, in.args)
		}
	}
	if len(builds) != 1 || !equalWords(t, builds[0], want) {
		t.Errorf("the build stage's build commands = %q, want exactly the Makefile's: %q", builds, want)
	}

	final := stages[len(stages)-1]
	user, expose, entrypoint := final.last("USER"), final.last("EXPOSE"), final.last("ENTRYPOINT")
	if name, _, _ := strings.Cut(user, ":"); name == "" || name == "root" || name == "0" {
		t.Errorf("the final stage's USER = %q, want a non-root user", user)
	}
	if exposed := strings.Fields(expose); !slices.Contains(exposed, "53/udp") || !slices.Contains(exposed, "53/tcp") {
		t.Errorf("EXPOSE %s, want 53/udp and 53/tcp", expose)
	}
	var argv []string
	if err := yaml.Unmarshal([]byte(entrypoint), &argv); err != nil || len(argv) != 3 || argv[1] != "-conf" {
		t.Fatalf("ENTRYPOINT %s (%v), want [BINARY, \"-conf\", COREFILE]", entrypoint, err)
	}

	// The Corefile the image reads is the one the chart's ConfigMap mount provides.
	var d deployment
	render(t).get(t, "Deployment", fullname, &d)
	mount := configMount(d.Spec.Template.Spec)
	if dir, file := path.Split(argv[2]); path.Clean(dir) != mount || file != "Corefile" {
		t.Errorf("the image reads %s; the chart mounts its ConfigMap (key Corefile) at %q", argv[2], mount)
	}
}

// configMount returns where the pod's container mounts the chart's ConfigMap, or "".
func configMount(pod podSpec) string {
	for _, v := range pod.Volumes {
		if v.ConfigMap.Name != fullname {
			continue
		}
		for _, vm := range pod.Containers[0].VolumeMounts {
			if vm.Name == v.Name {
				return vm.MountPath
			}
		}
	}
	return ""
}

// instruction is one Dockerfile instruction, its continuation lines joined.
type instruction struct{ op, args string }

// stage is the instructions of one Dockerfile stage, its FROM first.
type stage []instruction

// last returns the arguments of the stage's last op instruction, or "".
func (s stage) last(op string) string {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i].op == op {
			return s[i].args
		}
	}
	return ""
}

// dockerStages parses the Dockerfile at path into its stages.
func dockerStages(t *testing.T, path string) []stage {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var stages []stage
	for _, line := range joinContinuations(string(data)) {
		op, args, _ := strings.Cut(line, " ")
		in := instruction{strings.ToUpper(op), strings.TrimSpace(args)}
		if in.op == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			if in.op != "ARG" {
				t.Fatalf("%s: %s before the first FROM", path, line)
			}
			continue
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	return stages
}

// joinContinuations returns the logical lines of a Dockerfile or Makefile: comments and blank
// lines dropped, lines ending in a backslash joined with the next.
func joinContinuations(text string) []string {
	var lines []string
	cur := ""
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		lines = append(lines, cur+trimmed)
		cur = ""
	}
	return lines
}

// makeRecipe returns the one command of the Makefile's target, its variables expanded, except
// VERSION (computed by the shell in the Makefile, a build argument in the Dockerfile), which
// stays ${VERSION}.
func makeRecipe(t *testing.T, path, target string) string {
	t.Helper()
	recipe := makeRecipeLines(t, path, target)
	if len(recipe) != 1 {
		t.Fatalf("%s: target %s has %d commands, want one: %q", path, target, len(recipe), recipe)
	}
	return recipe[0]
}

// makeRecipeLines returns the commands of the Makefile's target, their continuation lines
// joined and their variables expanded as makeRecipe does, without the silent ones (@...).
func makeRecipeLines(t *testing.T, path, target string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"VERSION": "${VERSION}"}
	assign := regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*(?:\?=|:=|=)\s*(.*)$`)
	var recipe []string
	in, continued, silent := false, false, false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "\t"):
			text := strings.TrimSpace(line)
			more := strings.HasSuffix(text, "\\")
			text = strings.TrimSpace(strings.TrimSuffix(text, "\\"))
			switch {
			case !in:
			case silent || (!continued && strings.HasPrefix(text, "@")):
				silent = more
			case continued:
				recipe[len(recipe)-1] += " " + text
			default:
				recipe = append(recipe, text)
			}
			continued = more
		case strings.HasPrefix(line, target+":"):
			in, continued, silent = true, false, false
		default:
			in, continued, silent = false, false, false
			if m := assign.FindStringSubmatch(line); m != nil {
				if _, set := vars[m[1]]; !set {
					vars[m[1]] = m[2]
				}
			}
		}
	}
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	for i, cmd := range recipe {
		for range 10 { // variables referring to variables
			cmd = ref.ReplaceAllStringFunc(cmd, func(r string) string {
				v, ok := vars[ref.FindStringSubmatch(r)[1]]
				if !ok {
					t.Fatalf("%s: %s uses %s, which the Makefile does not set", path, target, r)
				}
				return v
			})
		}
		recipe[i] = cmd
	}
	return recipe
}

// equalWords reports whether two shell commands are the same words, after quoting is removed.
func equalWords(t *testing.T, a, b string) bool {
	t.Helper()
	wa, wb := shellWords(t, a), shellWords(t, b)
	return strings.Join(wa, "\x00") == strings.Join(wb, "\x00")
}

// shellWords splits a shell command into its words, honouring single and double quotes.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("unterminated quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// TestTheAPIServerAcceptsTheChart applies the rendered chart, with its defaults and then with
// every optional part on, to a real kube-apiserver (testutil.StartKube), which validates each
// object against its schema as a cluster would; after each, the server's RBAC authorizer says
// what the pods' ServiceAccount may do: read what the Kubernetes source reads, and k8gb's Gslb
// resources and write their status only with k8gb on.
func TestTheAPIServerAcceptsTheChart(t *testing.T) {
	kube := testutil.StartKube(t)
	kube.Apply(t, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "dns"}})
	clusterScoped := map[string]bool{"ClusterRole": true, "ClusterRoleBinding": true, "Namespace": true}
	for _, tc := range []struct {
		flags []string
		k8gb  bool
	}{
		{nil, false},
		{append([]string{"--set", "replicas=3"}, allOn...), true},
	} {
		for _, o := range render(t, tc.flags...) {
			var obj map[string]any
			if err := o.node.Decode(&obj); err != nil {
				t.Fatal(err)
			}
			if !clusterScoped[o.Kind] {
				obj["metadata"].(map[string]any)["namespace"] = "dns"
			}
			kube.Apply(t, obj) // fails the test with the server's answer when it refuses
		}
		for _, a := range []struct {
			verb, group, resource, subresource string
			want                               bool
		}{
			{"watch", "", "services", "", true},
			{"list", "discovery.k8s.io", "endpointslices", "", true},
			{"watch", "networking.k8s.io", "ingresses", "", true},
			{"list", "gateway.networking.k8s.io", "gateways", "", true},
			{"update", "", "services", "status", false},
			{"list", "k8gb.io", "gslbs", "", tc.k8gb},
			{"watch", "k8gb.absa.oss", "gslbs", "", tc.k8gb},
			{"patch", "k8gb.io", "gslbs", "status", tc.k8gb},
			{"update", "k8gb.absa.oss", "gslbs", "status", tc.k8gb},
			{"patch", "networking.k8s.io", "ingresses", "", tc.k8gb},
			{"delete", "networking.k8s.io", "ingresses", "", false},
			{"update", "k8gb.io", "gslbs", "", false},
			{"delete", "k8gb.io", "gslbs", "", false},
		} {
			if got := allowed(t, kube, a.verb, a.group, a.resource, a.subresource); got != a.want {
				t.Errorf("flags %q: the ServiceAccount may %s %s/%s/%s: %v, want %v", tc.flags, a.verb, a.group, a.resource, a.subresource, got, a.want)
			}
		}
	}
	var dep struct {
		Spec struct{ Replicas int }
	}
	if err := json.Unmarshal(kube.Get(t, "/apis/apps/v1/namespaces/dns/deployments/"+fullname), &dep); err != nil {
		t.Fatal(err)
	}
	if dep.Spec.Replicas != 3 {
		t.Errorf("the Deployment the server stored has %d replicas, want 3 from the second apply", dep.Spec.Replicas)
	}
}

// allowed asks the API server's authorizer (a SubjectAccessReview) whether the chart's
// ServiceAccount, in the namespace dns, may do verb on the resource (and subresource) of group
// in every namespace.
func allowed(t *testing.T, kube *testutil.Kube, verb, group, resource, subresource string) bool {
	t.Helper()
	review, err := json.Marshal(map[string]any{"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
		"spec": map[string]any{"user": "system:serviceaccount:dns:" + fullname,
			"groups":             []string{"system:serviceaccounts", "system:serviceaccounts:dns", "system:authenticated"},
			"resourceAttributes": map[string]any{"verb": verb, "group": group, "resource": resource, "subresource": subresource}}})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(kube.CA) {
		t.Fatal("the API server's CA is no PEM certificate")
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, err := http.NewRequest(http.MethodPost, kube.URL+"/apis/authorization.k8s.io/v1/subjectaccessreviews", bytes.NewReader(review))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+kube.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("SubjectAccessReview: %v", err)
	}
	defer resp.Body.Close()
	var answer struct {
		Status struct{ Allowed bool }
	}
	if body, err := io.ReadAll(resp.Body); err != nil || resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &answer) != nil {
		t.Fatalf("SubjectAccessReview: %s %s (%v)", resp.Status, body, err)
	}
	return answer.Status.Allowed
}

// TestGslbCRDs installs the chart's custom resource definitions of k8gb's Gslb (k8gb.io and the
// legacy k8gb.absa.oss) in a real kube-apiserver, applies a Gslb of each strategy in each group
// as k8gb's users write them, writes a status through the status subresource, and checks that
// the server accepts and refuses what k8gb v0.21's definitions do: any strategy type and TTL
// (they have no enum nor minimum), integer weights in both groups, not percentages.
func TestGslbCRDs(t *testing.T) {
	kube := testutil.StartKube(t)
	testutil.InstallGslbCRDs(t, kube, filepath.Join(chartDir, "crds"))
	kube.Apply(t, testutil.KubeNamespace("apps"))
	ingress := map[string]any{"rules": []any{map[string]any{"host": "app.cloud.example.com", "http": map[string]any{"paths": []any{
		map[string]any{"path": "/", "pathType": "Prefix", "backend": map[string]any{"service": map[string]any{"name": "app", "port": map[string]any{"number": 80}}}}}}}}}
	gslb := func(apiVersion, name string, strategy map[string]any) map[string]any {
		return map[string]any{"apiVersion": apiVersion, "kind": "Gslb", "metadata": map[string]any{"name": name, "namespace": "apps"},
			"spec": map[string]any{"ingress": ingress, "strategy": strategy}}
	}
	tests := []struct {
		apiVersion, name string
		strategy         map[string]any
		ok               bool
	}{
		{"k8gb.io/v1beta1", "rr", map[string]any{"type": "roundRobin", "dnsTtlSeconds": 30}, true},
		{"k8gb.io/v1beta1", "weighted", map[string]any{"type": "roundRobin", "weight": map[string]any{"eu": 5, "us": 2}}, true},
		{"k8gb.io/v1beta1", "failover", map[string]any{"type": "failover", "primaryGeoTag": "eu", "splitBrainThresholdSeconds": 300}, true},
		{"k8gb.io/v1beta1", "geo", map[string]any{"type": "geoip"}, true},
		{"k8gb.io/v1beta1", "unknown", map[string]any{"type": "consistent"}, true},
		{"k8gb.io/v1beta1", "negative", map[string]any{"type": "roundRobin", "dnsTtlSeconds": -1}, true},
		{"k8gb.absa.oss/v1beta1", "legacy", map[string]any{"type": "roundRobin", "weight": map[string]any{"eu": 30, "us": 70}}, true},
		{"k8gb.absa.oss/v1beta1", "legacy-percent", map[string]any{"type": "roundRobin", "weight": map[string]any{"eu": "30%", "us": "70%"}}, false},
		{"k8gb.absa.oss/v1beta1", "legacy-failover", map[string]any{"type": "failover", "primaryGeoTag": "us"}, true},
		{"k8gb.absa.oss/v1beta1", "legacy-bad-weight", map[string]any{"type": "roundRobin", "weight": map[string]any{"eu": "a lot"}}, false},
	}
	for _, tt := range tests {
		status, out := kube.TryApply(t, gslb(tt.apiVersion, tt.name, tt.strategy))
		if ok := status/100 == 2; ok != tt.ok {
			t.Errorf("%s %s: status %d, want accepted %v: %s", tt.apiVersion, tt.name, status, tt.ok, out)
		}
	}
	var stored struct {
		Spec struct {
			ServiceHealthPolicy string `json:"serviceHealthPolicy"`
		}
	}
	if err := json.Unmarshal(kube.Get(t, "/apis/k8gb.io/v1beta1/namespaces/apps/gslbs/rr"), &stored); err != nil || stored.Spec.ServiceHealthPolicy != "Any" {
		t.Errorf("serviceHealthPolicy defaults to %q (%v), want Any", stored.Spec.ServiceHealthPolicy, err)
	}
	withStatus := gslb("k8gb.io/v1beta1", "failover", nil)
	delete(withStatus, "spec")
	withStatus["status"] = map[string]any{"geoTag": "eu", "hosts": "app.cloud.example.com",
		"serviceHealth": map[string]any{"app.cloud.example.com": "Healthy"}, "healthyRecords": map[string]any{"app.cloud.example.com": []any{"192.0.2.10"}}}
	var got struct {
		Status struct {
			GeoTag        string              `json:"geoTag"`
			ServiceHealth map[string]string   `json:"serviceHealth"`
			Healthy       map[string][]string `json:"healthyRecords"`
		}
	}
	if err := json.Unmarshal(kube.ApplyStatus(t, withStatus), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.GeoTag != "eu" || got.Status.ServiceHealth["app.cloud.example.com"] != "Healthy" || len(got.Status.Healthy["app.cloud.example.com"]) != 1 {
		t.Errorf("the stored status: %+v", got.Status)
	}
}
