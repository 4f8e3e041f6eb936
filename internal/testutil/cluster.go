package testutil

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ClusterNode is the name of the cluster's one node.
const ClusterNode = "meridian-test-node"

// clusterReadyTimeout bounds each wait of the cluster's start: a component's health, the node's
// Ready condition, the default service account.
const clusterReadyTimeout = 90 * time.Second

// clusterEnv is the environment variable that turns the real-cluster tests on: `make test-k8s`
// sets it. They need root and change the host's network and cgroups for their duration, so a
// plain `go test ./...` (make test) does not run them.
const clusterEnv = "MERIDIAN_TEST_K8S"

// The programs the cluster needs from the host (Debian: containerd, runc,
// containernetworking-plugins, iptables, conntrack, iproute2), and the CNI plugins it uses.
var (
	clusterPrograms   = []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "iptables", "ip6tables", "conntrack", "ip"}
	clusterCNIPlugins = []string{"bridge", "host-local", "loopback"}
	clusterCNIBinDir  = "/usr/lib/cni"
)

// Cluster is a real one-node Kubernetes cluster of KubeVersion: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, a kubelet on containerd (the host's, with runc and
// the bridge CNI plugin) and kube-proxy (iptables mode), all on the host, one per machine. Its
// API server is at https://10.37.0.1:PORT, the node's address on a bridge of its own; pods get
// addresses of 10.37.0.0/24, Services cluster IPs of 10.37.1.0/24, and the host reaches both
// (and ClusterExternalAddress's) directly. Images come from OCI archives imported into
// containerd (ImportImage): no registry is involved. The embedded Kube applies and reads objects
// as the cluster's administrator.
type Cluster struct {
	*Kube
	// KubeconfigFile is a kubeconfig of the administrator, for kubectl and helm.
	KubeconfigFile string

	bins       map[string]string
	containerd *process
	procs      []*namedProcess // the components after the API server, in the order they started
	stopOnce   sync.Once
}

// namedProcess is a component of the cluster and its process.
type namedProcess struct {
	name string
	*process
}

// ClusterExternalAddress returns the address 10.37.2.N: give it to a LoadBalancer Service's
// status, as a cloud's controller would, and kube-proxy answers it on the host.
func ClusterExternalAddress(n int) string { return fmt.Sprintf("%s%d", clusterExternalNet, n) }

// StartCluster starts a one-node cluster for the test and stops it, leaving the host as it
// found it, when the test ends (whether it passed or not; a crashed run's leftovers are swept
// by the next run's start). It takes about thirty seconds; the Kubernetes programs are built
// from their modules the first time on a machine (KubeBinaries; `make test-k8s` does it before
// the tests). It skips the test, saying why, unless $MERIDIAN_TEST_K8S is 1 (`make test-k8s`
// sets it), when not run as root, or when the host lacks containerd, runc, the CNI plugins,
// iptables or conntrack (`make test-k8s` installs them) or runs a Kubernetes node of its own.
// Clusters of concurrent test processes wait for each other.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	if reason := clusterPreflight(); reason != "" {
		t.Skip(reason)
	}
	bins, err := KubeBinaries(KubeComponents...)
	if err != nil {
		t.Fatalf("the Kubernetes programs: %v", err)
	}
	lockCluster(t)
	if _, err := os.Stat(clusterDir); err == nil {
		found, err := sweepCluster()
		t.Logf("swept what an earlier run left:\n\t%s", strings.Join(found, "\n\t"))
		if err != nil {
			t.Fatalf("sweeping an earlier run's cluster: %v", err)
		}
	} else if reason := foreignCluster(); reason != "" {
		t.Skipf("the host runs a Kubernetes node or CNI network of its own, which the tests' cleanup would destroy: %s", reason)
	}
	t.Cleanup(func() {
		found, err := sweepCluster()
		t.Logf("teardown: the sweep undid:\n\t%s", strings.Join(found, "\n\t"))
		if err != nil {
			t.Errorf("teardown of the cluster: %v", err)
		}
	})
	if err := prepareHost(); err != nil {
		t.Fatalf("preparing the host: %v", err)
	}
	c := &Cluster{bins: bins, KubeconfigFile: filepath.Join(clusterDir, "kubeconfig")}
	t.Cleanup(func() { // after the components stopped, before the sweep
		if t.Failed() {
			c.saveLogs(t)
		}
	})
	start := time.Now()
	c.startContainerd(t)
	for _, img := range clusterTestImages(t) {
		c.ImportImage(t, img)
	}
	c.Kube = startKube(t, kubeOptions{dir: clusterDir, address: clusterNodeIP, serviceCIDR: clusterServiceCIDR,
		certIPs: []net.IP{net.ParseIP(clusterServiceIP(1))},
		// The node's host name resolves nowhere: the API server reaches the kubelet (logs, exec)
		// at the node's address.
		args:    []string{"--authorization-mode=Node,RBAC", "--allow-privileged=true", "--kubelet-preferred-address-types=InternalIP"},
		prepare: dieWithTest})
	writeClusterFile(t, "kubeconfig", c.kubeconfig())
	c.startControlPlane(t)
	c.startNode(t)
	t.Cleanup(func() { c.stop(t) })
	c.serveLoadBalancers(t)
	t.Logf("cluster %s ready in %s", KubeVersion, time.Since(start).Round(time.Millisecond))
	return c
}

