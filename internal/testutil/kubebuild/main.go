// Command kubebuild builds (or finds) the Kubernetes programs the tests run, so that they are
// built once per machine, before the tests, rather than inside the first test that needs them:
// by default etcd and kube-apiserver (testutil.StartKube; `make testbins`), and with -cluster
// every component of a one-node cluster, kubectl and helm as well (testutil.StartCluster; `make
// test-k8s`).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

func main() {
	cluster := flag.Bool("cluster", false, "build every component of a one-node cluster, kubectl and helm too")
	flag.Parse()
	names := []string{"kube-apiserver"}
	if *cluster {
		names = testutil.KubeComponents
	}
	if err := build(names, *cluster); err != nil {
		fmt.Fprintln(os.Stderr, "kubebuild:", err)
		os.Exit(1)
	}
}

// build builds etcd and the components names, and helm when withHelm, printing their paths.
func build(names []string, withHelm bool) error {
	etcd, err := testutil.EtcdBinary()
	if err != nil {
		return err
	}
	fmt.Println(etcd)
	bins, err := testutil.KubeBinaries(names...)
	if err != nil {
		return err
	}
	for _, name := range names {
		fmt.Println(bins[name])
	}
	if withHelm {
		helm, err := testutil.HelmBinary()
		if err != nil {
			return err
		}
		fmt.Println(helm)
	}
	return nil
}
