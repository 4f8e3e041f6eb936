// Command helmbuild builds (or finds) the helm binary the tests render the chart with, so that
// `make test` builds it once, before the tests, rather than inside the first test that needs it.
package main

import (
	"fmt"
	"os"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

func main() {
	bin, err := testutil.HelmBinary()
	if err != nil {
		fmt.Fprintln(os.Stderr, "helmbuild:", err)
		os.Exit(1)
	}
	fmt.Println(bin)
}
