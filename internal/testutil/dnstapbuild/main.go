// Command dnstapbuild builds (or finds) the Go dnstap tool the answer log's tests read with, so
// that `make test` builds it once, before the tests.
package main

import (
	"fmt"
	"os"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

func main() {
	bin, err := testutil.DnstapBinary()
	if err != nil {
		fmt.Fprintln(os.Stderr, "dnstapbuild:", err)
		os.Exit(1)
	}
	fmt.Println(bin)
}
