package testutil

import "os"

// EtcdVersion is the etcd release StartKube stores in, built from its Go module. It is the line
// KubeVersion's kubeadm installs (3.7). Debian 12's etcd-server, 3.4.23, is older than the
// oldest that release supports (kubeadm's MinExternalEtcdVersion, 3.5.24): kube-apiserver
// starts on it, but without RequestWatchProgress it refuses the streaming lists
// (sendInitialEvents) that client-go's informers send by default, and those fall back to plain
// LIST and WATCH, a path that a cluster of this release does not take.
const EtcdVersion = "v3.7.3"

// EtcdBinary returns the path of an etcd of EtcdVersion: $MERIDIAN_ETCD when set, else the one
// cached under the user's cache directory, which it builds there first when it is missing (a few
// minutes; `make testbins` does it before the tests). Builds of concurrent test processes wait
// for each other.
func EtcdBinary() (string, error) {
	if bin := os.Getenv("MERIDIAN_ETCD"); bin != "" {
		return bin, nil
	}
	return cachedBinary("etcd", EtcdVersion, buildEtcd)
}

// buildEtcd builds etcd, the main package of go.etcd.io/etcd/server/v3, into bin, in a module of
// its own under dir that requires the release; the etcd modules it needs (api, client, pkg) are
// published at the same version.
func buildEtcd(dir, bin string) error {
	const mod = "go.etcd.io/etcd/server/v3"
	gomod := "module meridian.test/etcd\n\ngo 1.26\n\nrequire " + mod + " " + EtcdVersion + "\n"
	return buildGoMain(dir, bin, mod, gomod, nil, "-trimpath", "-ldflags=-s -w")
}
