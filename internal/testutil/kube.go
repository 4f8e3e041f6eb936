package testutil

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/admin/admintest"
)

// kubeStartTimeout bounds the start of etcd and then of kube-apiserver, until /readyz says ok.
const kubeStartTimeout = 60 * time.Second

// kubeUser is the user the static token authenticates: a member of system:masters, which RBAC's
// bootstrap policy binds to cluster-admin.
const kubeUser = "meridian-test"

// Kube is a real kube-apiserver on a free 127.0.0.1 port, storing in a real etcd of its own:
// the API only, without controllers, scheduler or nodes. Authorization is RBAC; Token
// authenticates a member of system:masters. Both processes stop when the test ends.
type Kube struct {
	// URL is the API server's address, https://127.0.0.1:PORT.
	URL string
	// Token is a bearer token of a cluster administrator.
	Token string
	// CA is the PEM certificate clients trust the server by: the server's own, self-signed.
	CA []byte

	dir    string
	client *http.Client
	etcd   *process
	api    *process
}

// StartKube starts etcd and kube-apiserver for the test and waits until the API server's
// /readyz says ok (about five seconds). Both binaries are built from their Go modules the first
// time on a machine (EtcdBinary, KubeAPIServerBinary; `make testbins` does it before the tests).
func StartKube(t testing.TB) *Kube {
	t.Helper()
	return startKube(t, kubeOptions{dir: t.TempDir(), address: "127.0.0.1", serviceCIDR: "10.0.0.0/24",
		// The endpoint reconciler refuses a loopback address for the kubernetes Service.
		args: []string{"--endpoint-reconciler-type=none", "--authorization-mode=RBAC"}})
}

// kubeOptions are what differs between the API server of StartKube and that of StartCluster.
type kubeOptions struct {
	dir         string   // where the credentials and etcd's data go
	address     string   // the address the API server listens on and advertises
	serviceCIDR string   // the Services' cluster IP range
	certIPs     []net.IP // addresses its certificate is for, besides 127.0.0.1 and address
	args        []string // more flags of kube-apiserver
	prepare     func(*exec.Cmd)
}

// startKube starts etcd and kube-apiserver with opts and waits until /readyz says ok.
func startKube(t testing.TB, opts kubeOptions) *Kube {
	t.Helper()
	etcdBin, err := EtcdBinary()
	if err != nil {
		t.Fatalf("etcd: %v", err)
	}
	apiBin, err := KubeAPIServerBinary()
	if err != nil {
		t.Fatalf("kube-apiserver: %v", err)
	}
	k := &Kube{dir: opts.dir, Token: randomToken(t)}
	etcdURL := k.startEtcd(t, etcdBin, opts.prepare)
	k.startAPIServer(t, apiBin, etcdURL, opts)
	return k
}

// startEtcd starts a single-member etcd on free loopback ports with its data in the test's
// directory, waits until it is healthy and returns its client URL. prepare, when not nil, may
// change the command before it starts.
func (k *Kube) startEtcd(t testing.TB, bin string, prepare func(*exec.Cmd)) string {
	t.Helper()
	ports := FreePorts(t, 2)
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	cmd := exec.Command(bin, "--name=meridian-test", "--data-dir="+filepath.Join(k.dir, "etcd"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=meridian-test="+peer, "--log-level=error",
		"--unsafe-no-fsync") // the data dies with the test
	if prepare != nil {
		prepare(cmd)
	}
	k.etcd = startProcess(t, cmd)
	k.etcd.waitFor(t, "etcd at "+client, kubeStartTimeout, func() bool {
		var health struct{ Health string }
		resp, err := http.Get(client + "/health")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&health) == nil && health.Health == "true"
	})
	return client
}

