package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// cachedBinary returns the path of the program name at version in the user's cache directory
// (meridian-test/NAME-VERSION/NAME), calling build(dir, tmp) first when it is missing: build
// writes the program to tmp and may use dir for its sources; tmp is renamed into place only once
// the build succeeded. Builds of concurrent test processes wait for each other on a lock file.
func cachedBinary(name, version string, build func(dir, tmp string) error) (string, error) {
	bins, err := cachedBinaries(name+"-"+version, []string{name}, func(dir string, _ []string, out string) error {
		return build(dir, filepath.Join(out, name))
	})
	return bins[name], err
}

// cachedBinaries returns the paths of the programs names in the user's cache directory
// (meridian-test/SET/NAME), calling build(dir, missing, out) first when some are missing: build
// writes each program of missing to out/NAME and may use dir for its sources and caches; each is
// moved into place only once the build succeeded. Builds of concurrent test processes wait for
// each other on a lock file of the set.
func cachedBinaries(set string, names []string, build func(dir string, missing []string, out string) error) (map[string]string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cache, "meridian-test", set)
	bins := map[string]string{}
	missing := func() []string {
		var m []string
		for _, name := range names {
			bins[name] = filepath.Join(dir, name)
			if _, err := os.Stat(bins[name]); err != nil {
				m = append(m, name)
			}
		}
		return m
	}
	if len(missing()) == 0 {
		return bins, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	todo := missing() // another process may have built some meanwhile
	if len(todo) == 0 {
		return bins, nil
	}
	out, err := os.MkdirTemp(dir, "out-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(out)
	if err := build(dir, todo, out); err != nil {
		return nil, fmt.Errorf("build %s (%s): %w", set, strings.Join(todo, ", "), err)
	}
	for _, name := range todo {
		if err := os.Rename(filepath.Join(out, name), bins[name]); err != nil {
			return nil, err
		}
	}
	return bins, nil
}

// buildGoMain builds the main package pkg into bin with the go command's extra flags, from a
// module of its own in dir/build whose go.mod is gomod (a module requiring the release that
// holds pkg), with extra environment env.
//
// The build uses a build cache of its own, dir/gocache, removed once it ends: the programs are
// built once per machine, and their objects (gigabytes for kube-apiserver and consul) would
// otherwise stay in the user's build cache beside the test binaries of the run that follows, on
// machines whose disk may be small.
func buildGoMain(dir, bin, pkg, gomod string, env []string, flags ...string) error {
	src, err := goModuleDir(dir, map[string]string{
		"go.mod":   gomod,
		"tools.go": "//go:build tools\n\npackage tools\n\nimport _ \"" + pkg + "\"\n",
	})
	if err != nil {
		return err
	}
	cache := filepath.Join(dir, "gocache")
	defer os.RemoveAll(cache)
	env = append(slices.Clip(env), "GOCACHE="+cache)
	_, err = runGo(src, env, append(append([]string{"build"}, flags...), "-o", bin, pkg)...)
	return err
}

// goModuleDir creates dir/build, a module of its own for building a program from the Go module
// proxy, holding files (name: content), and returns its path.
func goModuleDir(dir string, files map[string]string) (string, error) {
	src := filepath.Join(dir, "build")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	return src, nil
}

// runGo runs the go command with args in the module src, with the local toolchain, module
// resolution allowed to update go.mod, and extra environment, and returns its output.
func runGo(src string, extraEnv []string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = src
	cmd.Env = append(append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local"), extraEnv...)
	out, err := cmd.Output()
	if err != nil {
		if exit, ok := err.(*exec.ExitError); ok {
			return nil, fmt.Errorf("go %s: %w\n%s", args[0], err, exit.Stderr)
		}
		return nil, fmt.Errorf("go %s: %w", args[0], err)
	}
	return out, nil
}
