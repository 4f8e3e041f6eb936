package gslb

import (
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/meridian-gslb/meridian/"

// adapterImports are the only packages of ours that the adapter may import: the engine is the
// one wiring point, config gives the options it parses into, answer the response switches.
var adapterImports = []string{"internal/engine", "internal/config", "internal/answer"}

// TestHouseRules checks the import rules of docs/architecture.md: the adapter imports only the
// engine, config and answer of ours, and no internal package imports CoreDNS.
func TestHouseRules(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if ours, ok := strings.CutPrefix(imp, module); ok && !slices.Contains(adapterImports, ours) {
			t.Errorf("plugin/gslb imports %s: the adapter talks to the engine only", ours)
		}
	}
	root := filepath.Join("..", "..", "internal")
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		p, err := build.ImportDir(path, 0)
		if _, none := err.(*build.NoGoError); none {
			return nil
		} else if err != nil {
			return err
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, "github.com/coredns/") {
				t.Errorf("%s imports %s: internal packages do not know CoreDNS", path, imp)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
