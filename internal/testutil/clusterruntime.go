package testutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/ociimage"
)

// The cluster's container runtime: containerd with its configuration, the CNI network and the
// kubelet's configuration, and the images the tests run.

// The images StartCluster imports: the pods' sandbox, named in containerd's configuration, and
// ClusterAppImage.
const (
	clusterPauseImage = "localhost/meridian-test/pause:1"
	// ClusterAppImage is a web server whose readiness the test sets (internal/testutil/kubeapp):
	// GET /ready answers 200 or 503, POST /ready?ok=false makes it answer 503, ?ok=true 200
	// again. It listens on port 8080, as user 65532.
	ClusterAppImage = "localhost/meridian-test/app:1"
)

// clusterSocket is containerd's socket.
var clusterSocket = filepath.Join(clusterDir, "containerd.sock")

// containerdConfig is containerd's configuration: its state under clusterDir, the CRI plugin
// with the sandbox image, the bridge network, runc with cgroupfs, and restrict_oom_score_adj
// (without CAP_SYS_RESOURCE, as in some VMs and containers, runc cannot set the score of -998
// the kubelet asks for a sandbox, and fails to start it).
func containerdConfig() string {
	return fmt.Sprintf(`version = 2
root = "%[1]s/containerd/root"
state = "%[1]s/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "%[2]s"

[plugins."io.containerd.internal.v1.opt"]
  path = "%[1]s/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "%[3]s"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "%[4]s"
    conf_dir = "%[1]s/cni"
`, clusterDir, clusterSocket, clusterPauseImage, clusterCNIBinDir)
}

// cniConfig is the pods' network: a bridge (the one prepareHost made) that is their gateway,
// with addresses of clusterPodCIDR from host-local, and hairpin mode, so that a pod reaches
// itself through a Service.
func cniConfig() []byte {
	conf := map[string]any{"cniVersion": "1.0.0", "name": clusterNetwork, "plugins": []any{map[string]any{
		"type": "bridge", "bridge": clusterBridge, "isGateway": true, "ipMasq": false, "hairpinMode": true,
		"ipam": map[string]any{"type": "host-local", "dataDir": filepath.Join(clusterDir, "cni-ipam"),
			"ranges": []any{[]any{map[string]any{"subnet": clusterPodCIDR, "gateway": clusterNodeIP,
				"rangeStart": strings.TrimSuffix(clusterPodCIDR, "0/24") + "10", "rangeEnd": strings.TrimSuffix(clusterPodCIDR, "0/24") + "250"}}},
			"routes": []any{map[string]any{"dst": "0.0.0.0/0"}}},
	}}}
	data, _ := json.MarshalIndent(conf, "", "  ") // maps of plain values always encode
	return data
}

// kubeletConfig is the kubelet's configuration (JSON is YAML): cgroupfs on a cgroup v1 host
// allowed, no swap check, containerd's socket, its API on the node's address with anonymous
// access (the API server reaches it for logs and exec), eviction and image garbage collection
// effectively off (the machine's disk and memory are shared with other work, and the pause
// image must stay), the pods' logs under clusterDir.
func kubeletConfig() []byte {
	conf := map[string]any{
		"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
		"cgroupDriver": "cgroupfs", "failCgroupV1": false, "failSwapOn": false,
		"containerRuntimeEndpoint": "unix://" + clusterSocket,
		"address":                  clusterNodeIP, "port": 10250, "readOnlyPort": 0,
		"healthzBindAddress": "127.0.0.1", "healthzPort": 10248,
		"authentication": map[string]any{"anonymous": map[string]any{"enabled": true}, "webhook": map[string]any{"enabled": false}},
		"authorization":  map[string]any{"mode": "AlwaysAllow"},
		"evictionHard": map[string]any{"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%",
			"nodefs.inodesFree": "1%", "imagefs.inodesFree": "1%"},
		"imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
		"podLogsDir":    filepath.Join(clusterDir, "pods"),
		"resolvConf":    filepath.Join(clusterDir, "resolv.conf"),
		"clusterDomain": "cluster.local",
		// Probes of a second: the tests wait for the kubelet's verdicts.
		"nodeStatusUpdateFrequency": "4s", "syncFrequency": "10s",
	}
	data, _ := json.MarshalIndent(conf, "", "  ") // maps of plain values always encode
	return data
}

// startContainerd writes containerd's and the network's configuration and starts containerd.
func (c *Cluster) startContainerd(t testing.TB) {
	t.Helper()
	writeClusterFile(t, "cni/10-"+clusterNetwork+".conflist", cniConfig())
	config := writeClusterFile(t, "containerd.toml", []byte(containerdConfig()))
	cmd := exec.Command("containerd", "--config", config)
	dieWithTest(cmd)
	c.containerd = startProcess(t, cmd)
	c.containerd.waitFor(t, "containerd", clusterReadyTimeout, func() bool {
		_, err := c.ctr("version")
		return err == nil
	})
}

