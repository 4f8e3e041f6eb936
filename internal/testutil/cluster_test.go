package testutil

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashEnv makes TestClusterCrash start a cluster and wait to be killed: TestCluster runs it in
// a process of its own.
const crashEnv = "MERIDIAN_TEST_CLUSTER_CRASH"

// TestCluster checks the one-node cluster the chart's tests run in, and that it leaves the host
// as it found it. A first cluster runs in a test process that is killed (SIGKILL) while a pod
// runs, leaving its containers, mounts, iptables chains, cgroups and bridge; the next cluster's
// start sweeps them. In that cluster a pod of ClusterAppImage behind a LoadBalancer Service
// becomes ready through its readiness probe and not ready when the probe fails, and the host
// reaches it at its pod IP, the Service's cluster IP and the load balancer's address. When the
// test ends, no process, mount, network namespace, iptables chain, cgroup, bridge, kernel
// setting or file of the cluster is left.
func TestCluster(t *testing.T) {
	if reason := clusterPreflight(); reason != "" {
		t.Skip(reason)
	}
	if _, err := KubeBinaries(KubeComponents...); err != nil { // a first build is not the test's
		t.Fatal(err)
	}
	before := hostState()
	crash(t)
	if left := clusterTraces(); len(left) == 0 {
		t.Error("the killed test process left nothing behind: the sweep is not tested")
	} else {
		t.Logf("the killed test process left:\n\t%s", strings.Join(left, "\n\t"))
	}
	t.Run("after the crash", func(t *testing.T) {
		c := StartCluster(t)
		checkAppPod(t, c)
	})
	if left := clusterTraces(); len(left) > 0 {
		t.Errorf("the cluster left:\n\t%s", strings.Join(left, "\n\t"))
	}
	if after := hostState(); !maps.Equal(before, after) {
		t.Errorf("the host's kernel settings and directories before the clusters:\n%v\nafter:\n%v", before, after)
	}
}

// TestClusterCrash starts a cluster with a running pod, says READY on its standard output and
// waits to be killed: run by TestCluster, skipped otherwise.
func TestClusterCrash(t *testing.T) {
	if os.Getenv(crashEnv) != "1" {
		t.Skip("a process of TestCluster's, killed while its cluster runs")
	}
	c := StartCluster(t)
	c.Apply(t, KubeNamespace("crash"))
	c.Apply(t, appPod("crash", "app"))
	Eventually(t, clusterReadyTimeout, func() bool { return c.podReady("crash", "app") }, "the pod is not ready")
	fmt.Println("READY")
	select {} // until killed
}

// crash runs TestClusterCrash in a test process of its own and kills it (SIGKILL) once its pod
// runs.
func crash(t *testing.T) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestClusterCrash$", "-test.v")
	cmd.Env = append(os.Environ(), crashEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { // killed, also when the test fails here
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
	}()
	ready := make(chan bool, 1)
	var out syncBuffer
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out.Write([]byte(sc.Text() + "\n"))
			if sc.Text() == "READY" {
				ready <- true
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("the crashing test process ended before its pod ran:\n%s%s", out.String(), stderr.String())
		}
	case <-time.After(15 * time.Minute): // it may wait for another test process's cluster
		t.Fatalf("the crashing test process's pod did not run within 15 minutes:\n%s%s", out.String(), stderr.String())
	}
}

// appPod returns a pod of ClusterAppImage in namespace, labelled app=name, whose readiness
// probe runs every second and fails at the first 503.
func appPod(namespace, name string) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": namespace, "labels": map[string]any{"app": name}},
		"spec": map[string]any{"containers": []any{map[string]any{
			"name": "app", "image": ClusterAppImage, "imagePullPolicy": "Never",
			"ports": []any{map[string]any{"name": "http", "containerPort": 8080}},
			"readinessProbe": map[string]any{"httpGet": map[string]any{"path": "/ready", "port": "http"},
				"periodSeconds": 1, "failureThreshold": 1},
		}}},
	}
}

// clusterPod is what the tests read of a pod.
type clusterPod struct {
	Status struct {
		PodIP      string `json:"podIP"`
		Conditions []struct{ Type, Status string }
	} `json:"status"`
}

