package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestDocServerConfigs checks the DNS servers' configurations that docs/heartbeats.md shows,
// with the servers' own checkers: the ```named.conf block with named-checkconf, the
// ```knot.conf block with knotc conf-check (Debian's bind9 and knot; make deps installs them).
func TestDocServerConfigs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "heartbeats.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		fence, tool, pkg string
		args             func(path string) []string
	}{
		{"named.conf", "named-checkconf", "bind9", func(p string) []string { return []string{p} }},
		{"knot.conf", "knotc", "knot", func(p string) []string { return []string{"-c", p, "conf-check"} }},
	} {
		t.Run(tt.fence, func(t *testing.T) {
			tool := testutil.Sbin(t, tt.tool, tt.pkg)
			m := regexp.MustCompile("(?s)```" + regexp.QuoteMeta(tt.fence) + "\n(.*?)```").FindSubmatch(doc)
			if m == nil {
				t.Fatalf("docs/heartbeats.md has no ```%s block", tt.fence)
			}
			path := filepath.Join(t.TempDir(), tt.fence)
			if err := os.WriteFile(path, m[1], 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(tool, tt.args(path)...).CombinedOutput(); err != nil {
				t.Errorf("%s rejects the documented configuration: %v\n%s", tt.tool, err, out)
			}
		})
	}
}