// startAPIServer starts kube-apiserver on a free port of opts.address, storing in etcdURL, with
// a serving certificate and a service account key generated for the test, and waits for
// /readyz.
func (k *Kube) startAPIServer(t testing.TB, bin, etcdURL string, opts kubeOptions) {
	t.Helper()
	port := FreePort(t)
	k.URL = fmt.Sprintf("https://%s", net.JoinHostPort(opts.address, strconv.Itoa(port)))
	ips := append([]net.IP{net.ParseIP(opts.address)}, opts.certIPs...)
	files := k.writeCredentials(t, ips)
	cmd := exec.Command(bin, append([]string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=" + opts.address, "--advertise-address=" + opts.address,
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + files["tls.crt"], "--tls-private-key-file=" + files["tls.key"],
		"--token-auth-file=" + files["tokens.csv"],
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + files["sa.pub"], "--service-account-signing-key-file=" + files["sa.key"],
		"--service-cluster-ip-range=" + opts.serviceCIDR,
		"--v=0"}, opts.args...)...)
	if opts.prepare != nil {
		opts.prepare(cmd)
	}
	k.api = startProcess(t, cmd)
	k.api.waitFor(t, "kube-apiserver at "+k.URL, kubeStartTimeout, func() bool {
		status, body, err := k.do(http.MethodGet, "/readyz", "", nil)
		return err == nil && status == http.StatusOK && string(body) == "ok"
	})
}

// writeCredentials writes the API server's TLS certificate and key (self-signed, for 127.0.0.1
// and ips, the certificate kept in k.CA and trusted by k.client), its service account key pair
// and the static token file, and returns their paths by name.
func (k *Kube) writeCredentials(t testing.TB, ips []net.IP) map[string]string {
	t.Helper()
	paths := map[string]string{}
	paths["tls.crt"], paths["tls.key"], k.client = admintest.CertificateFor(t, k.dir, ips, []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc"})
	ca, err := os.ReadFile(paths["tls.crt"])
	if err != nil {
		t.Fatal(err)
	}
	k.CA = ca
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	saPriv, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		t.Fatal(err)
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	contents := map[string][]byte{
		"sa.key":     pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saPriv}),
		"sa.pub":     pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub}),
		"tokens.csv": fmt.Appendf(nil, "%s,%s,%s,\"system:masters\"\n", k.Token, kubeUser, kubeUser),
	}
	for name, content := range contents {
		paths[name] = filepath.Join(k.dir, name)
		if err := os.WriteFile(paths[name], content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return paths
}

// randomToken returns 32 random bytes, hex-encoded.
func randomToken(t testing.TB) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", b)
}

// Kubeconfig writes a kubeconfig file for the API server (its URL, CA and Token, as the current
// context) into the test's directory and returns its path.
func (k *Kube) Kubeconfig(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, k.kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// kubeconfig returns a kubeconfig of the API server with the administrator's token.
func (k *Kube) kubeconfig() []byte {
	// JSON is YAML: client-go reads this as it reads any kubeconfig.
	config := map[string]any{
		"apiVersion": "v1", "kind": "Config", "current-context": "meridian-test",
		"clusters": []any{map[string]any{"name": "meridian-test", "cluster": map[string]any{
			"server": k.URL, "certificate-authority-data": base64.StdEncoding.EncodeToString(k.CA)}}},
		"users":    []any{map[string]any{"name": kubeUser, "user": map[string]any{"token": k.Token}}},
		"contexts": []any{map[string]any{"name": "meridian-test", "context": map[string]any{"cluster": "meridian-test", "user": kubeUser}}},
	}
	data, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		panic(err) // maps of strings always encode
	}
	return data
}

// Get returns the body of the API server's answer to GET path (such as
// "/api/v1/namespaces/default/services/web"), failing the test unless it is 200 OK.
func (k *Kube) Get(t testing.TB, path string) []byte {
	t.Helper()
	return k.must(t, http.MethodGet, path, "", nil)
}

// Apply creates or updates obj (anything that encodes to a Kubernetes object in JSON, with
// apiVersion, kind and metadata.name, and metadata.namespace when it is namespaced) by
// server-side apply, and returns the object the server stored.
func (k *Kube) Apply(t testing.TB, obj any) []byte {
	t.Helper()
	return k.apply(t, obj, "")
}