// clusterPreflight returns why the host cannot run a cluster, or "" when it can.
func clusterPreflight() string {
	if os.Getenv(clusterEnv) != "1" {
		return "a real one-node Kubernetes cluster: run with `make test-k8s` (" + clusterEnv + "=1); it needs root, containerd and the whole host"
	}
	if os.Geteuid() != 0 {
		return "a real one-node Kubernetes cluster needs root (the kubelet, containerd, iptables, cgroups); not root here"
	}
	var missing []string
	for _, p := range clusterPrograms {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	for _, p := range clusterCNIPlugins {
		if _, err := os.Stat(filepath.Join(clusterCNIBinDir, p)); err != nil {
			missing = append(missing, filepath.Join(clusterCNIBinDir, p))
		}
	}
	if len(missing) > 0 {
		return "a real one-node Kubernetes cluster needs " + strings.Join(missing, ", ") +
			" (Debian: containerd runc containernetworking-plugins iptables conntrack iproute2; `make test-k8s` installs them)"
	}
	if len(cgroupMounts()) == 0 {
		return "a real one-node Kubernetes cluster needs cgroups; none is mounted here"
	}
	return ""
}

// lockCluster takes the machine's cluster lock for the test's duration, waiting for another
// test process's cluster to end.
func lockCluster(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(clusterLockFile, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Logf("waiting for %s: another test process runs its cluster", clusterLockFile)
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			t.Fatalf("lock %s: %v", clusterLockFile, err)
		}
	}
	t.Cleanup(func() { f.Close() }) // the lock goes with the descriptor
}

// clusterServiceIP returns the Nth address of the Services' range (the kubernetes Service has
// the first).
func clusterServiceIP(n int) string {
	return strings.TrimSuffix(clusterServiceCIDR, "0/24") + fmt.Sprint(n)
}

