// Command kubebuild builds (or finds) the etcd and kube-apiserver binaries that
// testutil.StartKube runs, so that `make testbins` builds them once per machine, before the
// tests, rather than inside the first test that needs them.
package main

import (
	"fmt"
	"os"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

func main() {
	for _, binary := range []func() (string, error){testutil.EtcdBinary, testutil.KubeAPIServerBinary} {
		bin, err := binary()
		if err != nil {
			fmt.Fprintln(os.Stderr, "kubebuild:", err)
			os.Exit(1)
		}
		fmt.Println(bin)
	}
}