// ApplyStatus applies obj's status to its status subresource, as a controller reporting it
// does, and returns the object the server stored.
func (k *Kube) ApplyStatus(t testing.TB, obj any) []byte {
	t.Helper()
	return k.apply(t, obj, "/status")
}

// apply sends obj to its path plus subresource as an apply patch, owned by the test.
func (k *Kube) apply(t testing.TB, obj any, subresource string) []byte {
	t.Helper()
	path, body := k.applyRequest(t, obj, subresource)
	return k.must(t, http.MethodPatch, path, "application/apply-patch+yaml", body)
}

// TryApply is Apply that returns the server's status and answer rather than failing the test
// when the server refuses obj: for tests that expect a refusal.
func (k *Kube) TryApply(t testing.TB, obj any) (int, []byte) {
	t.Helper()
	path, body := k.applyRequest(t, obj, "")
	status, out, err := k.do(http.MethodPatch, path, "application/apply-patch+yaml", body)
	if err != nil {
		t.Fatalf("kube apply %s: %v", path, err)
	}
	return status, out
}

// Served reports whether the server answers GET path with 200: for tests that wait for a
// resource (a custom resource's group version) to be served.
func (k *Kube) Served(path string) bool {
	status, _, err := k.do(http.MethodGet, path, "", nil)
	return err == nil && status == http.StatusOK
}

// applyRequest returns the path and body of the apply patch of obj's subresource.
func (k *Kube) applyRequest(t testing.TB, obj any, subresource string) (string, []byte) {
	t.Helper()
	body, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &head); err != nil || head.APIVersion == "" || head.Kind == "" || head.Metadata.Name == "" {
		t.Fatalf("apply: %s is not an object with apiVersion, kind and metadata.name (%v)", body, err)
	}
	path := k.resourcePath(t, head.APIVersion, head.Kind, head.Metadata.Namespace) + "/" + head.Metadata.Name + subresource
	return path + "?fieldManager=meridian-test&force=true", body
}

// resourcePath returns the collection path of kind in apiVersion ("/api/v1/namespaces/NS/services"),
// finding the kind's resource name in the group version's discovery document.
func (k *Kube) resourcePath(t testing.TB, apiVersion, kind, namespace string) string {
	t.Helper()
	base := "/apis/" + apiVersion
	if !strings.Contains(apiVersion, "/") { // the core group
		base = "/api/" + apiVersion
	}
	var list struct {
		Resources []struct {
			Name       string `json:"name"`
			Kind       string `json:"kind"`
			Namespaced bool   `json:"namespaced"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(k.Get(t, base), &list); err != nil {
		t.Fatalf("discovery %s: %v", base, err)
	}
	for _, r := range list.Resources {
		if r.Kind != kind || strings.Contains(r.Name, "/") { // not a subresource
			continue
		}
		if r.Namespaced {
			if namespace == "" {
				t.Fatalf("apply: %s %s is namespaced: the object needs metadata.namespace", apiVersion, kind)
			}
			return base + "/namespaces/" + namespace + "/" + r.Name
		}
		return base + "/" + r.Name
	}
	t.Fatalf("apply: the API server serves no kind %s in %s", kind, apiVersion)
	return ""
}

// must sends a request and returns the body of its answer, failing the test unless the status
// is 2xx.
func (k *Kube) must(t testing.TB, method, path, contentType string, body []byte) []byte {
	t.Helper()
	status, out, err := k.do(method, path, contentType, body)
	if err != nil {
		t.Fatalf("kube %s %s: %v", method, path, err)
	}
	if status/100 != 2 {
		t.Fatalf("kube %s %s: %d %s", method, path, status, out)
	}
	return out
}

// do sends a request with the admin token and returns the status and body of its answer.
func (k *Kube) do(method, path, contentType string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, k.URL+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+k.Token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// Stop ends the API server and then etcd. It may be called more than once.
func (k *Kube) Stop() {
	k.api.stop()
	k.etcd.stop()
}