// pod returns the pod name of namespace.
func (c *Cluster) pod(t *testing.T, namespace, name string) clusterPod {
	t.Helper()
	var p clusterPod
	if err := json.Unmarshal(c.Get(t, "/api/v1/namespaces/"+namespace+"/pods/"+name), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// podReady reports whether the pod's Ready condition is True.
func (c *Cluster) podReady(namespace, name string) bool {
	_, body, err := c.do(http.MethodGet, "/api/v1/namespaces/"+namespace+"/pods/"+name, "", nil)
	var p clusterPod
	if err != nil || json.Unmarshal(body, &p) != nil {
		return false
	}
	return slices.ContainsFunc(p.Status.Conditions, func(c struct{ Type, Status string }) bool {
		return c.Type == "Ready" && c.Status == "True"
	})
}

// checkAppPod runs appPod behind a LoadBalancer Service and checks its readiness and its
// addresses.
func checkAppPod(t *testing.T, c *Cluster) {
	c.Apply(t, KubeNamespace("app"))
	c.Apply(t, appPod("app", "web"))
	svc := KubeService("app", "web")
	svc["spec"].(map[string]any)["ports"] = []any{map[string]any{"port": 80, "targetPort": 8080, "protocol": "TCP"}}
	c.Apply(t, svc)
	Eventually(t, clusterReadyTimeout, func() bool { return c.podReady("app", "web") }, "the pod is not ready")
	var service struct {
		Spec   struct{ ClusterIP string }
		Status struct {
			LoadBalancer struct{ Ingress []struct{ IP string } }
		}
	}
	Eventually(t, clusterReadyTimeout, func() bool {
		return json.Unmarshal(c.Get(t, "/api/v1/namespaces/app/services/web"), &service) == nil && len(service.Status.LoadBalancer.Ingress) == 1
	}, "the Service has no load balancer's address")
	podIP := c.pod(t, "app", "web").Status.PodIP
	for _, url := range []string{"http://" + podIP + ":8080/", "http://" + service.Spec.ClusterIP + "/", "http://" + service.Status.LoadBalancer.Ingress[0].IP + "/"} {
		Eventually(t, 10*time.Second, func() bool { return httpOK(url)() }, "GET %s failed", url)
	}
	post := func(ok bool) {
		resp, err := http.Post(fmt.Sprintf("http://%s:8080/ready?ok=%t", podIP, ok), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	post(false)
	Eventually(t, 10*time.Second, func() bool { return !c.podReady("app", "web") }, "the pod is still ready with its probe failing")
	post(true)
	Eventually(t, 10*time.Second, func() bool { return c.podReady("app", "web") }, "the pod is not ready with its probe passing again")
}

// hostState returns the values of the kernel settings a cluster changes, and whether each
// directory it may create outside its own exists.
func hostState() map[string]string {
	out := map[string]string{}
	for key := range clusterSysctls {
		v, _ := os.ReadFile(filepath.Join("/proc/sys", key))
		out[key] = strings.TrimSpace(string(v))
	}
	for _, dir := range clusterHostDirs {
		_, err := os.Stat(dir)
		out[dir] = fmt.Sprint("exists: ", err == nil)
	}
	return out
}

// clusterTraces lists what a cluster left on the host: its processes, the pods' cgroups,
// mounts and network namespaces, the iptables chains of Kubernetes and CNI, the bridge, and
// clusterDir.
func clusterTraces() []string {
	var out []string
	for _, pid := range processesNaming(clusterDir) {
		out = append(out, fmt.Sprintf("process %d: %s", pid, processCommand(pid)))
	}
	for _, cg := range kubepodsCgroups() {
		out = append(out, "cgroup "+cg)
	}
	for _, m := range mountPoints() {
		if strings.HasPrefix(m.path, clusterDir) || strings.HasPrefix(m.path, "/run/netns/cni-") {
			out = append(out, "mount "+m.path)
		}
	}
	netns, _ := filepath.Glob("/run/netns/cni-*")
	for _, ns := range netns {
		out = append(out, "network namespace "+ns)
	}
	for _, bin := range []string{"iptables", "ip6tables"} {
		for _, table := range iptablesTables {
			rules, _ := iptablesRules(bin, table)
			for _, r := range rules {
				if r[0] == "-N" && ownChain(r[1]) {
					out = append(out, fmt.Sprintf("%s %s chain %s", bin, table, r[1]))
				}
			}
		}
	}
	if _, err := os.Stat("/sys/class/net/" + clusterBridge); err == nil {
		out = append(out, "bridge "+clusterBridge)
	}
	if _, err := os.Stat(clusterDir); err == nil {
		out = append(out, "directory "+clusterDir)
	}
	return out
}

// TestSplitQuoted: the rules of iptables -S split into the arguments iptables -D takes back.
func TestSplitQuoted(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{`-N KUBE-SERVICES`, []string{"-N", "KUBE-SERVICES"}},
		{`-A INPUT -m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS`,
			[]string{"-A", "INPUT", "-m", "comment", "--comment", "kubernetes health check service ports", "-j", "KUBE-NODEPORTS"}},
		{`-A X -m comment --comment "a \"quoted\" word" -j ACCEPT`, []string{"-A", "X", "-m", "comment", "--comment", `a "quoted" word`, "-j", "ACCEPT"}},
		{`-A X --comment ""  -j Y`, []string{"-A", "X", "--comment", "", "-j", "Y"}},
	} {
		if got := splitQuoted(tc.line); !slices.Equal(got, tc.want) {
			t.Errorf("splitQuoted(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
	if !jumpsToOwn([]string{"-A", "FORWARD", "-j", "KUBE-FORWARD"}) || jumpsToOwn([]string{"-A", "FORWARD", "-j", "ACCEPT"}) {
		t.Error("jumpsToOwn does not tell a jump to KUBE-FORWARD from ACCEPT")
	}
}

// TestUnescapeMount: mountinfo's octal escapes are undone.
func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/tmp/a\040b\134c`); got != `/tmp/a b\c` {
		t.Errorf("got %q", got)
	}
}
