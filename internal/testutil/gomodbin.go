package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// goModuleBinary is a tool the tests run, built from a Go module through the module proxy and
// cached per machine.
type goModuleBinary struct {
	envVar  string   // names an existing binary to use instead, when set
	name    string   // the binary's file name, and the cache directory's prefix
	module  string   // the module required at version
	version string   // the module's version
	pkg     string   // the main package built, within module
	ldflags string   // go build's -ldflags, as the release's own build sets them
	env     []string // added to the go commands' environment
}

// path returns the binary's path: $envVar when set, else the one cached under the user's cache
// directory, which it builds there first when it is missing. Builds of concurrent test
// processes wait for each other on a lock file.
func (g goModuleBinary) path() (string, error) {
	if bin := os.Getenv(g.envVar); bin != "" {
		return bin, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "meridian-test", g.name+"-"+g.version)
	bin := filepath.Join(dir, g.name)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	if _, err := os.Stat(bin); err == nil { // another process built it meanwhile
		return bin, nil
	}
	if err := g.build(dir, bin); err != nil {
		return "", fmt.Errorf("build %s %s: %w", g.module, g.version, err)
	}
	return bin, nil
}

// build builds the binary into bin, in a module of its own under dir that requires the release
// (a generated go.mod and a tools.go importing the main package).
func (g goModuleBinary) build(dir, bin string) error {
	src := filepath.Join(dir, "build")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	files := map[string]string{
		"go.mod":   "module meridian.test/" + g.name + "\n\ngo 1.26\n",
		"tools.go": "//go:build tools\n\npackage tools\n\nimport _ \"" + g.pkg + "\"\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	env := append(append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local"), g.env...)
	for _, args := range [][]string{
		{"get", g.module + "@" + g.version},
		{"build", "-trimpath", "-ldflags", g.ldflags, "-o", bin + ".tmp", g.pkg},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = src, env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go %s: %w\n%s", args[0], err, out)
		}
	}
	return os.Rename(bin+".tmp", bin)
}
