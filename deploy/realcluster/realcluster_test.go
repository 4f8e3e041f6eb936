package realcluster

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/ociimage"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// chartDir is the chart, relative to this package's directory.
const chartDir = "../helm/meridian"

// helmTimeout bounds `helm install --wait` and `helm upgrade --wait`.
const helmTimeout = "3m"

// answerTimeout bounds the wait for an answer to follow a change in the cluster: the kubelet's
// probe (a second here), the EndpointSlice controller, Meridian's watch, and a site's
// peer_interval for the other site.
const answerTimeout = 45 * time.Second

// env is what the cases share: the cluster, and the Meridian images in it.
type env struct {
	c *testutil.Cluster
	// repo and tag are the Meridian image the releases run; upgradeTag tags another image of
	// the same files with another version label, the "new release" of the upgrade.
	repo, tag, upgradeTag string
	// namespaces are those the running case created.
	namespaces map[string]bool
}

// TestChartInCluster runs the chart in a real one-node cluster (testutil.StartCluster; `make
// test-k8s`), every case in namespaces of its own: run one with -run
// 'TestChartInCluster/NAME'.
func TestChartInCluster(t *testing.T) {
	c := testutil.StartCluster(t)
	e := &env{c: c, namespaces: map[string]bool{}}
	ref, archive := testutil.MeridianImage(t)
	c.ImportArchive(t, ref, archive)
	i := strings.LastIndex(ref, ":")
	e.repo, e.tag = ref[:i], ref[i+1:]
	e.upgradeTag = e.tag + "-upgrade"
	next, err := ociimage.Relabel(archive, e.repo+":"+e.upgradeTag, map[string]string{"org.opencontainers.image.version": e.upgradeTag})
	if err != nil {
		t.Fatal(err)
	}
	c.ImportArchive(t, e.repo+":"+e.upgradeTag, next)
	t.Logf("Meridian image %s, and %s:%s, the same files with another version label", ref, e.repo, e.upgradeTag)

	t.Run("Install", e.testInstall)
	t.Run("ServiceReadiness", e.testServiceReadiness)
	t.Run("K8gbTwoSites", e.testK8gbTwoSites)
	t.Run("RolloutUnderLoad", e.testRolloutUnderLoad)
}

