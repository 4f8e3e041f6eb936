package gslbproxy

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/meridian-gslb/meridian/"

// adapterImports are the only packages of ours that the adapter may import: the gslb adapter
// for the shared syntax and engine opening, the engine, answer's options and the rewrite.
var adapterImports = []string{"plugin/gslb", "internal/engine", "internal/answer", "internal/proxy"}

// TestHouseRules checks the import rules of docs/architecture.md for the proxy adapter (the
// gslb plugin's TestHouseRules checks that no internal package, internal/proxy among them,
// imports CoreDNS).
func TestHouseRules(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if ours, ok := strings.CutPrefix(imp, module); ok && !slices.Contains(adapterImports, ours) {
			t.Errorf("plugin/gslbproxy imports %s: the adapter talks to the engine and the rewrite only", ours)
		}
	}
}