// stopContainerd removes the containers containerd still has (none after a clean stop) and
// stops it.
func (c *Cluster) stopContainerd() {
	if c.containerd == nil {
		return
	}
	if out, err := c.ctr("containers", "ls", "-q"); err == nil {
		for _, id := range strings.Fields(out) {
			_, _ = c.ctr("tasks", "kill", "-s", "SIGKILL", id)
			_, _ = c.ctr("tasks", "rm", "-f", id)
			_, _ = c.ctr("containers", "rm", id)
		}
	}
	c.containerd.stop()
}

// ctr runs containerd's client on the Kubernetes namespace and returns its output.
func (c *Cluster) ctr(args ...string) (string, error) {
	cmd := exec.Command("ctr", append([]string{"--address", clusterSocket, "--namespace", "k8s.io"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// sandboxCount returns the number of containers containerd holds (sandboxes and containers),
// -1 when it does not answer.
func (c *Cluster) sandboxCount() int {
	out, err := c.ctr("containers", "ls", "-q")
	if err != nil {
		return -1
	}
	return len(strings.Fields(out))
}

// ImportImage writes img for the host's architecture as an OCI archive and imports it into
// the cluster's containerd under img.Ref, so that pods run it with imagePullPolicy Never or
// IfNotPresent.
func (c *Cluster) ImportImage(t testing.TB, img ociimage.Image) {
	t.Helper()
	var buf bytes.Buffer
	if err := ociimage.Write(&buf, img, goArch()); err != nil {
		t.Fatal(err)
	}
	c.ImportArchive(t, img.Ref, buf.Bytes())
}

// ImportArchive imports the OCI image layout archive of the image ref into the cluster's
// containerd, which names it as the archive's index does.
func (c *Cluster) ImportArchive(t testing.TB, ref string, archive []byte) {
	t.Helper()
	name := strings.NewReplacer("/", "_", ":", "_").Replace(ref) + ".tar"
	path := writeClusterFile(t, filepath.Join("images", name), archive)
	if _, err := c.ctr("images", "import", path); err != nil {
		t.Fatalf("importing %s: %v", ref, err)
	}
}

// goArch returns the architecture Go builds for here.
func goArch() string {
	out, err := exec.Command("go", "env", "GOARCH").Output()
	if err != nil {
		return "amd64"
	}
	return strings.TrimSpace(string(out))
}

// clusterTestImages builds kubeapp (static) and returns the pause image and ClusterAppImage,
// both of it.
func clusterTestImages(t testing.TB) []ociimage.Image {
	t.Helper()
	bin := buildStatic(t, "github.com/meridian-gslb/meridian/internal/testutil/kubeapp")
	app := ociimage.File{Path: "/kubeapp", Mode: 0o755, Data: bin}
	return []ociimage.Image{
		{Ref: clusterPauseImage, Config: ociimage.Config{User: "65535:65535", Entrypoint: []string{"/kubeapp", "pause"}},
			Files: []ociimage.File{app}},
		{Ref: ClusterAppImage, Config: ociimage.Config{User: "65532:65532", Entrypoint: []string{"/kubeapp"},
			ExposedPorts: []string{"8080/tcp"}}, Files: []ociimage.File{app}},
	}
}

// buildStatic builds the main package pkg of this module as a static binary (CGO_ENABLED=0,
// as the image's meridian) and returns it.
func buildStatic(t testing.TB, pkg string) []byte {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, pkg)
	cmd.Dir = moduleRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// MeridianImage returns the reference and the OCI archive of the Meridian image the chart runs
// in the cluster: the archive $MERIDIAN_IMAGE names (`make image` writes it; `make test-k8s`
// sets the variable), or else ociimage.Meridian around a static meridian built for the test,
// as localhost/meridian:test.
func MeridianImage(t testing.TB) (string, []byte) {
	t.Helper()
	if path := os.Getenv("MERIDIAN_IMAGE"); path != "" {
		archive, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("$MERIDIAN_IMAGE: %v", err)
		}
		img, _, err := ociimage.Read(bytes.NewReader(archive))
		if err != nil {
			t.Fatalf("$MERIDIAN_IMAGE %s: %v", path, err)
		}
		return img.Ref, archive
	}
	ca, err := os.ReadFile(ociimage.CABundle)
	if err != nil {
		t.Fatalf("the CA bundle of the image: %v", err)
	}
	img := ociimage.Meridian("localhost/meridian:test", "test", buildStatic(t, "github.com/meridian-gslb/meridian/cmd/meridian"), ca)
	var buf bytes.Buffer
	if err := ociimage.Write(&buf, img, goArch()); err != nil {
		t.Fatal(err)
	}
	return img.Ref, buf.Bytes()
}