// helm runs helm with args against the cluster and returns its output, failing the test when
// it fails.
func (e *env) helm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := e.tryHelm(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tryHelm runs helm with args against the cluster and returns its combined output.
func (e *env) tryHelm(args ...string) (string, error) {
	bin, err := testutil.HelmBinary()
	if err != nil {
		return "", err
	}
	out, err := exec.Command(bin, append([]string{"--kubeconfig", e.c.KubeconfigFile}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// install installs the chart as release in namespace (created), with the values of the YAML
// document values over the defaults, the test's image, and the flags set (--set NAME=VALUE...),
// waiting until its pods are ready; the release and the namespace are deleted when the test
// ends. It returns how long the install took.
func (e *env) install(t *testing.T, namespace, release, values string, set ...string) time.Duration {
	t.Helper()
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	e.namespace(t, namespace)
	args := []string{"install", release, chartDir, "--namespace", namespace, "--wait", "--timeout", helmTimeout,
		"-f", file, "--set", "image.repository=" + e.repo, "--set", "image.tag=" + e.tag, "--set", "image.pullPolicy=Never"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	start := time.Now()
	if out, err := e.tryHelm(args...); err != nil {
		t.Fatalf("%v\n%s", err, e.describe(namespace))
	} else {
		t.Logf("helm install %s: %s", release, strings.TrimSpace(firstLines(out, 3)))
	}
	took := time.Since(start)
	t.Cleanup(func() {
		_, _ = e.tryHelm("uninstall", release, "--namespace", namespace, "--wait", "--timeout", helmTimeout)
	})
	return took
}

// namespace creates namespace, unless the test did already, deleted (and waited for) when the
// test ends.
func (e *env) namespace(t *testing.T, namespace string) {
	t.Helper()
	if e.namespaces[namespace] {
		return
	}
	e.namespaces[namespace] = true
	e.c.Apply(t, testutil.KubeNamespace(namespace))
	t.Cleanup(func() {
		delete(e.namespaces, namespace)
		if _, err := e.c.TryKubectl("delete", "namespace", namespace, "--wait=true", "--timeout=2m"); err != nil {
			t.Logf("deleting namespace %s: %v", namespace, err)
		}
	})
}

// describe returns what kubectl says of namespace's pods and events: for a failure's message.
func (e *env) describe(namespace string) string {
	pods, _ := e.c.TryKubectl("get", "pods", "-o", "wide", "-n", namespace)
	events, _ := e.c.TryKubectl("get", "events", "-n", namespace, "--sort-by=.lastTimestamp")
	return "pods:\n" + pods + "events:\n" + events
}

// firstLines returns the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// pod is what the tests read of a pod.
type pod struct {
	Metadata struct {
		Name              string  `json:"name"`
		DeletionTimestamp *string `json:"deletionTimestamp"`
	} `json:"metadata"`
	Spec struct {
		Containers []struct {
			Image          string          `json:"image"`
			ReadinessProbe json.RawMessage `json:"readinessProbe"`
			LivenessProbe  json.RawMessage `json:"livenessProbe"`
		} `json:"containers"`
	} `json:"spec"`
	Status struct {
		Phase      string `json:"phase"`
		PodIP      string `json:"podIP"`
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
		ContainerStatuses []struct {
			RestartCount int    `json:"restartCount"`
			ImageID      string `json:"imageID"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

// ready reports whether the pod's Ready condition is True.
func (p pod) ready() bool {
	for _, c := range p.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

// pods returns the pods of namespace that the label selector selects.
func (e *env) pods(t *testing.T, namespace, selector string) []pod {
	t.Helper()
	var list struct{ Items []pod }
	if err := json.Unmarshal(e.c.Get(t, "/api/v1/namespaces/"+namespace+"/pods?labelSelector="+selector), &list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// releasePods returns the pods of the chart's release in namespace.
func (e *env) releasePods(t *testing.T, namespace, release string) []pod {
	t.Helper()
	return e.pods(t, namespace, "app.kubernetes.io/instance%3D"+release)
}

// serviceIP returns the cluster IP of a Service.
func (e *env) serviceIP(t *testing.T, namespace, name string) string {
	t.Helper()
	var svc struct {
		Spec struct {
			ClusterIP string `json:"clusterIP"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(e.c.Get(t, "/api/v1/namespaces/"+namespace+"/services/"+name), &svc); err != nil {
		t.Fatal(err)
	}
	return svc.Spec.ClusterIP
}

// query asks server (an address, port 53) name/qtype over network.
func query(server, network, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Net: network, Timeout: 2 * time.Second}
	r, _, err := c.Exchange(m, net.JoinHostPort(server, "53"))
	return r, err
}

// addresses returns the A and AAAA addresses of an answer, sorted; nil after an error.
func addresses(r *dns.Msg, err error) []string {
	if err != nil || r == nil {
		return nil
	}
	var out []string
	for _, rr := range r.Answer {
		switch a := rr.(type) {
		case *dns.A:
			out = append(out, a.A.String())
		case *dns.AAAA:
			out = append(out, a.AAAA.String())
		}
	}
	slices.Sort(out)
	return out
}

// answers returns the addresses server answers to queries A queries for name over UDP, the
// union of their answers (a round-robin record answers one address a query), sorted.
func answers(server, name string, queries int) []string {
	var out []string
	for range queries {
		for _, a := range addresses(query(server, "udp", name, dns.TypeA)) {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	slices.Sort(out)
	return out
}

// waitAnswer waits until every server answers name's A queries with exactly the addresses
// want (over four queries), and returns how long that took.
func waitAnswer(t *testing.T, servers []string, name string, want ...string) time.Duration {
	t.Helper()
	start := time.Now()
	want = slices.Sorted(slices.Values(want))
	var got [][]string
	testutil.Eventually(t, answerTimeout, func() bool {
		got = got[:0]
		all := true
		for _, s := range servers {
			a := answers(s, name, 4)
			got = append(got, a)
			all = all && slices.Equal(a, want)
		}
		return all
	}, "%s: the servers %v answer %v, want %v", name, servers, func() string { return fmt.Sprint(got) }, want)
	return time.Since(start)
}

// appDeployment returns a Deployment of ClusterAppImage in namespace: replicas pods labelled
// app=name, whose readiness probe (GET /ready on port 8080) runs every second and fails at the
// first 503, so that a test's POST /ready?ok=false makes the kubelet mark the pod not ready
// within about a second.
func appDeployment(namespace, name string, replicas int) map[string]any {
	labels := map[string]any{"app": name}
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{"replicas": replicas, "selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name": "app", "image": testutil.ClusterAppImage, "imagePullPolicy": "Never",
					"ports": []any{map[string]any{"name": "http", "containerPort": 8080}},
					"env":   []any{map[string]any{"name": "POD_NAME", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.name"}}}},
					"readinessProbe": map[string]any{"httpGet": map[string]any{"path": "/ready", "port": "http"},
						"periodSeconds": 1, "failureThreshold": 1, "successThreshold": 1, "timeoutSeconds": 1},
				}}}}},
	}
}

// appService returns the Service of appDeployment's pods: type LoadBalancer, port 80 to the
// pods' 8080.
func appService(namespace, name string) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{"type": "LoadBalancer", "selector": map[string]any{"app": name},
			"ports": []any{map[string]any{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}}},
	}
}

// runApp runs appDeployment and appService in namespace and waits until the pods are ready.
func (e *env) runApp(t *testing.T, namespace, name string, replicas int) {
	t.Helper()
	e.c.Apply(t, appDeployment(namespace, name, replicas))
	e.c.Apply(t, appService(namespace, name))
	testutil.Eventually(t, answerTimeout, func() bool {
		ps := e.pods(t, namespace, "app%3D"+name)
		n := 0
		for _, p := range ps {
			if p.ready() {
				n++
			}
		}
		return n == replicas && len(ps) == replicas
	}, "the pods of %s/%s are not ready\n%s", namespace, name, func() string { return e.describe(namespace) })
}

// setReady makes every pod of the app name in namespace answer its readiness probe with ok.
func (e *env) setReady(t *testing.T, namespace, name string, ok bool) {
	t.Helper()
	for _, p := range e.pods(t, namespace, "app%3D"+name) {
		url := fmt.Sprintf("http://%s/ready?ok=%t", net.JoinHostPort(p.Status.PodIP, "8080"), ok)
		resp, err := http.Post(url, "", nil)
		if err != nil {
			t.Fatalf("pod %s: %v", p.Metadata.Name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %s", url, resp.Status)
		}
	}
}
