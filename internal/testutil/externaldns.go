package testutil

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ExternalDNSVersion is the release of ExternalDNS (sigs.k8s.io/external-dns) the tests run,
// built from its Go module: the newest whose dependencies the Go module proxy serves (v0.22.0
// needs versions of github.com/exoscale/egoscale/v3 and github.com/openshift/api it refuses,
// v0.23.0 asks for Go 1.27).
const ExternalDNSVersion = "v0.21.0"

// ExternalDNSBinary returns the path of an external-dns binary of ExternalDNSVersion:
// $MERIDIAN_EXTERNAL_DNS when set, else the one cached under the user's cache directory, which
// it builds there first when it is missing, from its module through the Go module proxy (every
// provider's SDK is compiled in: about six and a half CPU-minutes, 2 GB of memory at most;
// `make testbins` does it before the tests). Builds of concurrent test processes wait for each
// other.
func ExternalDNSBinary() (string, error) {
	if bin := os.Getenv("MERIDIAN_EXTERNAL_DNS"); bin != "" {
		return bin, nil
	}
	return cachedBinary("external-dns", ExternalDNSVersion, func(dir, bin string) error {
		gomod := "module meridian.test/external-dns\n\ngo 1.26\n\nrequire sigs.k8s.io/external-dns " + ExternalDNSVersion + "\n"
		return buildGoMain(dir, bin, "sigs.k8s.io/external-dns", gomod, nil, "-trimpath", "-ldflags=-s -w")
	})
}

// InstallDNSEndpointCRD installs ExternalDNS's DNSEndpoint CRD (externaldns.k8s.io/v1alpha1)
// from its module at ExternalDNSVersion (config/crd/standard) into k, and waits until the
// server serves it.
func InstallDNSEndpointCRD(t testing.TB, k *Kube) {
	t.Helper()
	dir, err := moduleDir("sigs.k8s.io/external-dns", ExternalDNSVersion)
	if err != nil {
		t.Fatalf("ExternalDNS %s: %v", ExternalDNSVersion, err)
	}
	names := installCRDs(t, k, dir+"/config/crd/standard", func(c crd) bool { return c.Metadata.Name == "dnsendpoints.externaldns.k8s.io" })
	if len(names) != 1 {
		t.Fatalf("ExternalDNS %s defines no CRD dnsendpoints.externaldns.k8s.io", ExternalDNSVersion)
	}
}

// ExternalDNS is a running external-dns: its crd source watches the DNSEndpoints of a real API
// server, and its rfc2136 provider writes them, signed with a TSIG key, into a zone of an
// UpdateServer (BIND). It stops when the test ends.
type ExternalDNS struct {
	proc *process
}

// StartExternalDNS starts external-dns against the API server of kubeconfig, reading the
// DNSEndpoints of namespace and writing the records of types (NS, A, AAAA, ...) under zone into
// the server srv by RFC 2136 with key, listing them by AXFR, each interval; owner is its TXT
// registry's owner id.
func StartExternalDNS(t testing.TB, kubeconfig, namespace string, srv *UpdateServer, key TSIGKey, zone, owner string, interval time.Duration, types ...string) *ExternalDNS {
	t.Helper()
	bin, err := ExternalDNSBinary()
	if err != nil {
		t.Fatalf("external-dns: %v", err)
	}
	host, port, ok := strings.Cut(srv.Addr, ":")
	if !ok {
		t.Fatalf("external-dns: the server's address %q has no port", srv.Addr)
	}
	args := []string{"--source=crd", "--crd-source-apiversion=externaldns.k8s.io/v1alpha1", "--crd-source-kind=DNSEndpoint",
		"--kubeconfig=" + kubeconfig, "--namespace=" + namespace,
		"--provider=rfc2136", "--rfc2136-host=" + host, "--rfc2136-port=" + port, "--rfc2136-zone=" + strings.TrimSuffix(zone, "."),
		"--rfc2136-tsig-keyname=" + strings.TrimSuffix(key.Name, "."), "--rfc2136-tsig-secret=" + key.Secret,
		"--rfc2136-tsig-secret-alg=" + tsigAlgorithm(key), "--rfc2136-tsig-axfr",
		"--domain-filter=" + strings.TrimSuffix(zone, "."), "--policy=sync", "--registry=txt", "--txt-owner-id=" + owner,
		"--interval=" + interval.String(), "--events", "--min-event-sync-interval=" + interval.String(), "--log-level=debug",
		"--metrics-address=127.0.0.1:" + strconv.Itoa(FreePort(t))}
	for _, typ := range types {
		args = append(args, "--managed-record-types="+typ)
	}
	cmd := exec.Command(bin, args...)
	return &ExternalDNS{proc: startProcess(t, cmd)}
}

// Logs returns what external-dns wrote so far.
func (e *ExternalDNS) Logs() string { return e.proc.logs.String() }

// Stop ends external-dns. It may be called more than once.
func (e *ExternalDNS) Stop() { e.proc.stop() }
