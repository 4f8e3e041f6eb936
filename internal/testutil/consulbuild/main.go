// Command consulbuild builds (or finds) the consul binary the tests run, so that `make test`
// builds it once, before the tests, rather than inside the first test that needs it.
package main

import (
	"fmt"
	"os"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

func main() {
	bin, err := testutil.ConsulBinary()
	if err != nil {
		fmt.Fprintln(os.Stderr, "consulbuild:", err)
		os.Exit(1)
	}
	fmt.Println(bin)
}