// writeClusterFile writes a file of the cluster's configuration into clusterDir and returns
// its path.
func writeClusterFile(t testing.TB, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(clusterDir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// dieWithTest makes cmd's process get SIGKILL when the test process dies, so that a crashed
// run leaves no component running (containerd's shims and the containers outlive it by design:
// the next run's sweep ends them).
func dieWithTest(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }

// startComponent starts a component of the cluster with args and waits until ready returns
// true; stop stops it, in the reverse order of the starts.
func (c *Cluster) startComponent(t testing.TB, name string, ready func() bool, args ...string) {
	t.Helper()
	cmd := exec.Command(c.bins[name], args...)
	dieWithTest(cmd)
	p := startProcess(t, cmd)
	c.procs = append(c.procs, &namedProcess{name: name, process: p})
	p.waitFor(t, name, clusterReadyTimeout, ready)
}

// startControlPlane starts the controller manager and the scheduler, with the administrator's
// kubeconfig and their secure ports on loopback.
func (c *Cluster) startControlPlane(t testing.TB) {
	t.Helper()
	kc := c.KubeconfigFile
	auth := []string{"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--leader-elect=false", "--bind-address=127.0.0.1"}
	c.startComponent(t, "kube-controller-manager", httpOK("https://127.0.0.1:10257/healthz"), append(auth,
		"--service-account-private-key-file="+filepath.Join(clusterDir, "sa.key"),
		"--root-ca-file="+filepath.Join(clusterDir, "api.crt"),
		"--use-service-account-credentials=false",
		// No pod CIDRs: the CNI plugin's range is fixed.
		"--controllers=*,-nodeipam", "--cluster-name=meridian-test")...)
	c.startComponent(t, "kube-scheduler", httpOK("https://127.0.0.1:10259/healthz"), auth...)
}

// startNode starts the kubelet, waits until its node is Ready, starts kube-proxy, and waits
// for the default namespace's service account.
func (c *Cluster) startNode(t testing.TB) {
	t.Helper()
	config := writeClusterFile(t, "kubelet.json", kubeletConfig())
	writeClusterFile(t, "resolv.conf", []byte("options ndots:1\n"))
	c.startComponent(t, "kubelet", httpOK("http://127.0.0.1:10248/healthz"),
		"--config="+config, "--kubeconfig="+c.KubeconfigFile, "--root-dir="+filepath.Join(clusterDir, "kubelet"),
		"--cert-dir="+filepath.Join(clusterDir, "kubelet-pki"),
		"--node-ip="+clusterNodeIP, "--hostname-override="+ClusterNode, "--v=0")
	Eventually(t, clusterReadyTimeout, c.nodeReady, "node %s not Ready", ClusterNode)
	c.startComponent(t, "kube-proxy", httpOK("http://127.0.0.1:10256/healthz"),
		"--kubeconfig="+c.KubeconfigFile, "--proxy-mode=iptables", "--hostname-override="+ClusterNode,
		"--cluster-cidr="+clusterPodCIDR, "--nodeport-addresses="+clusterNodeIP+"/32",
		"--iptables-localhost-nodeports=false", "--bind-address="+clusterNodeIP,
		"--healthz-bind-address=127.0.0.1:10256", "--metrics-bind-address=127.0.0.1:10249",
		// Leave the host's conntrack settings alone.
		"--conntrack-max-per-core=0", "--conntrack-tcp-timeout-established=0", "--conntrack-tcp-timeout-close-wait=0")
	Eventually(t, clusterReadyTimeout, func() bool { return c.Served("/api/v1/namespaces/default/serviceaccounts/default") },
		"the default service account was not created")
}

// nodeReady reports whether the node's Ready condition is True.
func (c *Cluster) nodeReady() bool {
	status, body, err := c.do(http.MethodGet, "/api/v1/nodes/"+ClusterNode, "", nil)
	if err != nil || status != http.StatusOK {
		return false
	}
	var node struct {
		Status struct {
			Conditions []struct{ Type, Status string }
		}
	}
	if json.Unmarshal(body, &node) != nil {
		return false
	}
	for _, c := range node.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

// httpOK returns a readiness check that GET url answers 200. The client does not check the
// server's certificate: the components' secure ports have self-signed ones, and the check is
// of health, not of identity.
func httpOK(url string) func() bool {
	client := insecureClient(2 * time.Second)
	return func() bool {
		resp, err := client.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
}

// Kubectl runs kubectl of KubeVersion with args against the cluster and returns its standard
// output, failing the test with its standard error when it fails.
func (c *Cluster) Kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := c.TryKubectl(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// TryKubectl is Kubectl that returns the error (with kubectl's standard error) rather than
// failing the test: for commands expected to fail.
func (c *Cluster) TryKubectl(args ...string) (string, error) {
	cmd := exec.Command(c.bins["kubectl"], append([]string{"--kubeconfig=" + c.KubeconfigFile}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%w: %s", err, stderr.String())
	}
	return string(out), nil
}

// stop ends the cluster cleanly: every workload is deleted and the pods' sandboxes torn down
// by the kubelet, then the components stop, the API server before etcd.
func (c *Cluster) stop(t testing.TB) {
	c.stopOnce.Do(func() {
		c.deleteWorkloads(t)
		for i := len(c.procs) - 1; i >= 0; i-- {
			c.procs[i].stop()
		}
		c.Kube.Stop() // the API server, then etcd
		c.stopContainerd()
	})
}

// deleteWorkloads deletes every workload and pod, and waits (a minute at most) until the
// kubelet has torn their sandboxes down, network namespaces included.
func (c *Cluster) deleteWorkloads(t testing.TB) {
	if _, err := c.TryKubectl("delete", "deployments,replicasets,statefulsets,daemonsets,jobs,pods", "--all", "--all-namespaces", "--wait=false"); err != nil {
		t.Logf("teardown: %v", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && (c.podCount() > 0 || c.sandboxCount() > 0) {
		time.Sleep(200 * time.Millisecond)
	}
	if n, s := c.podCount(), c.sandboxCount(); n != 0 || s != 0 {
		t.Logf("teardown: %d pods and %d containers left after a minute; the sweep removes them", n, s)
	}
}

// podCount returns the number of pods the API server holds, -1 when it does not answer.
func (c *Cluster) podCount() int {
	status, body, err := c.do(http.MethodGet, "/api/v1/pods", "", nil)
	var list struct{ Items []json.RawMessage }
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &list) != nil {
		return -1
	}
	return len(list.Items)
}

// saveLogs writes every component's output into a directory that outlives the test, and logs
// its path.
func (c *Cluster) saveLogs(t testing.TB) {
	dir, err := os.MkdirTemp("", "meridian-test-cluster-logs-")
	if err != nil {
		t.Logf("saving the cluster's logs: %v", err)
		return
	}
	var errs []error
	for _, p := range c.allProcesses() {
		if p.process != nil {
			errs = append(errs, os.WriteFile(filepath.Join(dir, p.name+".log"), []byte(p.logs.String()), 0o644))
		}
	}
	t.Logf("the cluster's logs are in %s (%v)", dir, errors.Join(errs...))
}

// allProcesses returns every component that runs, with its process.
func (c *Cluster) allProcesses() []*namedProcess {
	out := append([]*namedProcess{{"containerd", c.containerd}}, c.procs...)
	if c.Kube != nil {
		out = append(out, &namedProcess{"etcd", c.etcd}, &namedProcess{"kube-apiserver", c.api})
	}
	return out
}

// Kubelet returns the body of the kubelet's answer to GET path on its API (such as
// /metrics/probes), failing the test unless it is 200 OK. The kubelet's certificate is its own
// self-signed one, which the API server does not check either.
func (c *Cluster) Kubelet(t testing.TB, path string) []byte {
	t.Helper()
	resp, err := insecureClient(10 * time.Second).Get("https://" + net.JoinHostPort(clusterNodeIP, "10250") + path)
	if err != nil {
		t.Fatalf("kubelet %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("kubelet %s: %s %s %v", path, resp.Status, body, err)
	}
	return body
}

// insecureClient returns an HTTP client that does not check servers' certificates: for the
// components' own self-signed ones, asked for health and metrics rather than trusted.
func insecureClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
}
