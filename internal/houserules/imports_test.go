package houserules

import (
	"bufio"
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/meridian-gslb/meridian/"

// root is the repository's top directory, from this package's.
var root = filepath.Join("..", "..")

// product is a package of the product (not a test helper), by its path from the module's root.
type product struct {
	path    string // "internal/engine", "plugin/gslb", "cmd/meridian"
	imports []string
}

// name is the package as the dependency table names it: without internal/.
func (p product) name() string { return strings.TrimPrefix(p.path, "internal/") }

// isTestHelper reports whether the package at path exists for tests only.
func isTestHelper(path string) bool {
	base := filepath.Base(path)
	return strings.Contains(path, "testutil") || strings.HasSuffix(base, "test") || strings.HasPrefix(path, "bench")
}

// products returns the product packages under internal, plugin, cmd and docs, with their imports of
// files that are not tests.
func products(t *testing.T) []product {
	t.Helper()
	var out []product
	for _, top := range []string{"internal", "plugin", "cmd", "docs"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(dir string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, dir)
			rel = filepath.ToSlash(rel)
			if isTestHelper(rel) {
				return filepath.SkipDir
			}
			p, err := build.ImportDir(dir, 0)
			if _, none := err.(*build.NoGoError); none {
				return nil
			} else if err != nil {
				return err
			}
			out = append(out, product{path: rel, imports: p.Imports})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// dependencyTable reads the table of docs/architecture.md under its marker: each package, as
// the table names it, and the packages of ours it may import.
func dependencyTable(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	table := map[string][]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.Contains(line, "<!-- dependency table -->"):
			in = true
		case !in || strings.HasPrefix(line, "|---") || strings.HasPrefix(line, "| package"):
		case !strings.HasPrefix(line, "|"):
			if len(table) > 0 {
				return table
			}
		default:
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) < 2 {
				t.Fatalf("docs/architecture.md: dependency table row %q has no imports cell", line)
			}
			pkg := strings.Trim(strings.TrimSpace(cells[0]), "`")
			var deps []string
			for _, d := range strings.Split(cells[1], ",") {
				if d = strings.Trim(strings.TrimSpace(d), "`"); d != "" && d != "—" {
					deps = append(deps, d)
				}
			}
			table[pkg] = deps
		}
	}
	if len(table) == 0 {
		t.Fatal("docs/architecture.md has no dependency table (its marker is <!-- dependency table -->)")
	}
	return table
}

// TestDependencyTable: every product package has its row in docs/architecture.md's dependency
// table, imports no package of ours that its row does not name, and the table names no package
// that does not exist. Go forbids cycles; the table keeps the direction.
func TestDependencyTable(t *testing.T) {
	table := dependencyTable(t)
	seen := map[string]bool{}
	for _, p := range products(t) {
		seen[p.name()] = true
		allowed, ok := table[p.name()]
		if !ok {
			t.Errorf("%s has no row in docs/architecture.md's dependency table", p.path)
			continue
		}
		var ours []string
		for _, imp := range p.imports {
			if rest, found := strings.CutPrefix(imp, module); found {
				ours = append(ours, strings.TrimPrefix(rest, "internal/"))
			}
		}
		for _, dep := range ours {
			if !slices.Contains(allowed, dep) {
				t.Errorf("%s imports %s, which its row of the dependency table does not name", p.path, dep)
			}
		}
		for _, dep := range allowed {
			if !slices.Contains(ours, dep) {
				t.Errorf("the dependency table says %s imports %s; it does not (remove it from the row)", p.path, dep)
			}
		}
	}
	var extra []string
	for pkg := range table {
		if !seen[pkg] {
			extra = append(extra, pkg)
		}
	}
	sort.Strings(extra)
	for _, pkg := range extra {
		t.Errorf("the dependency table names %s, which is no product package", pkg)
	}
}

// coreDNSPackages may import CoreDNS: the adapters and the binary.
var coreDNSPackages = []string{"plugin/gslb", "plugin/gslbproxy", "cmd/meridian"}

// TestOnlyTheAdaptersKnowCoreDNS: no internal package imports CoreDNS, and the adapter imports
// no package of ours but the engine, config and answer (and gslbproxy the proxy and the gslb
// adapter it shares).
func TestOnlyTheAdaptersKnowCoreDNS(t *testing.T) {
	for _, p := range products(t) {
		for _, imp := range p.imports {
			if strings.HasPrefix(imp, "github.com/coredns/") && !slices.Contains(coreDNSPackages, p.path) {
				t.Errorf("%s imports %s: only %v know CoreDNS", p.path, imp, coreDNSPackages)
			}
		}
	}
}
