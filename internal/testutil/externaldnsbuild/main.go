// Command externaldnsbuild builds (or finds) the external-dns binary the tests run, so that
// `make testbins` builds it once per machine, before the tests, rather than inside the first
// test that needs it.
package main

import (
	"fmt"
	"os"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

func main() {
	bin, err := testutil.ExternalDNSBinary()
	if err != nil {
		fmt.Fprintln(os.Stderr, "externaldnsbuild:", err)
		os.Exit(1)
	}
	fmt.Println(bin)
}
